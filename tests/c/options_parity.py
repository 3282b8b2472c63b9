"""Drive tests/c/options.c over the option parity table (tests/operations/options.json): set
every case up (a live `sleep 1000`, a token-less pidfile whose mtime is the process's create
time + skew, computed as psutil does: boot time + start ticks / CLK_TCK; the `.sh` file), run
the C program once per case, compare with the table. A case C cannot express (a null tolerance)
is skipped with the reason. Usage: options_parity.py PROGRAM."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROGRAM = sys.argv[1]
TABLE = json.loads((Path(__file__).resolve().parents[1] / "operations" / "options.json").read_text())


def create_time(pid):
    stat = Path(f"/proc/{pid}/stat").read_text()
    ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
    btime = next(int(l.split()[1]) for l in Path("/proc/stat").read_text().splitlines() if l.startswith("btime "))
    return btime + ticks / os.sysconf("SC_CLK_TCK")


def parse(out):
    word, _, rest = out.strip().partition(" ")
    if word == "reason":
        return {"reason": rest}
    if word == "ok":
        return {"ok": True}
    return {"error": rest.replace(" ", "-")}


def run_case(case, d):
    if "tolerance" in case and case["tolerance"] is None:
        return "skip: C has no null tolerance (has_tolerance = false is the default)"
    tol = repr(case["tolerance"]) if "tolerance" in case else "-"
    if case["op"] == "check":
        p = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while Path(f"/proc/{p.pid}/cmdline").read_bytes() != b"sleep\x001000\x00":
                assert time.monotonic() < deadline, "sleep never finished its exec"
                time.sleep(0.005)
            pf = d / "on_x.pid"
            pf.write_text(str(p.pid))
            ct = create_time(p.pid) + case["skew"]
            os.utime(pf, (ct, ct))
            rec = case.get("recorded", {})
            sh = "-"
            if "sh" in rec:
                sh = str(d / "on_x.sh")
                Path(sh).write_text(f"#!/bin/bash\n{rec['sh']}\n")
            args = [PROGRAM, "check", str(pf), sh, tol]
            if "argv" in rec:
                args += ["--argv", *rec["argv"]]
            return parse(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
        finally:
            p.kill()
            p.wait()
    if case["op"] == "stop":
        # C's policy is an enum: an unknown name is a number that is neither (99).
        policy = {"strict": "0", "lenient": "1"}.get(case.get("policy", "strict"), "99")
        group = "0" if case.get("group") is False else "1"
        args = [PROGRAM, "stop", str(d / "absent.pid"), case.get("schedule", "-"), tol, policy, group]
        return parse(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    raise AssertionError(f"unknown op {case['op']}")


failed = skipped = passed = 0
with tempfile.TemporaryDirectory() as t:
    for case in TABLE["cases"]:
        got = run_case(case, Path(t))
        if isinstance(got, str):
            skipped += 1
            print(f"  {case['name']}: {got}")
        elif got == case["expect"]:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {case['name']}: expected {case['expect']}, got {got}")
print(f"options (c): {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed < 15 else 0)
