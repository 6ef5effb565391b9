//! Fuzzes the secret scrubber and the terminal escaper: no panic on any text, escaped text
//! holds no character that steers a terminal, and scrubbing is idempotent. The text is
//! also placed inside URLs with query strings and fragments (as a parameter name and as
//! the value of secret parameters): scrubbing them stays idempotent, and a secret
//! parameter's value never survives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolhost_core::tools::{escape, redact};

/// Bytes that end a query parameter's value for the URL rules (`&;?#` separate
/// parameters; whitespace, controls, quotes, `<>`, backtick and backslash end the URL).
fn ends_value(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(
            b,
            b'&' | b';' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\'
        )
}

/// Both scrubbers, as plain function pointers.
const SCRUBS: [fn(&str) -> std::borrow::Cow<'_, str>; 2] = [redact::scrub_text, redact::scrub_urls];

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
    let once = redact::scrub_urls(&text).into_owned();
    assert_eq!(
        redact::scrub_urls(&once),
        once,
        "URL scrubbing is not idempotent"
    );

    let url = format!(
        "see https://u:p@h.example/p?{text}=v&access_token={text}&X%2DAmz%2DSignature={text}#code={text}&{text}"
    );
    for scrub in SCRUBS {
        let once = scrub(&url).into_owned();
        assert_eq!(scrub(&once), once, "not idempotent on a URL: {url:?}");
    }
    if !text.is_empty() && text != redact::REDACTED && !text.bytes().any(ends_value) {
        let url = format!("https://h.example/?page=2&token={text}&sig={text}#access_token={text}");
        for scrub in SCRUBS {
            let out = scrub(&url);
            for name in ["token", "sig", "access_token"] {
                assert!(
                    !out.contains(&format!("{name}={text}")),
                    "{name} kept its value: {out}"
                );
            }
        }
    }
    let _ = redact::redact_value(&serde_json::Value::String(text));
});
