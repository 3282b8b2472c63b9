"""Every Python example of README.md and docs/python.md runs as written and prints what the
`# comments` of its print lines say."""

import re
import subprocess
import sys

import pytest

from conftest import REPO

PAGES = ["README.md", "docs/python.md"]


def python_blocks():
    out = []
    for page in PAGES:
        text = (REPO / page).read_text()
        out += [(page, i, b) for i, b in enumerate(re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M), 1)]
    return out


def expected_output(code):
    """The comment after each print(...) line: what that line prints."""
    return [m.group(1).strip() for m in re.finditer(r"^\s*print\(.*\)\s+# (.*)$", code, re.M)]


BLOCKS = python_blocks()


def test_the_pages_have_their_examples():
    pages = {p for p, _, _ in BLOCKS}
    assert pages == set(PAGES), pages
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("page,index,code", BLOCKS, ids=[f"{p}:{i}" for p, i, _ in BLOCKS])
def test_example_runs_and_prints_what_it_says(page, index, code, tmp_path):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == expected_output(code), r.stdout
    assert not list(tmp_path.iterdir()), "the example left files in its working directory"
