//! Escaping untrusted text for a terminal.
//!
//! Tool descriptions, render text and error messages come from plugin authors and MCP
//! servers, who are not trusted. Printed raw, an ESC starts an ANSI/OSC sequence that can
//! clear the screen, move the cursor to overwrite earlier lines, set the window title or
//! (on some terminals) write to the clipboard; a CR rewrites the start of a line; a bidi
//! override reorders what the reader sees. So every character that can steer a terminal is
//! shown as a visible escape instead:
//!
//! - C0 controls (U+0000–U+001F, including ESC and CR), DEL (U+007F) and C1 controls
//!   (U+0080–U+009F, e.g. the 8-bit CSI U+009B) become `\xNN` (`\x1b`, `\r`, `\x7f`,
//!   `\u{9b}` for C1);
//! - bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and the
//!   invisible direction marks (U+200E, U+200F, U+061C) become `\u{202e}` and the like;
//! - the Unicode line and paragraph separators (U+2028, U+2029), which some terminals and
//!   most editors break a line at, become `\u{2028}`, `\u{2029}`, so a line of untrusted
//!   text cannot start another line that looks like the host's own;
//! - `\n` and `\t` are kept by [`escape_text`] (multi-line output) and escaped by
//!   [`escape_line`] (one table cell, one log line).
//!
//! A backslash is left alone: the escapes are for a human reader, not a round trip.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` can steer a terminal or hide text (see the module docs). `\n` and `\t`
/// count as unsafe here; [`escape_text`] lets them through on purpose.
pub fn is_terminal_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        | '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{2028}' | '\u{2029}')
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_newlines && (c == '\n' || c == '\t');
    if !s.chars().any(|c| is_terminal_unsafe(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !is_terminal_unsafe(c) || keep(c) {
            out.push(c);
            continue;
        }
        // Writing to a String cannot fail.
        let _ = match c {
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            '\t' => out.write_str("\\t"),
            c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

/// Escapes untrusted multi-line text for a terminal: newlines and tabs are kept, every
/// other control and bidi character becomes a visible escape (`\x1b`, `\r`, `\u{202e}`).
pub fn escape_text(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

/// Escapes untrusted text that must stay on one line (a table cell, a warning): like
/// [`escape_text`], and newlines and tabs become `\n` and `\t` too.
pub fn escape_line(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_become_visible() {
        let s = "a\x1b[2J\x1b]0;t\x07b\rc\u{9b}d\x7fe\u{202e}f\u{2066}g\u{0}";
        let e = escape_text(s);
        assert_eq!(
            e,
            "a\\x1b[2J\\x1b]0;t\\x07b\\rc\\u{9b}d\\x7fe\\u{202e}f\\u{2066}g\\x00"
        );
        assert!(!e.chars().any(is_terminal_unsafe));
    }

    #[test]
    fn newlines_are_kept_in_text_and_escaped_in_lines() {
        assert_eq!(escape_text("a\nb\tc"), "a\nb\tc");
        assert_eq!(escape_line("a\nb\tc"), "a\\nb\\tc");
        assert!(matches!(escape_line("plain é ✓"), Cow::Borrowed(_)));
        // The Unicode line and paragraph separators never break a line, in either form.
        assert_eq!(escape_text("a\u{2028}b\u{2029}"), "a\\u{2028}b\\u{2029}");
        assert_eq!(escape_line("a\u{2028}b"), "a\\u{2028}b");
    }
}
