#!/usr/bin/env python3
"""Check a release directory (dist/, as scripts/release.sh writes it) before anything is uploaded.

Every artefact's binaries must be what its name says:
  - ELF class 64, e_machine of its architecture (x86_64: 62, aarch64: 183);
  - glibc artefacts (manylinux2014 wheels, -gnu npm packages, -gnu C tarballs): no glibc symbol
    version above 2.17 (the manylinux2014 floor; also the floor of the npm and C packages), no
    musl; an executable's loader is glibc's (/lib64/ld-linux-x86-64.so.2, /lib/ld-linux-aarch64.so.1);
  - musl artefacts (musllinux_1_2 wheels, -musl packages and tarballs): no glibc symbol version at
    all; an executable's loader is /lib/ld-musl-<arch>.so.1 (or none: static), a shared object
    needs libc.musl-<arch>.so.1;
  - every binary package holds its pidguard-scope (executable, built for the same target);
  - the C tarball: libpidguard.so.<v> with soname libpidguard.so.0 and every exported pidguard_
    function at a PIDGUARD_ symbol version, the .so.0/.so links, the static library, the header,
    the pkg-config file, the CLI, its man page;
  - the sdist and the npm main package hold no binary; the main package's optionalDependencies
    name the four platform packages at its version (napi-rs's layout); each platform package's
    os/cpu/libc say its platform;
  - nothing is missing (every target's artefacts, the crates) and nothing else is there.

ELF facts are read with `readelf` (binutils; it reads every architecture).

usage: scripts/check-dist.py [--partial] [--version V] DIST
  --partial   check the artefacts present, do not ask for the whole set (scripts/test-packages.sh
              runs it on the host-only packages it builds)
Exit status 0 when everything holds; 1 with one line per problem.
"""
import io
import json
import os
import re
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile

TARGETS = {
    # triple: (arch as in wheel tags, npm cpu, libc, e_machine name in readelf, musl/glibc loader)
    "x86_64-unknown-linux-gnu": ("x86_64", "x64", "gnu", "X86-64", "/lib64/ld-linux-x86-64.so.2"),
    "aarch64-unknown-linux-gnu": ("aarch64", "arm64", "gnu", "AArch64", "/lib/ld-linux-aarch64.so.1"),
    "x86_64-unknown-linux-musl": ("x86_64", "x64", "musl", "X86-64", "/lib/ld-musl-x86_64.so.1"),
    "aarch64-unknown-linux-musl": ("aarch64", "arm64", "musl", "AArch64", "/lib/ld-musl-aarch64.so.1"),
}
GLIBC_FLOOR = (2, 17)
CRATES = ["pidguard-core", "pidguard-ffi-c", "pidguard-cli"]

problems = []


def bad(msg):
    problems.append(msg)


def readelf(data):
    """(machine, class, type, interp, needed, soname, glibc_versions, exported symbols with version)."""
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        out = subprocess.run(["readelf", "-W", "-h", "-l", "-d", "-V", "--dyn-syms", f.name],
                             capture_output=True, text=True).stdout
    info = {"machine": None, "class": None, "type": None, "interp": None, "needed": [], "soname": None,
            "glibc": [], "exports": []}
    for line in out.splitlines():
        m = re.match(r"\s*Machine:\s+(.*)", line)
        if m:
            info["machine"] = m.group(1).strip()
        m = re.match(r"\s*Class:\s+(.*)", line)
        if m:
            info["class"] = m.group(1).strip()
        m = re.match(r"\s*Type:\s+(\S+)", line)
        if m:
            info["type"] = m.group(1)
        m = re.search(r"\[Requesting program interpreter: (.*)\]", line)
        if m:
            info["interp"] = m.group(1)
        m = re.search(r"\(NEEDED\)\s+Shared library: \[(.*)\]", line)
        if m:
            info["needed"].append(m.group(1))
        m = re.search(r"\(SONAME\)\s+Library soname: \[(.*)\]", line)
        if m:
            info["soname"] = m.group(1)
        m = re.search(r"Name: GLIBC_(\d+)\.(\d+)(?:\.(\d+))?\b", line)
        if m:
            info["glibc"].append(tuple(int(x) for x in m.groups() if x is not None))
        # --dyn-syms: Num: Value Size Type Bind Vis Ndx Name[@version]
        parts = line.split()
        if len(parts) >= 8 and parts[0].endswith(":") and parts[4] in ("GLOBAL", "WEAK") and parts[6] != "UND":
            info["exports"].append(parts[7])
    return info


def is_elf(data):
    return data[:4] == b"\x7fELF"


def check_binary(where, data, triple, kind):
    """kind: 'exe' or 'so'. Checks one ELF file against its target."""
    arch, _, libc, machine, loader = TARGETS[triple]
    if not is_elf(data):
        bad(f"{where}: not an ELF file")
        return None
    e = readelf(data)
    if e["class"] != "ELF64":
        bad(f"{where}: class {e['class']}, expected ELF64")
    # readelf says "Advanced Micro Devices X86-64" or "AArch64".
    if not (e["machine"] or "").endswith(machine):
        bad(f"{where}: machine {e['machine']}, expected {machine} ({triple})")
    if kind == "so" and e["type"] != "DYN":
        bad(f"{where}: type {e['type']}, expected a shared object")
    if libc == "gnu":
        newest = max(e["glibc"], default=(0, 0))
        if newest > GLIBC_FLOOR:
            bad(f"{where}: needs GLIBC_{'.'.join(map(str, newest))}, above the floor 2.17")
        if any("musl" in n for n in e["needed"]) or (e["interp"] or "").find("musl") >= 0:
            bad(f"{where}: linked against musl, expected glibc")
        if kind == "exe" and e["interp"] not in (None, loader):
            bad(f"{where}: loader {e['interp']}, expected {loader}")
    else:
        if e["glibc"]:
            bad(f"{where}: needs glibc symbol versions ({len(e['glibc'])}), expected musl")
        if kind == "exe" and e["interp"] not in (None, loader):
            bad(f"{where}: loader {e['interp']}, expected {loader}")
        musl_lib = f"libc.musl-{arch}.so.1"
        if kind == "so" and e["needed"] and musl_lib not in e["needed"] and "libc.so" not in e["needed"]:
            bad(f"{where}: needs {e['needed']}, expected {musl_lib}")
        if any(n.startswith("libc.so.6") or n.startswith("ld-linux") for n in e["needed"]):
            bad(f"{where}: needs glibc ({e['needed']})")
    return e


def check_scope(where, data, mode, triple):
    if data is None:
        bad(f"{where}: no pidguard-scope")
        return
    if mode is not None and not mode & 0o111:
        bad(f"{where}: pidguard-scope is not executable (mode {oct(mode)})")
    check_binary(where + " pidguard-scope", data, triple, "exe")


def wheel_triple(name):
    m = re.fullmatch(r"pidguard-([^-]+)-cp39-abi3-(.+)\.whl", name)
    if not m:
        return None, None
    version, plats = m.groups()
    tags = plats.split(".")
    for triple, (arch, _, libc, _, _) in TARGETS.items():
        want = ({f"manylinux2014_{arch}", f"manylinux_2_17_{arch}"} if libc == "gnu" else {f"musllinux_1_2_{arch}"})
        if set(tags) == want:
            return version, triple
    return version, "?"


def check_wheel(path, triple):
    z = zipfile.ZipFile(path)
    names = z.namelist()
    exts = [n for n in names if n.startswith("pidguard/_pidguard") and n.endswith(".so")]
    if exts != ["pidguard/_pidguard.abi3.so"]:
        bad(f"{path}: extension modules {exts}, expected pidguard/_pidguard.abi3.so")
    else:
        check_binary(f"{path}: {exts[0]}", z.read(exts[0]), triple, "so")
    scope = "pidguard/pidguard-scope"
    if scope in names:
        check_scope(path, z.read(scope), z.getinfo(scope).external_attr >> 16, triple)
    else:
        check_scope(path, None, None, triple)
    for n in names:
        if n not in (scope, *exts) and not n.endswith((".py", ".pyi", "py.typed")) and ".dist-info/" not in n:
            bad(f"{path}: unexpected file {n}")
    wheel_meta = [n for n in names if n.endswith(".dist-info/WHEEL")]
    if wheel_meta:
        tags = [l.split(":", 1)[1].strip() for l in z.read(wheel_meta[0]).decode().splitlines() if l.startswith("Tag:")]
        name_tags = {f"cp39-abi3-{p}" for p in os.path.basename(path)[:-4].split("-", 4)[4].split(".")}
        if set(tags) != name_tags:
            bad(f"{path}: WHEEL tags {tags} differ from the file name's {sorted(name_tags)}")


def tar_members(path):
    t = tarfile.open(path)
    return t, {m.name: m for m in t.getmembers()}


def check_sdist(path):
    t, members = tar_members(path)
    root = os.path.basename(path)[: -len(".tar.gz")]
    for need in ("pyproject.toml", "py/build.rs", "core/src/bin/pidguard-scope.rs", "python/pidguard/__init__.py"):
        if f"{root}/{need}" not in members:
            bad(f"{path}: lacks {need}")
    for name, m in members.items():
        if m.isfile() and is_elf(t.extractfile(m).read(4)):
            bad(f"{path}: holds a binary, {name}")
        if name.endswith("/pidguard-scope"):
            bad(f"{path}: holds a prebuilt {name}")


def npm_platform(name):
    m = re.fullmatch(r"pidguard-linux-(x64|arm64)-(gnu|musl)-([^-]+)\.tgz", name)
    if not m:
        return None, None
    cpu, libc, version = m.groups()
    for triple, (_, c, l, _, _) in TARGETS.items():
        if c == cpu and l == libc:
            return version, triple
    return version, "?"


def check_npm_platform(path, triple, version):
    _, cpu, libc, _, _ = TARGETS[triple]
    plat = f"linux-{cpu}-{libc}"
    t, members = tar_members(path)
    want = {"package/package.json", "package/README.md", f"package/pidguard.{plat}.node", "package/pidguard-scope"}
    files = {n for n, m in members.items() if m.isfile()}
    for n in sorted(want - files):
        bad(f"{path}: lacks {n}")
    for n in sorted(files - want):
        bad(f"{path}: unexpected file {n}")
    if f"package/pidguard.{plat}.node" in files:
        check_binary(f"{path}: pidguard.{plat}.node", t.extractfile(members[f"package/pidguard.{plat}.node"]).read(), triple, "so")
    if "package/pidguard-scope" in files:
        m = members["package/pidguard-scope"]
        check_scope(path, t.extractfile(m).read(), m.mode, triple)
    if "package/package.json" in files:
        pj = json.load(t.extractfile(members["package/package.json"]))
        expect = {"name": f"pidguard-{plat}", "version": version, "os": ["linux"], "cpu": [cpu],
                  "libc": ["glibc" if libc == "gnu" else "musl"], "main": f"pidguard.{plat}.node"}
        for k, v in expect.items():
            if pj.get(k) != v:
                bad(f"{path}: package.json {k} is {pj.get(k)!r}, expected {v!r}")
        if "pidguard-scope" not in pj.get("files", []):
            bad(f"{path}: package.json files lacks pidguard-scope")


def check_npm_main(path, version, triples):
    t, members = tar_members(path)
    for n, m in members.items():
        if m.isfile() and is_elf(t.extractfile(m).read(4)):
            bad(f"{path}: holds a binary, {n}")
    for need in ("package/package.json", "package/index.js", "package/index.mjs", "package/index.d.ts"):
        if need not in members:
            bad(f"{path}: lacks {need}")
    if "package/package.json" in members:
        pj = json.load(t.extractfile(members["package/package.json"]))
        want = {f"pidguard-linux-{TARGETS[tr][1]}-{TARGETS[tr][2]}": version for tr in TARGETS}
        if pj.get("version") != version:
            bad(f"{path}: version {pj.get('version')}, expected {version}")
        if pj.get("optionalDependencies") != want:
            bad(f"{path}: optionalDependencies {pj.get('optionalDependencies')}, expected {want}")


def c_triple(name):
    m = re.fullmatch(r"pidguard-([^-]+)-(.+)\.tar\.gz", name)
    if not m or m.group(2) not in TARGETS:
        return None, None
    return m.group(1), m.group(2)


def check_c(path, triple, version):
    t, members = tar_members(path)
    root = os.path.basename(path)[: -len(".tar.gz")]
    files = {n[len(root) + 1:]: m for n, m in members.items() if n.startswith(root + "/") and not m.isdir()}
    want = {f"lib/libpidguard.so.{version}", "lib/libpidguard.so.0", "lib/libpidguard.so", "lib/libpidguard.a",
            "lib/pidguard-scope", "lib/pkgconfig/pidguard.pc", "include/pidguard.h", "bin/pidguard",
            "share/man/man1/pidguard.1"}
    for n in sorted(want - set(files)):
        bad(f"{path}: lacks {n}")
    for n in sorted(set(files) - want):
        bad(f"{path}: unexpected file {n}")
    for link, to in (("lib/libpidguard.so.0", f"libpidguard.so.{version}"), ("lib/libpidguard.so", "libpidguard.so.0")):
        if link in files and not (files[link].issym() and files[link].linkname == to):
            bad(f"{path}: {link} is not a link to {to}")
    so = f"lib/libpidguard.so.{version}"
    if so in files:
        e = check_binary(f"{path}: {so}", t.extractfile(files[so]).read(), triple, "so")
        if e:
            if e["soname"] != "libpidguard.so.0":
                bad(f"{path}: {so} soname {e['soname']}, expected libpidguard.so.0")
            ours = [s for s in e["exports"] if s.startswith("pidguard_")]
            plain = [s for s in ours if "@PIDGUARD_" not in s]
            if not ours or plain:
                bad(f"{path}: {so}: {len(ours)} pidguard_ exports, {len(plain)} without a PIDGUARD_ version ({plain[:3]})")
            foreign = [s for s in e["exports"] if not s.startswith(("pidguard_", "PIDGUARD_"))]
            if foreign:
                bad(f"{path}: {so} exports other symbols: {foreign[:5]}")
    if "lib/pidguard-scope" in files:
        check_scope(path, t.extractfile(files["lib/pidguard-scope"]).read(), files["lib/pidguard-scope"].mode, triple)
    if "bin/pidguard" in files:
        check_binary(f"{path}: bin/pidguard", t.extractfile(files["bin/pidguard"]).read(), triple, "exe")
    if "lib/pkgconfig/pidguard.pc" in files:
        pc = t.extractfile(files["lib/pkgconfig/pidguard.pc"]).read().decode()
        if f"Version: {version}" not in pc:
            bad(f"{path}: pidguard.pc does not say Version: {version}")


def main(argv):
    partial = "--partial" in argv
    argv = [a for a in argv if a != "--partial"]
    version = None
    if "--version" in argv:
        i = argv.index("--version")
        version = argv[i + 1]
        del argv[i:i + 2]
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    dist = argv[0]
    if version is None:
        cargo = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Cargo.toml")).read()
        version = re.search(r'^version = "([^"]+)"', cargo, re.M).group(1)
    seen = set()
    for dirpath, _, files in os.walk(dist):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, dist)
            if rel in ("SHA256SUMS", "MANIFEST.txt"):
                continue
            if f.endswith(".whl"):
                v, triple = wheel_triple(f)
                if triple in TARGETS:
                    seen.add(("wheel", triple))
                    check_wheel(path, triple)
                else:
                    bad(f"{rel}: a wheel tagged for no target of the release")
            elif rel.startswith("npm/") and npm_platform(f)[1]:
                v, triple = npm_platform(f)
                if triple in TARGETS:
                    seen.add(("npm", triple))
                    check_npm_platform(path, triple, version)
                else:
                    bad(f"{rel}: an npm package for no target of the release")
            elif rel == f"npm/pidguard-{version}.tgz":
                seen.add(("npm-main", None))
                check_npm_main(path, version, TARGETS)
            elif rel == f"pidguard-{version}.tar.gz":
                seen.add(("sdist", None))
                check_sdist(path)
            elif rel.startswith("c/") and c_triple(f)[1]:
                v, triple = c_triple(f)
                seen.add(("c", triple))
                check_c(path, triple, version)
            elif rel.startswith("crates/") and re.fullmatch(r"(.+)-" + re.escape(version) + r"\.crate", f):
                crate = f[: -len(f"-{version}.crate")]
                if crate in CRATES:
                    seen.add(("crate", crate))
                else:
                    bad(f"{rel}: a crate that is not published ({crate})")
            else:
                bad(f"{rel}: not an artefact of the release (extra, or misnamed for version {version})")
            if v_mismatch(f, version):
                bad(f"{rel}: not version {version}")
    if not partial:
        want = {("sdist", None), ("npm-main", None)}
        want |= {(k, t) for k in ("wheel", "npm", "c") for t in TARGETS}
        want |= {("crate", c) for c in CRATES}
        for k, t in sorted(want - seen, key=str):
            bad(f"missing: the {k}{' for ' + t if t else ''}")
    for p in problems:
        print(f"check-dist: {p}")
    print(f"check-dist: {len(seen)} artefacts, {len(problems)} problems ({'partial' if partial else 'complete set'} check of {dist})")
    return 1 if problems else 0


def v_mismatch(name, version):
    m = re.search(r"-(\d+\.\d+\.\d+[^-]*?)(?:-|\.tgz$|\.tar\.gz$|\.crate$)", name)
    return bool(m) and m.group(1) != version


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
