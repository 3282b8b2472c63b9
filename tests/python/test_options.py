"""The Python column of the option parity table (tests/operations/options.json): the
tolerance, the recorded command (a `.sh` path or an argv list) and the schedule give the same
answer or the same error kind here as in Rust, C, Node and the CLI, whose tests run the same
table. A case Python cannot express is skipped with the reason."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import pidguard

TABLE = json.loads((Path(__file__).resolve().parents[1] / "operations" / "options.json").read_text())
ABSENT = object()


def write_tokenless(pid_file, pid, skew):
    """A token-less abx-dl pidfile: the pid as content, mtime = create time + skew."""
    ct = pidguard.lookup(pid).create_time + skew
    Path(pid_file).write_text(str(pid))
    os.utime(pid_file, (ct, ct))


def answer(call):
    try:
        return call()
    except pidguard.PidguardError as e:
        return {"error": e.kind}


def run_case(case, tmp_path):
    tolerance = case.get("tolerance", ABSENT)
    kw = {} if tolerance is ABSENT else {"tolerance": tolerance}
    if case["op"] == "check":
        rec = case.get("recorded", {})
        if "sh" in rec and "argv" in rec:
            pytest.skip("Python takes the recorded command as one argument: a .sh path or an argv list")
        p = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while Path(f"/proc/{p.pid}/cmdline").read_bytes() != b"sleep\x001000\x00":
                assert time.monotonic() < deadline, "sleep never finished its exec"
                time.sleep(0.005)
            pf = tmp_path / "on_x.pid"
            write_tokenless(pf, p.pid, case["skew"])
            recorded = None
            if "sh" in rec:
                recorded = tmp_path / "on_x.sh"
                recorded.write_text(f"#!/bin/bash\n{rec['sh']}\n")
            elif "argv" in rec:
                recorded = list(rec["argv"])
            got = answer(lambda: {"reason": pidguard.check_pid_file(pf, recorded, **kw).reason})
            # validate_pid_file is the same check with the bool shape.
            valid = answer(lambda: pidguard.validate_pid_file(pf, recorded, **kw))
            assert valid == (got == {"reason": "valid"}) or "error" in got
            return got
        finally:
            p.kill()
            p.wait()
    if case["op"] == "stop":
        if "schedule" in case:
            kw["schedule"] = case["schedule"]
        return answer(lambda: pidguard.stop_pid_file(tmp_path / "absent.pid", **kw) and {"ok": True})
    raise AssertionError(f"unknown op {case['op']}")


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_option_case_gives_the_tables_answer(case, tmp_path):
    assert run_case(case, tmp_path) == case["expect"]
