//! Fuzzes the plugin request-file parser (`NAME.toml` is written by plugin authors, who are
//! not trusted): any text must give a policy or a typed error, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = toolhost_wasm::Policy::parse(text, std::path::Path::new("/plugins/fuzz.toml"));
    }
});
