"""abx-dl's own process code, without and with pidguard.abx_dl swapped in.

Each scenario of scenarios.py runs twice in a fresh interpreter: abx-dl as released, then with
``sys.modules["abx_dl.process_utils"] = pidguard.abx_dl``. The two must observe the same thing,
except where pidguard is documented to do better (pidguard/abx_dl.py, docs/python.md "Using pidguard in
abx-dl"); those differences are asserted exactly. Run by scripts/test-abx-dl.sh inside a private
PID namespace and a loopback-only network namespace.
"""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TABLE = []  # (scenario, key, without, with) for the summary


def scenario(name, swap):
    env = dict(os.environ, PIDGUARD_SWAP="1" if swap else "0")
    r = subprocess.run(
        [sys.executable, str(HERE / "scenarios.py"), name], capture_output=True, text=True, env=env, timeout=300
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out.pop("swapped") is swap
    out.pop("bus_idle_error", None)
    return out


def both(name):
    without, with_ = scenario(name, False), scenario(name, True)
    if "skipped" in without or "skipped" in with_:
        pytest.skip(without.get("skipped") or with_.get("skipped"))
    for k in sorted(set(without) | set(with_)):
        TABLE.append((name, k, without.get(k), with_.get(k)))
    return without, with_


def same_except(without, with_, better):
    """Equal everywhere but the keys pidguard is documented to do better on."""
    for k in set(without) | set(with_):
        if k not in better:
            assert without.get(k) == with_.get(k), (k, without.get(k), with_.get(k))
    for k, (orig, ours) in better.items():
        assert (without.get(k), with_.get(k)) == (orig, ours), k


def test_public_names_are_process_utils_names():
    import abx_dl.process_utils as orig
    import pidguard.abx_dl as ours

    def public(m):
        return {
            n
            for n, v in vars(m).items()
            if not n.startswith("_") and not inspect.ismodule(v) and getattr(v, "__module__", m.__name__) == m.__name__
        }

    assert public(orig) == {
        "GRACEFUL_SHUTDOWN_TIMEOUT",
        "validate_pid_file",
        "write_pid_file_with_mtime",
        "is_process_alive",
        "graceful_kill_process",
        "graceful_kill_by_pid_file",
    }
    assert public(orig) <= set(ours.__all__)
    assert set(ours.__all__) - public(orig) == {"write_cmd_file", "safe_kill_process", "cleanup_background_hooks"}
    for n in public(orig):
        a, b = getattr(orig, n), getattr(ours, n)
        if callable(a):
            pa, pb = inspect.signature(a).parameters, inspect.signature(b).parameters
            assert [(p.name, p.kind) for p in pa.values()] == [(p.name, p.kind) for p in pb.values()], n
            assert inspect.iscoroutinefunction(a) == inspect.iscoroutinefunction(b), n
        else:
            assert a == b
    # abx-dl's process service also imports this private helper.
    assert callable(orig._send_signal) and callable(ours._send_signal)


def test_chrome_node_hook_through_its_shebang():
    without, with_ = both("chrome_node_hook")
    same_except(without, with_, {})
    assert with_["valid"] is True and with_["tokenless_valid"] is True and with_["by_pid_file_signalled"] is True
    assert with_["returncode"] == with_["stopped_returncode"] == -15 and with_["group_left"] == 0
    if not with_["node"]:
        pytest.skip("node is not installed: the hook ran through a /bin/sh shebang instead")
    assert with_["live_argv0"] == "node"


def test_url_naming_chrome():
    without, with_ = both("url_naming_chrome")
    same_except(without, with_, {})
    assert with_ == {"valid": True, "by_pid_file_signalled": True, "returncode": -15}


def test_argv_list_record():
    without, with_ = both("argv_list_record")
    # With pidguard's start token the record names exactly the hook's process: asked with
    # another hook's argv, the token still decides (documented). Without a token (a record the
    # original wrote) the argv rules decide, as in the original.
    same_except(without, with_, {"other_hook": (False, True)})
    assert with_["own_argv"] and with_["empty_argv"] and with_["interpreter_form"]
    assert with_["tokenless_own_argv"] is True and with_["tokenless_other_hook"] is False


def test_pid_reused_by_a_retry_of_the_same_hook_is_not_killed():
    without, with_ = both("pid_reused_by_retry")
    assert without["reused"] and with_["reused"] and without["retry_same_argv"] and with_["retry_same_argv"]
    # The original's mtime and argv rules pass for the retry (same argv, started within 5 s):
    # it kills the retry and keeps the stale record. pidguard's token proves another process.
    same_except(
        without,
        with_,
        {"by_pid_file_signalled": (True, False), "retry_alive": (False, True), "record_removed": (False, True)},
    )


def test_term_ignoring_hook():
    without, with_ = both("term_ignoring_hook")
    same_except(without, with_, {})
    assert with_ == {"returncode": -9, "waited_grace_period": True, "loop_ticked": True, "group_left": 0}


def test_grace_period_respected():
    without, with_ = both("grace_period_respected")
    same_except(without, with_, {})
    assert with_ == {"process_long": 0, "pid_file_long": [True, 0], "process_short": -9, "pid_file_short": [True, -9]}


def test_leader_exits_leaving_children():
    without, with_ = both("leader_exits_leaving_children")
    assert without["child_trapped"] and with_["child_trapped"]
    assert without["members_before"] == with_["members_before"] == 2  # the leader and its child
    # The original returns when the leader exits and leaves the TERM-ignoring child (and its
    # sleep) running; pidguard SIGKILLs the rest of the group when the grace period ends.
    assert without["group_left"] >= 1
    same_except(without, with_, {"group_left": (without["group_left"], 0)})


@pytest.fixture(scope="module", autouse=True)
def lifecycle_table(request):
    """Not a test: after the module's tests, print the table of every lifecycle without and with
    pidguard.abx_dl, with output capture suspended."""
    yield
    with request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        print("\n\nabx-dl 1.13.273 lifecycles: without | with pidguard.abx_dl")
        for name, k, a, b in TABLE:
            mark = "" if a == b else "   <- differs (documented)"
            print(f"  {name:32} {k:24} {json.dumps(a):>14} | {json.dumps(b):<14}{mark}")
