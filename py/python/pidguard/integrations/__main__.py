"""``python -m pidguard.integrations enable|disable|status``: write or remove
``pidguard-integrations.pth`` in this Python's site-packages (purelib), or print what the
``.pth`` file would turn on. With the file present, ``PIDGUARD_INTEGRATIONS=abx_dl,archivebox``
(or ``all``) in the environment installs those integrations in every Python started from this
environment; without the variable nothing is imported. Exit status 0, or 2 for a bad use."""

import os
import sys
import sysconfig

from . import ENV, KNOWN, PTH_NAME

LINE = "import os; os.environ.get(%r) and __import__('pidguard.integrations').integrations._pth_main()\n" % ENV


def main(argv):  # type: ignore[no-untyped-def]
    path = os.path.join(sysconfig.get_paths()["purelib"], PTH_NAME)
    cmd = argv[0] if argv else "status"
    if cmd == "enable":
        with open(path + ".tmp", "w") as f:
            f.write(LINE)
        os.replace(path + ".tmp", path)
        print(f"{path}: written; set {ENV}=<{'|'.join(KNOWN)}|all> to turn integrations on")
    elif cmd == "disable":
        try:
            os.unlink(path)
            print(f"{path}: removed")
        except FileNotFoundError:
            print(f"{path}: not there")
    elif cmd == "status":
        print(f"{path}: {'present' if os.path.exists(path) else 'absent'}; ${ENV}={os.environ.get(ENV, '')!r}")
    else:
        print("usage: python -m pidguard.integrations enable|disable|status", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
