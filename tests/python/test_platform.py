"""On a system no wheel is built for, ``import pidguard`` refuses at once with an ImportError that
names docs/platforms.md, before the native module is loaded (never a loader crash)."""

import subprocess
import sys

import pidguard

PROBE = r"""
import sys
sys.platform = {platform!r}
try:
    import pidguard
except ImportError as e:
    print(type(e).__name__, "|", e, "|", "pidguard._pidguard" in sys.modules)
else:
    print("imported")
"""


def run(platform):
    out = subprocess.run([sys.executable, "-c", PROBE.format(platform=platform)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_an_unbuilt_platform_refuses_at_import_naming_the_docs():
    for platform in ("darwin", "freebsd14"):
        out = run(platform)
        assert out != "imported", f"import pidguard succeeded on {platform!r}"
        name, message, native_loaded = out.split(" | ")
        assert name == "UnsupportedPlatformError"
        assert f"unsupported platform '{platform}'" in message
        assert "docs/platforms.md" in message and "compile-checked only" in message
        assert native_loaded == "False", "refused before the native module was loaded"


def test_linux_imports_as_before():
    assert sys.platform.startswith("linux")
    assert run(sys.platform) == "imported"
    assert not hasattr(pidguard, "UnsupportedPlatformError")
