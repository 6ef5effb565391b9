//! Result rendering: head/tail truncation of the text the model sees (pipeline stage 5,
//! `docs/design.md`).
//!
//! A result over the limit keeps its first 60 % and last 20 % (by bytes, cut on UTF-8
//! character boundaries) with a marker between them that says how much was cut. The marker
//! is information for the model: it knows it did not see everything and can ask for less.
//!
//! Also [`json_kind`]: how messages name the kind of a JSON value they did not expect.

/// What kind of JSON value `v` is, as a message says it: "null", "a boolean", "a number",
/// "a string", "an array", "an object".
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Default limit of the render text given to the model, in bytes.
pub const DEFAULT_MAX_TOOL_RESULT_BYTES: usize = 20_000;

/// Truncates `text` to about `max_bytes` (head 60 %, tail 20 %, marker between).
/// Returns the text and whether it was cut. Text within the limit is returned unchanged.
pub fn truncate_render(text: &str, max_bytes: usize) -> (String, bool) {
    if text.len() <= max_bytes {
        return (text.to_string(), false);
    }
    let head_end = floor_char_boundary(text, max_bytes * 6 / 10);
    let tail_start = ceil_char_boundary(text, text.len() - max_bytes * 2 / 10);
    let head = &text[..head_end];
    let tail = &text[tail_start.max(head_end)..];
    let cut = text.len() - head.len() - tail.len();
    let marker = format!(
        "\n...[truncated: {cut} of {total} bytes omitted; showing the first {h} and last {t} bytes. \
         Ask for a smaller range to see the rest]...\n",
        total = text.len(),
        h = head.len(),
        t = tail.len(),
    );
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len());
    out.push_str(head);
    out.push_str(&marker);
    out.push_str(tail);
    (out, true)
}

/// The longest prefix of `s` of at most `max_bytes` bytes that ends on a character
/// boundary (a bound on text from outside that must stay valid UTF-8).
pub fn head(s: &str, max_bytes: usize) -> &str {
    &s[..floor_char_boundary(s, max_bytes)]
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        assert_eq!(truncate_render("hello", 10), ("hello".to_string(), false));
    }

    #[test]
    fn long_text_keeps_head_and_tail_with_a_marker() {
        let text: String = (0..10_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let (out, cut) = truncate_render(&text, 1_000);
        assert!(cut);
        assert!(out.starts_with(&text[..600]));
        assert!(out.ends_with(&text[text.len() - 200..]));
        assert!(
            out.contains("[truncated: 9200 of 10000 bytes omitted"),
            "{out}"
        );
        assert!(out.len() < 1_000 + 200);
    }

    #[test]
    fn cuts_on_char_boundaries() {
        let text = "é".repeat(5_000); // 2 bytes each
        let (out, cut) = truncate_render(&text, 1_001);
        assert!(cut);
        // Both halves are valid UTF-8 runs of 'é' (the String type guarantees validity;
        // check that nothing was mangled into replacement characters).
        assert!(!out.contains('\u{FFFD}'));
        assert!(out.starts_with("éé") && out.ends_with("éé"));
    }
}
