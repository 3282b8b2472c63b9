"""The stubs match the native module (mypy.stubtest), type-check a user's code, and the
package re-exports exactly its __all__."""

import os
import subprocess
import sys
from pathlib import Path

import pidguard

HERE = Path(__file__).resolve().parent


def run(*args):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=str(HERE))


def test_stubtest_finds_no_difference(tmp_path):
    # pidguard.integrations is plain Python with no stub: stubtest reads its classes made inside
    # functions (subclasses of classes the wrapped package defines at run time) as module names
    # ("Process@334") that do not exist. It is type-checked by mypy below instead.
    allow = tmp_path / "allowlist.txt"
    allow.write_text("pidguard\\.integrations(\\..*)?\n")
    r = run("mypy.stubtest", "pidguard", "--mypy-config-file", os.devnull, "--allowlist", str(allow))
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_integrations_type_check():
    r = run("mypy", "--no-incremental", "--cache-dir", os.devnull, "--config-file", os.devnull, "-p", "pidguard.integrations")
    assert r.returncode == 0, r.stdout + r.stderr


def test_stubs_and_py_typed_are_installed():
    pkg = Path(pidguard.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_pidguard.pyi").exists()


def test_users_code_type_checks_and_wrong_types_do_not(tmp_path):
    r = run("mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, "typing_sample.py")
    assert r.returncode == 0, r.stdout + r.stderr
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import pidguard\n"
        "pidguard.lookup('1')\n"
        "pidguard.validate_pid_file(5)\n"
        "pidguard.terminate(1, policy='loose')\n"
        "pidguard.guard.acquire('p', session=5)\n"
        "pidguard.guard.create('p', {'pid': 1})\n"
    )  # (a str argv is a Sequence[str] to a type checker: refused at run time instead)
    r = run("mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, str(bad))
    assert r.returncode == 1
    assert r.stdout.count("error:") == 5, r.stdout


def test_all_is_complete_and_importable():
    public = {n for n in dir(pidguard) if not n.startswith("_")} - {"errors", "abx_dl", "integrations"}
    assert set(pidguard.__all__) - {"__version__"} == public
    for name in pidguard.__all__:
        assert getattr(pidguard, name) is not None
    assert pidguard.__version__ == pidguard._pidguard.__version__
    assert pidguard.DEFAULT_SCHEDULE == "TERM/2/KILL/1" and pidguard.DEFAULT_TOLERANCE == 5.0
