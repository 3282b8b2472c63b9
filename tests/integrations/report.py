"""The table of scripts/test-integrations.sh and scripts/check-upstream.sh, and the verdict.

``python report.py RESULTS TITLE --abx-dl "V..." --plugins "V..." --archivebox "V..."
[--pinned "pkg=V ..."] [--upstream]`` reads ``RESULTS/<package>@<version>.<scenario>.<column>.json``
(``column``: released, integrated) and ``<package>@<version>.applies.json``, prints a Markdown
table and exits 1 when an integrated cell does not hold (0 with ``--upstream``, where a release
the integrations do not cover yet is news for the table, not a broken build; the table says it).

Without ``--upstream``: one row per release and scenario, ``released | integrated | holds``.
With it: one row per package, ``package | pinned | newest | applies | each scenario`` (each cell
``released → integrated``, ✗ where the integrated column does not hold).
"""

import argparse
import datetime
import json
import sys
from pathlib import Path


def load(R: Path, name: str) -> dict:
    try:
        return json.loads((R / f"{name}.json").read_text() or '{"error": "no output"}')
    except FileNotFoundError:
        return {"error": "not run"}
    except ValueError as e:
        return {"error": f"not JSON: {e}"}


def cli_cell(r: dict) -> str:
    s = r["survivors"]
    started = sum(r["tree_started"])
    text = f"{max(s) if s else '?'} survivor(s)" if len(s) == 1 else f"{sum(1 for x in s if x == 0)}/{len(s)} runs with 0 survivors"
    uids = {tuple(u) for u in r["hook_uids"] if u}
    if r.get("shape") == "archivebox" and uids:
        text += f", hook uid {'/'.join(str(u[1]) for u in sorted(uids))}"
    if started < len(s):
        text += f" (tree up in {started}/{len(s)})"
    if r.get("fallback"):
        text += " (fell back to the released spawn)"
    return text


def cli_holds(r: dict) -> bool:
    ok = all(r["tree_started"]) and all(x == 0 for x in r["survivors"]) and len(r["survivors"]) == r["runs"] and not r.get("fallback")
    if r.get("shape") == "archivebox":
        ok = ok and all(u == [65534, 65534, 65534] for u in r["hook_uids"])
    return ok


SCENARIOS = {
    "abx-dl": [
        ("cli-root", "CLI `.bg.` tree (child, setsid grandchild, double-forked daemon), as root", cli_cell, cli_holds),
        ("cli-archivebox", "CLI `.bg.` tree, ArchiveBox shape (real uid 0, effective 65534)", cli_cell, cli_holds),
        ("ordering", "spawn: loop turns with a PID file but no registered hook",
         lambda r: f"{r['unregistered_turns']} turn(s)", lambda r: r["unregistered_turns"] == 0 and r["scoped"]),
        ("memory", "`_enforce_memory_limit` on a setsid tree",
         lambda r: r["skipped"] if "skipped" in r else f"{r['survivors']} survivor(s)", lambda r: "skipped" in r or (r["survivors"] == 0 and r["scoped"])),
        ("force_kill", "third Ctrl+C (`force_kill_owned_processes`) on a setsid tree",
         lambda r: f"{r['survivors']} survivor(s)", lambda r: r["survivors"] == 0 and r["scoped"]),
    ],
    "abx-plugins": [
        ("lock", "`acquireSessionLock`, holder's pid reused",
         lambda r: (f"taken at once" if r["taken"] and r["waited_s"] < 1 else f"blocked {r['waited_s']:g} s") + ("" if r["reused"] else " (pid not reused)"),
         lambda r: r["reused"] and r["taken"] and r["waited_s"] < 1 and r["startToken"]),
    ],
    "archivebox": [
        ("terminate", "`Process.terminate()`, a same-binary stranger took the pid",
         lambda r: ("stranger hit" if r["stranger_hit"] else "never hit") + ("" if r["reused"] else " (pid not reused)"),
         lambda r: r["reused"] and not r["stranger_hit"] and r.get("token", True)),
        ("kill_tree", "`Process.kill_tree()`, a stranger took a child's pid",
         lambda r: ("stranger hit" if r["stranger_hit"] else "never hit") + ("" if r["reused"] else " (pid not reused)"),
         lambda r: r["reused"] and not r["stranger_hit"] and r.get("token", True)),
        ("crawl_cleanup", "`Crawl.cleanup_runtime()`, browser running",
         lambda r: r["browser"], lambda r: r["browser"] == "stopped"),
    ],
}


def cell(r: dict, show) -> str:
    if "error" in r:
        return f"ERROR ({r['error']})"
    try:
        return show(r)
    except (KeyError, TypeError, ValueError) as e:
        return f"ERROR (unexpected output: {e})"


def holds(r: dict, test) -> bool:
    if "error" in r:
        return False
    try:
        return bool(test(r))
    except (KeyError, TypeError, ValueError):
        return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("title")
    ap.add_argument("--abx-dl", default="")
    ap.add_argument("--plugins", default="")
    ap.add_argument("--archivebox", default="")
    ap.add_argument("--pinned", default="")
    ap.add_argument("--upstream", action="store_true")
    a = ap.parse_args()
    R = Path(a.results)
    versions = {"abx-dl": a.abx_dl.split(), "abx-plugins": a.plugins.split(), "archivebox": a.archivebox.split()}
    pinned = dict(x.split("=", 1) for x in a.pinned.split())
    failed = []
    print(f"\n{a.title} ({datetime.date.today().isoformat()})\n")
    if not a.upstream:
        print("| release | scenario | released | integrated | holds |")
        print("| --- | --- | --- | --- | --- |")
    else:
        print("| package | pinned | newest | applies | scenarios (released → integrated) |")
        print("| --- | --- | --- | --- | --- |")
    for pkg, vs in versions.items():
        for v in vs:
            applies = load(R, f"{pkg}@{v}.applies").get("applies", "?")
            cells = []
            for key, label, show, test in SCENARIOS[pkg]:
                rel, integ = load(R, f"{pkg}@{v}.{key}.released"), load(R, f"{pkg}@{v}.{key}.integrated")
                ok = holds(integ, test)
                if not ok:
                    failed.append(f"{pkg} {v}: {label}")
                if a.upstream:
                    cells.append(f"{key}: {cell(rel, show)} → {cell(integ, show)}{'' if ok else ' ✗'}")
                else:
                    print(f"| {pkg} {v} | {label} | {cell(rel, show)} | {cell(integ, show)} | {'yes' if ok else 'NO'} |")
            if pkg == "abx-dl":
                old = load(R, f"{pkg}@{v}.ordering.old-patch")
                seen = "error" not in old and old.get("unregistered_turns", 0) > 0
                if not seen:
                    failed.append(f"{pkg} {v}: the ordering scenario does not see the old patch's window")
                if not a.upstream:
                    print(f"| {pkg} {v} | ordering check: the old patch's shape (record, then a yield) | — | {cell(old, lambda r: str(r['unregistered_turns']) + ' turn(s)')} | {'seen' if seen else 'NOT SEEN'} |")
            if a.upstream:
                print(f"| {pkg} | {pinned.get(pkg, '?')} | {v} | {applies} | {'; '.join(cells)} |")
    if failed:
        print("\nthe integrated column does not hold for: " + "; ".join(failed))
        print(f"(each run's stderr: {R}/<package>@<version>.<scenario>.<column>.log)")
        sys.exit(0 if a.upstream else 1)
    print("\nintegrations: every integrated cell holds")


if __name__ == "__main__":
    main()
