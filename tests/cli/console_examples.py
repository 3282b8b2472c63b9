"""Run the ```console blocks of markdown files as written and compare what they print.

usage: console_examples.py PIDGUARD_BINARY FILE.md...

Each block runs in a fresh temporary directory (removed afterwards), in one bash, with
`pidguard` on PATH first; a `$ ` line is a command, the lines after it what it prints (stdout
and stderr together). Numbers are compared as numbers of any value (pids differ from run to
run); `…` in the expected text stands for anything. A block must leave its directory empty
(the examples clean up after themselves). Prints one `ok`/`FAIL` line per block; exits 1 on
any failure.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

MARK = "@@pidguard-example-command@@"


def blocks(path):
    text = open(path, encoding="utf-8").read()
    return re.findall(r"^```console\n(.*?)^```$", text, re.M | re.S)


def parse(block):
    cmds = []
    for line in block.splitlines():
        if line.startswith("$ "):
            cmds.append((line[2:], []))
        elif cmds:
            cmds[-1][1].append(line)
    return cmds


def pattern(expected_line):
    parts = re.split(r"(\d+|…)", expected_line)
    out = ""
    for p in parts:
        if p == "…":
            out += ".*"
        elif p.isdigit():
            out += r"\d+"
        else:
            out += re.escape(p)
    return re.compile(out + r"\Z")


def run_block(binary, block):
    cmds = parse(block)
    d = tempfile.mkdtemp(prefix="pidguard-console-")
    try:
        script = "".join(f"echo {MARK}\n{c}\n" for c, _ in cmds)
        env = dict(os.environ, PATH=os.path.dirname(os.path.abspath(binary)) + os.pathsep + os.environ["PATH"])
        r = subprocess.run(["bash", "-c", script], cwd=d, env=env, capture_output=False, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        outs = r.stdout.split(MARK + "\n")[1:]
        if len(outs) != len(cmds):
            return f"ran {len(outs)} of {len(cmds)} commands: {r.stdout!r}"
        for (cmd, want), got in zip(cmds, outs):
            got = got.splitlines()
            if len(got) != len(want) or not all(pattern(w).match(g) for w, g in zip(want, got)):
                return f"$ {cmd}\n  expected: {want}\n  printed:  {got}"
        left = os.listdir(d)
        if left:
            return f"left behind in its directory: {left}"
        return None
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    binary, files = sys.argv[1], sys.argv[2:]
    failed = 0
    for f in files:
        for i, b in enumerate(blocks(f), 1):
            why = run_block(binary, b)
            name = f"{os.path.relpath(f)}: console example {i} ({parse(b)[0][0]})"
            if why:
                failed += 1
                print(f"FAIL - {name}\n{why}")
            else:
                print(f"ok   - {name} runs as written")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
