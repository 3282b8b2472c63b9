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
        for k in ("schedule", "policy", "group"):
            if k in case:
                kw[k] = case[k]
        return answer(lambda: pidguard.stop_pid_file(tmp_path / "absent.pid", **kw) and {"ok": True})
    raise AssertionError(f"unknown op {case['op']}")


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_option_case_gives_the_tables_answer(case, tmp_path):
    assert run_case(case, tmp_path) == case["expect"]


@pytest.mark.parametrize("op,func", [("stop", "stop_pid_file"), ("cleanup", "cleanup_background_hooks")])
def test_every_option_of_the_table_is_a_keyword_argument(op, func):
    """The Python column of the table's option names: every option of core's StopOptions and
    CleanupOptions is a keyword argument of the function, in the signature and in the stub (seen
    failing with no_finalize missing from cleanup_background_hooks)."""
    import inspect

    want = {row["python"] for row in TABLE["fields"][op].values() if row.get("python")}
    assert want, f"no Python names for {op}"
    params = set(inspect.signature(getattr(pidguard, func)).parameters)
    assert want <= params, f"{func} lacks {sorted(want - params)}"
    stub = (Path(pidguard.__file__).parent / "_pidguard.pyi").read_text()
    body = stub[stub.index(f"def {func}("):]
    body = body[: body.index(") ->")]
    missing = sorted(n for n in want if f"{n}:" not in body)
    assert not missing, f"the stub of {func} lacks {missing}"


def test_cleanup_no_finalize_keeps_the_logs(tmp_path):
    """no_finalize=True: a stale hook's pidfile is removed, no index line is written and its
    logs are kept (the default finalize would append the lines)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "on_x.pid").write_text("4194304")
    (hook / "on_x.stdout.log").write_text("out")
    index = tmp_path / "index.jsonl"
    reports = pidguard.cleanup_background_hooks(tmp_path, index, True, no_finalize=True)
    assert len(reports) == 1
    assert not index.exists() or index.read_text() == ""
    assert (hook / "on_x.stdout.log").exists()
    # The same without no_finalize writes the index lines: the option is what kept them out.
    (hook / "on_x.pid").write_text("4194304")
    pidguard.cleanup_background_hooks(tmp_path, index, True)
    assert index.read_text().count("\n") >= 1
