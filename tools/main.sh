#!/usr/bin/env bash
# Set up and run the main job on the real example (README's first command): install voe into .venv,
# start the local Neo4j (left running so you can browse the graph), ingest the shared AM Bench record
# mds2-4103 and print the summary. Extra arguments are passed to `voe ingest` (e.g. --json).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# a .venv made before the distribution was renamed voe-evidence holds this checkout's old `voe` (seven top-level
# names, shadowing the new install): removed when its recorded source is this folder
if .venv/bin/python tools/old_install.py; then
  .venv/bin/python -m pip uninstall -q -y voe
fi
.venv/bin/python -m pip install -q -e . -c requirements.lock  # pinned: tools/lock.sh regenerates it
if [ -z "${NEO4J_URI:-}" ]; then
  .venv/bin/voe db up
fi
.venv/bin/voe ingest "${ARCHIVE:-../shared/archives/mds2-4103}" "$@"
