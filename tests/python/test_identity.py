"""lookup / start_token against psutil, for every process on the machine both can read."""

import os

import psutil
import pytest

import pidguard


def test_create_time_equals_psutil_for_every_process():
    compared = 0
    for pid in psutil.pids():
        try:
            expected = psutil.Process(pid).create_time()
            info = pidguard.lookup(pid)
            again = psutil.Process(pid).create_time()
        except (psutil.Error, pidguard.NoSuchProcessError):
            continue  # exited meanwhile (or unreadable to one of the two)
        if expected != again:
            continue  # the pid was reused between the two reads
        assert info.pid == pid
        assert info.create_time == expected, (pid, info.name)
        compared += 1
    assert compared >= 3, "too few processes compared"


def test_lookup_fields_agree_with_psutil():
    me = psutil.Process()
    info = pidguard.lookup(os.getpid())
    assert info.ppid == os.getppid() == me.ppid()
    assert info.pgid == os.getpgrp()
    assert info.sid == os.getsid(0)
    assert info.uid == os.getuid()
    assert info.state in ("R", "S")
    assert info.name == me.name()
    assert info.argv == me.cmdline()
    assert str(info.exe) == me.exe()
    assert not info.is_zombie
    assert info.token == pidguard.start_token(os.getpid())


def test_token_format():
    token = pidguard.start_token(os.getpid())
    parts = token.split(":")
    assert parts[0] == "linux1" and len(parts) == 6
    assert parts[2] == open("/proc/sys/kernel/random/boot_id").read().strip()
    assert int(parts[3]) == os.stat("/proc/self/ns/pid").st_ino
    with open(f"/proc/{os.getpid()}/stat", "rb") as f:
        stat = f.read()
    assert int(parts[4]) == int(stat[stat.rindex(b")") + 2 :].split()[19])
    assert parts[5] == "-" or parts[5].isdigit()
    assert token.isascii() and token.isprintable()


def test_gone_process_raises_process_lookup_error(spawn):
    p = spawn.popen(["true"])
    p.wait()
    with pytest.raises(ProcessLookupError) as e:
        pidguard.start_token(p.pid)
    assert isinstance(e.value, pidguard.NoSuchProcessError)
    assert e.value.errno == 3 and e.value.pid == p.pid
    with pytest.raises(pidguard.NoSuchProcessError):
        pidguard.lookup(p.pid)


def test_zombie_is_looked_up_but_has_no_token(spawn):
    from conftest import proc_state, wait_until

    p = spawn.popen(["true"])
    assert wait_until(lambda: proc_state(p.pid) == "Z")
    info = pidguard.lookup(p.pid)
    assert info.is_zombie and info.state == "Z"
    with pytest.raises(pidguard.NoSuchProcessError):
        pidguard.start_token(p.pid)
