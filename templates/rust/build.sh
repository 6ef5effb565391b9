#!/bin/sh
# Builds {{name}}.wasm: cargo build for wasm32-wasip2 (rustup target add wasm32-wasip2),
# then copies the component beside {{name}}.toml.
set -eu
cd "$(dirname "$0")"
cargo build --release --target wasm32-wasip2
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cp "$TARGET_DIR/wasm32-wasip2/release/{{crate}}.wasm" {{name}}.wasm
echo "built {{name}}.wasm"
