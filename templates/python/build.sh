#!/bin/sh
# Builds {{name}}.wasm from app.py. Needs componentize-py 0.25 (pip install componentize-py==0.25.1);
# set COMPONENTIZE_PY to use another one.
set -eu
cd "$(dirname "$0")"
CPY="${COMPONENTIZE_PY:-{{toolchains_py}}}"
command -v "$CPY" >/dev/null 2>&1 || CPY=componentize-py
"$CPY" -d wit -w tool componentize app -o {{name}}.wasm
echo "built {{name}}.wasm"
