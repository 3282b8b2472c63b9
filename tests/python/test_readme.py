"""The README's Python examples run as written and print what their comments say."""

import re
import subprocess
import sys

import pytest

from conftest import REPO


def python_blocks():
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


EXPECTED = [
    # the abx-dl functions and terminate
    ["valid", "exited TERM 143", "exited ['TERM', 'CONT']", "NoSuchProcessError 3"],
    # pidguard.guard
    ["True ['session', 'secret_sha256']", "match True", "False"],
]


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_readme_example_runs(index):
    blocks = python_blocks()
    assert len(blocks) == len(EXPECTED)
    code = blocks[index]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    expected = EXPECTED[index]
    assert r.stdout.splitlines() == expected, r.stdout
    for line in expected:  # the README's comments say the same
        assert f"# {line}" in code
