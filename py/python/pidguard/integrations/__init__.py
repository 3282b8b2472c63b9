"""Integrations for the released code of pidguard's users, loaded at import time.

An integration wraps names of a package pidguard does not own — module globals of the released
code, looked up by name when the package is imported — so that its spawns, kills and liveness
checks go through pidguard, with none of its own logic copied or changed (the way
OpenTelemetry's instrumentations and sentry-sdk's integrations work on libraries they do not
own). Each integration declares the range of releases it knows (``SUPPORTED``, a half-open
range of versions) and the names it wraps (``SITES``); :func:`install` refuses — says why and
changes nothing — when the installed release is outside the range or a name it wraps is missing
or has another shape. A release that moved a name is then refused as a whole, never half-wrapped.

Three ways to turn one on, all opt-in:

- ``import pidguard.integrations.abx_dl as i; i.install()`` (in the program that imports the
  package, before or after it is imported);
- the environment: ``PIDGUARD_INTEGRATIONS=abx_dl,archivebox`` (or ``all``) in a Python whose
  site-packages holds ``pidguard-integrations.pth`` (``python -m pidguard.integrations enable``
  writes it; ``disable`` removes it). The ``.pth`` line costs one environment lookup when the
  variable is unset; when it is set, each named integration is installed when its package is
  first imported (a post-import hook on ``sys.meta_path``), so the package's own command line
  (``abx-dl``, ``archivebox``) runs integrated;
- :func:`activate` (what the ``.pth`` line calls) from a ``sitecustomize``.

``status()`` says what each integration did: ``installed``, ``refused: <why>`` or
``not imported``.
"""

import importlib
import importlib.abc
import importlib.util
import os
import sys
import threading
from typing import Callable, Dict, Iterable, List, Optional, Tuple

__all__ = ["activate", "status", "when_imported", "version_tuple", "check_range", "IntegrationRefused"]

ENV = "PIDGUARD_INTEGRATIONS"
PTH_NAME = "pidguard-integrations.pth"
# The integrations this package ships: the name used in $PIDGUARD_INTEGRATIONS -> its module.
KNOWN = {"abx_dl": "pidguard.integrations.abx_dl", "archivebox": "pidguard.integrations.archivebox"}

_status: Dict[str, str] = {}
_lock = threading.RLock()


class IntegrationRefused(RuntimeError):
    """An integration was not installed: the release is outside its declared range, or a name it
    wraps is missing or has another shape. Its message says which; nothing was changed."""


def version_tuple(text: str) -> Tuple[int, ...]:
    """The numeric release of a PEP 440 version string: ``'1.13.423'`` -> ``(1, 13, 423)``,
    ``'0.9.74rc408'`` -> ``(0, 9, 74)`` (a pre-release counts as its release). Raises ValueError
    for a string without a leading number."""
    parts: List[int] = []
    for word in text.split("."):
        digits = ""
        for ch in word:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(word):
            break
    if not parts:
        raise ValueError(f"not a version: {text!r}")
    return tuple(parts)


def check_range(dist: str, supported: Tuple[Tuple[int, ...], Tuple[int, ...]]) -> str:
    """The installed version of distribution ``dist`` when it lies in ``supported`` (``(low,
    high)``: low included, high excluded). Raises IntegrationRefused when it is not installed or
    outside the range."""
    from importlib import metadata

    try:
        version = metadata.version(dist)
    except metadata.PackageNotFoundError:
        raise IntegrationRefused(f"{dist} is not installed") from None
    low, high = supported
    if not (low <= version_tuple(version) < high):
        raise IntegrationRefused(
            f"{dist} {version} is outside the range this integration knows "
            f"(>= {'.'.join(map(str, low))}, < {'.'.join(map(str, high))})"
        )
    return version


def status() -> Dict[str, str]:
    """What each integration did in this process: name -> ``installed <version>``,
    ``refused: <why>`` or ``pending`` (waiting for its package's import)."""
    with _lock:
        return dict(_status)


def _set_status(name: str, text: str) -> None:
    with _lock:
        _status[name] = text


class _PostImport(importlib.abc.MetaPathFinder):
    """Runs callbacks right after a module has been executed (a post-import hook): finds the
    module's spec through the other finders, then wraps its loader's ``exec_module``."""

    def __init__(self) -> None:
        self.hooks: Dict[str, List[Callable[[object], None]]] = {}
        self._busy = threading.local()

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname not in self.hooks or getattr(self._busy, "name", None) == fullname:
            return None
        self._busy.name = fullname
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.name = None
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        real_exec = loader.exec_module
        hooks = self.hooks

        class _Loader(importlib.abc.Loader):
            def create_module(self, spec):  # type: ignore[no-untyped-def]
                return loader.create_module(spec)

            def __getattr__(self, name):  # type: ignore[no-untyped-def]
                return getattr(loader, name)  # get_source (tracebacks), get_resource_reader...

            def exec_module(self, module):  # type: ignore[no-untyped-def]
                real_exec(module)
                # Only once the module's code has run to its end: an import that fails (and is
                # tried again later) keeps its callbacks for the next attempt.
                with _lock:
                    callbacks = hooks.pop(fullname, [])
                for cb in callbacks:
                    cb(module)

        spec.loader = _Loader()
        return spec


_finder: Optional[_PostImport] = None


def when_imported(module: str, callback: Callable[[object], None]) -> None:
    """Call ``callback(module_object)`` once ``module`` has been imported: now, when it already
    is, else right after its code has run (before the importer sees it)."""
    global _finder
    with _lock:
        if module in sys.modules:
            callback(sys.modules[module])
            return
        if _finder is None:
            _finder = _PostImport()
            sys.meta_path.insert(0, _finder)
        _finder.hooks.setdefault(module, []).append(callback)


def activate(names: Optional[Iterable[str]] = None) -> None:
    """Install the named integrations (default: those ``$PIDGUARD_INTEGRATIONS`` names,
    comma-separated; ``all`` for every one) when their packages are imported. An unknown name
    is said once on stderr and skipped."""
    if names is None:
        raw = os.environ.get(ENV, "")
        names = [n.strip() for n in raw.split(",") if n.strip()]
    names = list(names)
    if names == ["all"]:
        names = list(KNOWN)
    for name in names:
        if name in ("0", "none"):
            continue
        modname = KNOWN.get(name.replace("-", "_"))
        if modname is None:
            sys.stderr.write(f"pidguard.integrations: unknown integration {name!r} in ${ENV} (known: {', '.join(KNOWN)})\n")
            continue
        importlib.import_module(modname).install_when_imported()


def _pth_main() -> None:
    """The ``.pth`` line's body: activate when the environment asks, never raise."""
    if not os.environ.get(ENV):
        return
    try:
        activate()
    except Exception as e:  # a broken integration must not break every Python start
        sys.stderr.write(f"pidguard.integrations: not activated: {e}\n")
