"""The README's Python example runs as written and prints what its comments say."""

import re
import subprocess
import sys

from conftest import REPO


def python_blocks():
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_example_runs():
    blocks = python_blocks()
    assert len(blocks) == 1
    code = blocks[0]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    expected = ["valid", "exited TERM 143", "exited ['TERM', 'CONT']", "NoSuchProcessError 3"]
    assert r.stdout.splitlines() == expected, r.stdout
    for line in expected:  # the README's comments say the same
        assert f"# {line}" in code
