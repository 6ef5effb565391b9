//! Integration tests of toolhost-wasm, one binary (each test binary links wasmtime, which
//! is slow): real compiled components, built by `support::guests()` (a no-op cargo build
//! when up to date). Every hostile case must be denied or stopped, and a good call must
//! succeed right after it.

mod support;

mod content;
mod fs;
mod hostile_fs;
mod hostile_load;
mod hostile_net;
mod limits;
mod loading;
mod net;
mod plain;
mod spare;
mod tiers;
