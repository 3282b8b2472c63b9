"""The Python runner of the shared conformance vectors (tests/vectors/*.json; schema in
tests/vectors/README.md).

Every case is set up on real processes by the shared fixture (core/examples/vector_fixture.rs,
built by cargo); the call goes through this binding (``import pidguard``); the answer is
normalised exactly as the other three runners normalise theirs and compared with the case's
``expect``. Prints ``vectors (python): N passed, N failed, N skipped``.

scripts/test-python.sh runs this file inside a private PID namespace (tests/vectors/in-pidns.sh),
where the pid-reuse cases can force a pid onto a bystander; elsewhere those cases are skipped.
"""

import json
import os
import subprocess
from pathlib import Path

import pidguard
from pidguard import guard

REPO = Path(__file__).resolve().parent.parent.parent


def fixture_path():
    """The fixture binary cargo built (PIDGUARD_VECTOR_FIXTURE overrides)."""
    if os.environ.get("PIDGUARD_VECTOR_FIXTURE"):
        return os.environ["PIDGUARD_VECTOR_FIXTURE"]
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    path = target / "debug" / "examples" / "vector_fixture"
    if not path.exists():
        subprocess.run(["cargo", "build", "-q", "-p", "pidguard-core", "--example", "vector_fixture"], cwd=REPO, check=True)
    return str(path)


class Fixture:
    def __init__(self):
        self.proc = subprocess.Popen(
            [fixture_path(), "serve", "--vectors", str(REPO / "tests" / "vectors"), "--caller", str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, request):
        self.proc.stdin.write(request + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def error_slug(exc):
    """The error-kind slug of an exception: PidguardError.kind; a plain ValueError (the binding's
    own range check, made before core is called) counts as invalid-argument."""
    if isinstance(exc, pidguard.PidguardError):
        return exc.kind
    if isinstance(exc, ValueError):
        return "invalid-argument"
    raise exc


def terminate(s):
    try:
        r = pidguard.terminate(s["pid"], s["token"], policy=s["policy"], schedule=s["schedule"])
    except pidguard.RefusedError as e:
        return {"outcome": "refused", "refusal": e.refusal}
    except pidguard.NoSuchProcessError:
        return {"outcome": "already-gone"}
    except (pidguard.PidguardError, ValueError) as e:
        return {"error": error_slug(e)}
    out = {"outcome": r.outcome, "elapsed": r.elapsed}
    if r.outcome == "exited":
        out["after"] = r.after
    if r.outcome == "refused":
        out["refusal"] = r.refusal
    return out


def call(s):
    """Make the case's call through the binding; the answer as the other runners give it."""
    fn, pid_file, cmd_file, tol = s["call"], s["pid_file"], s["cmd_file"], s["tolerance"]
    if fn == "validate":
        try:
            return {"valid": pidguard.validate_pid_file(pid_file, cmd_file, tol)}
        except (pidguard.PidguardError, ValueError) as exc:
            return {"error": error_slug(exc)}
    if fn == "check":
        try:
            c = pidguard.check_pid_file(pid_file, cmd_file, tol)
        except (pidguard.PidguardError, ValueError) as exc:
            return {"error": error_slug(exc)}
        return {"valid": c.valid, "reason": c.reason, "pid": c.pid, "verdict": c.verdict, "verdict_reason": c.verdict_reason}
    if fn == "guard_read":
        try:
            e = guard.read(pid_file)
        except (pidguard.PidguardError, ValueError) as exc:
            return {"error": error_slug(exc)}
        return {"pid": e.pid, "start_token": e.start_token}
    if fn == "guard_check":
        try:
            v = guard.check(pid_file)
        except (pidguard.PidguardError, ValueError) as exc:
            return {"error": error_slug(exc)}
        return {"found": v.found, "pid": v.entry.pid if v.entry else None, "verdict": v.identity, "verdict_reason": v.reason}
    if fn == "guard_create":
        try:
            guard.create(pid_file, guard.Entry(s["pid"], s["token"] or ""))
        except (pidguard.PidguardError, ValueError) as exc:
            return {"error": error_slug(exc)}
        return {"error": None}
    if fn == "write":
        try:
            pidguard.write_pid_file_with_mtime(pid_file, s["pid"], float(s["start_time"]))
        except (pidguard.PidguardError, ValueError) as exc:
            return {"error": error_slug(exc)}
        return {"error": None}
    if fn == "terminate":
        return terminate(s)
    if fn == "cleanup":
        try:
            reports = pidguard.cleanup_background_hooks(s["dir"], None, True, schedule=s["schedule"], tolerance=tol)
        except (pidguard.PidguardError, ValueError) as exc:
            return {"error": error_slug(exc)}
        for r in reports:
            if str(r.pid_file) == pid_file:
                return {"outcome": r.outcome, "reason": r.reason, "pid_file_removed": r.pid_file_removed, "refusal": r.refusal}
        return {"outcome": "not-reported"}
    raise AssertionError(f"unknown call {fn}")


def compare(expect, actual):
    """Each expected key must be equal, or one of the values of an expected list;
    elapsed_below bounds actual elapsed (seconds)."""
    bad = []
    for k, want in expect.items():
        if k == "elapsed_below":
            e = actual.get("elapsed")
            if e is None or not e < want:
                bad.append(f"elapsed: want < {want}, got {e}")
            continue
        got = actual.get(k)
        ok = got in want if isinstance(want, list) else got == want
        # bool is an int in Python: True must not equal 1.
        if ok and not isinstance(want, list) and isinstance(want, bool) != isinstance(got, bool):
            ok = False
        if not ok:
            bad.append(f"{k}: want {json.dumps(want)}, got {json.dumps(got)}")
    return bad


def test_vectors(capsys):
    fx = Fixture()
    passed = failed = skipped = 0
    lines = []
    try:
        for name in fx.ask("list")["cases"]:
            s = fx.ask(f"setup {name}")
            if s.get("skip"):
                fx.ask(f"finish {name}")
                skipped += 1
                lines.append(f"skip {name}: {s['skip']}")
                continue
            old = os.umask(s["umask"]) if s.get("umask") is not None else None
            try:
                actual = call(s)
            finally:
                if old is not None:
                    os.umask(old)
            actual.update(fx.ask(f"finish {name}")["post"])
            bad = compare(s["expect"], actual)
            if bad:
                failed += 1
                lines.append(f"FAIL {name}: {'; '.join(bad)}  (answer {json.dumps(actual)})")
            else:
                passed += 1
    finally:
        fx.close()
    summary = f"vectors (python): {passed} passed, {failed} failed, {skipped} skipped"
    with capsys.disabled():
        print()
        for line in lines:
            print(line)
        print(summary)
    assert failed == 0, summary
