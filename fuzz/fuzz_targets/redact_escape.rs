//! Fuzzes the secret scrubber and the terminal escaper: no panic on any text, escaped text
//! holds no character that steers a terminal, and scrubbing is idempotent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_core::tools::{escape, redact};

fuzz_target!(|text: String| {
    let line = escape::escape_line(&text);
    assert!(!line.chars().any(escape::is_terminal_unsafe));
    let multi = escape::escape_text(&text);
    assert!(
        !multi
            .chars()
            .any(|c| c != '\n' && c != '\t' && escape::is_terminal_unsafe(c))
    );
    let once = redact::scrub_text(&text).into_owned();
    let twice = redact::scrub_text(&once).into_owned();
    assert_eq!(once, twice, "scrubbing is not idempotent");
    let _ = redact::redact_value(&serde_json::Value::String(text));
});
