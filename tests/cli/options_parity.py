"""The CLI column of the option parity table (tests/operations/options.json): `pidguard status`
(--tolerance, --cmd-file, the argv after --) and `pidguard stop` (--retry, --tolerance) give the
same answer or the same error kind as Rust, C, Python and Node, whose tests run the same table.
Bad input is exit 4 (core's ExitCode for InvalidArgument). A case the CLI cannot express (a null
tolerance) is skipped with the reason. Usage: options_parity.py PIDGUARD_BINARY."""

import json
import re
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PG = sys.argv[1]
TABLE = json.loads((Path(__file__).resolve().parents[1] / "operations" / "options.json").read_text())
BAD_INPUT = 4


def create_time(pid_file):
    out = subprocess.run([PG, "status", str(pid_file), "--json"], capture_output=True, text=True).stdout
    return json.loads(out)["create_time"]


def run_case(case, d):
    args = []
    if "tolerance" in case:
        if case["tolerance"] is None:
            return "skip: the CLI has no null tolerance (an absent --tolerance is the default)"
        args += ["--tolerance", repr(case["tolerance"])]
    if case["op"] == "check":
        p = subprocess.Popen(["sleep", "1000"], start_new_session=True)
        try:
            deadline = time.monotonic() + 30
            while Path(f"/proc/{p.pid}/cmdline").read_bytes() != b"sleep\x001000\x00":
                assert time.monotonic() < deadline, "sleep never finished its exec"
                time.sleep(0.005)
            pf = d / "on_x.pid"
            pf.write_text(str(p.pid))
            ct = create_time(pf) + case["skew"]
            os.utime(pf, (ct, ct))
            rec = case.get("recorded", {})
            sh = d / "on_x.sh"
            if sh.exists():
                sh.unlink()
            if "sh" in rec:
                sh.write_text(f"#!/bin/bash\n{rec['sh']}\n")
                args += ["--cmd-file", str(sh)]
            if rec.get("argv"):
                args += ["--", *rec["argv"]]
            r = subprocess.run([PG, "status", str(pf), "--json", *args], capture_output=True, text=True)
            if r.returncode == BAD_INPUT:
                return {"error": "invalid-argument"}
            return {"reason": json.loads(r.stdout)["reason"]}
        finally:
            p.kill()
            p.wait()
    if case["op"] == "stop":
        if "schedule" in case:
            args += ["--schedule", case["schedule"]]
        if "policy" in case:
            args += ["--policy", case["policy"]]
        if case.get("group") is False:
            args += ["--no-group"]
        r = subprocess.run([PG, "stop", str(d / "absent.pid"), "--oknodo", *args], capture_output=True, text=True)
        if r.returncode == BAD_INPUT:
            return {"error": "invalid-argument"}
        return {"ok": True} if r.returncode == 0 else {"exit": r.returncode, "stderr": r.stderr}
    raise AssertionError(f"unknown op {case['op']}")


def missing_flags():
    """The CLI column of the table's option names: every option of core's StopOptions and
    CleanupOptions (and every old spelling kept as an alias) is a flag of `pidguard stop` /
    `pidguard cleanup`, as their --help lists them; an option the CLI has not must say why."""
    missing = []
    fields = TABLE["fields"]
    for op in ("stop", "cleanup"):
        flags = set(re.findall(r"--[a-z][a-z-]*", subprocess.run([PG, op, "--help"], capture_output=True, text=True).stdout))
        for name, row in fields[op].items():
            if row["cli"] is None:
                if not row.get("why", {}).get("cli"):
                    missing.append(f"{op} {name}: no flag and no why")
            elif row["cli"] not in flags:
                missing.append(f"{op} {name}: {row['cli']}")
        missing += [f"{op} alias {a}" for a in fields["aliases"]["cli"].get(op, {}) if a not in flags]
    return missing


failed = skipped = passed = 0
for m in missing_flags():
    failed += 1
    print(f"FAIL option flag missing: {m}")
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
print(f"options (cli): {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed < 15 else 0)
