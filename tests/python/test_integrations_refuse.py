"""pidguard.integrations refuses whole: a release outside the declared range, or one that moved a
wrapped name, is left exactly as it is. Runs in a fresh interpreter per case (the integration
wraps module globals), against a stand-in ``abx_dl`` package with its own dist-info."""

import json
import subprocess
import sys
import textwrap

import pytest

from pidguard.integrations import version_tuple

MODULES = {
    "abx_dl/__init__.py": "",
    "abx_dl/services/__init__.py": "",
    "abx_dl/execution.py": "import os\ndef iter_plugin_command(): pass\n",
    "abx_dl/process_utils.py": textwrap.dedent(
        """
        def write_pid_file_with_mtime(*a): pass
        def validate_pid_file(*a): pass
        async def graceful_kill_process(*a, **k): pass
        async def graceful_kill_by_pid_file(*a, **k): pass
        def _send_signal(*a): pass
        def is_process_alive(*a): pass
        """
    ),
    "abx_dl/services/process_service.py": textwrap.dedent(
        """
        import asyncio, psutil
        from ..process_utils import write_pid_file_with_mtime, validate_pid_file, graceful_kill_process, graceful_kill_by_pid_file, _send_signal
        def _permanently_drop_child_privileges(uid, gid): return lambda: None
        """
    ),
}

PROBE = textwrap.dedent(
    """
    import json, sys
    import abx_dl.services.process_service as ps, abx_dl.process_utils as pu
    before = (ps.asyncio, pu.validate_pid_file, ps._send_signal)
    import pidguard.integrations.abx_dl as i
    try:
        out = {"installed": i.install()}
    except i.IntegrationRefused as e:
        out = {"refused": str(e)}
    out["unchanged"] = before == (ps.asyncio, pu.validate_pid_file, ps._send_signal)
    print(json.dumps(out))
    """
)


def run_with(tmp_path, version, drop=None):
    for rel, text in MODULES.items():
        if drop and rel == "abx_dl/services/process_service.py":
            text = text.replace(f"def {drop}", f"def renamed_{drop}")
        f = tmp_path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    info = tmp_path / f"abx_dl-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: abx-dl\nVersion: {version}\n")
    psutil_stub = tmp_path / "psutil.py"
    if not psutil_stub.exists():
        psutil_stub.write_text("")  # the stand-in needs the name only
    r = subprocess.run([sys.executable, "-c", PROBE], env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_release_outside_the_range_is_refused_and_left_as_released(tmp_path):
    out = run_with(tmp_path, "1.14.0")
    assert "outside the range" in out["refused"] and out["unchanged"]


def test_a_release_that_moved_a_wrapped_name_is_refused_whole(tmp_path):
    out = run_with(tmp_path, "1.13.500", drop="_permanently_drop_child_privileges")
    assert "_permanently_drop_child_privileges is missing" in out["refused"] and out["unchanged"]


def test_a_release_in_the_range_with_every_name_is_wrapped(tmp_path):
    out = run_with(tmp_path, "1.13.200")
    assert out == {"installed": "1.13.200", "unchanged": False}


@pytest.mark.parametrize("text,expected", [("1.13.423", (1, 13, 423)), ("0.9.74rc408", (0, 9, 74)), ("2", (2,))])
def test_version_tuple(text, expected):
    assert version_tuple(text) == expected
