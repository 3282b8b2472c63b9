#!/usr/bin/env bash
# pidguard's integrations proven in its users' released code, for the releases users install
# today (pinned here): abx-dl 1.13.423 (newest) and 1.13.127 (pinned by ArchiveBox 0.9.73),
# abx-plugins 1.13.943 (newest) and 1.13.162, ArchiveBox 0.9.73 (stable) and 0.9.74rc408.
# The Python ones are pidguard.integrations.abx_dl / .archivebox (loaded by name at import time,
# turned on by PIDGUARD_INTEGRATIONS with pidguard's .pth); abx-plugins' is a patch per release
# (integrations/abx-plugins/). Each scenario runs once as released and once integrated, each in
# a private PID namespace; the table says both; it fails when an integrated cell does not hold.
# The whole flow is scripts/lib/integrations.sh (shared with scripts/check-upstream.sh, which
# runs the same on the newest releases). Needs root, unshare, node and pyenv's Python 3.13, else
# it skips (exit 77). Budget: 18 minutes measured on a loaded 2-core machine with the environments installed (more on a fresh clone: pip downloads) (CLI_RUNS=5 abx-dl runs
# per integrated cell, INTEGRATION_JOBS=4 at once).
set -euo pipefail
cd "$(dirname "$0")/.."
ABX_DL_VERSIONS="1.13.423 1.13.127"
PLUGINS_VERSIONS="1.13.943 1.13.162"
ARCHIVEBOX_VERSIONS="${ARCHIVEBOX_VERSIONS-0.9.73 0.9.74rc408}"
. scripts/lib/integrations.sh
integrations_main "pidguard integrations, pinned releases"
