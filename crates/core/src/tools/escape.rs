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
//!
//! Text under review (a tool definition an operator approves, a lint finding) must also
//! read the same to the operator as to a model, so [`reveal_line`] escapes the characters
//! that hide text without steering the terminal too ([`is_invisible`]: zero-width and
//! other default-ignorable characters, Unicode tag characters that spell ASCII
//! invisibly). Other output keeps them: emoji sequences are built from them.

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

/// Whether `c` hides text without steering a terminal: zero-width and other
/// default-ignorable characters (soft hyphen, U+034F, Mongolian and Khmer fillers,
/// U+200B–U+200D, U+2060–U+206F, U+FEFF, Hangul fillers, interlinear annotation
/// marks, U+1BCA0–U+1BCA3, U+1D173–U+1D17A), Braille blank, Unicode tag characters
/// (U+E0000–U+E007F, which spell ASCII invisibly) and the rest of plane 14 (variation
/// selectors U+E0100–U+E01EF). Variation selectors U+FE00–U+FE0F are not: emoji use them.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{034f}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2065}'
        | '\u{206a}'..='\u{206f}' | '\u{2800}' | '\u{3164}' | '\u{feff}' | '\u{ffa0}'
        | '\u{fff9}'..='\u{fffb}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e0fff}')
}

fn escape(s: &str, keep_newlines: bool, reveal: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_newlines && (c == '\n' || c == '\t');
    let unsafe_ = |c: char| is_terminal_unsafe(c) || (reveal && is_invisible(c));
    if !s.chars().any(|c| unsafe_(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !unsafe_(c) || keep(c) {
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
    escape(s, true, false)
}

/// Escapes untrusted text that must stay on one line (a table cell, a warning): like
/// [`escape_text`], and newlines and tabs become `\n` and `\t` too.
pub fn escape_line(s: &str) -> Cow<'_, str> {
    escape(s, false, false)
}

/// Escapes untrusted text under review (a definition being approved, a lint finding) for
/// one line: like [`escape_line`], and the characters that hide text
/// ([`is_invisible`]) become visible escapes (`\u{200b}`, `\u{e0041}`) too.
pub fn reveal_line(s: &str) -> Cow<'_, str> {
    escape(s, false, true)
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

    #[test]
    fn reveal_shows_invisible_characters_that_other_output_keeps() {
        let s = "a\u{200b}b\u{e0041}c\u{202e}\n❤\u{fe0f}";
        assert_eq!(
            reveal_line(s),
            "a\\u{200b}b\\u{e0041}c\\u{202e}\\n❤\u{fe0f}"
        );
        assert_eq!(escape_line(s), "a\u{200b}b\u{e0041}c\\u{202e}\\n❤\u{fe0f}");
        assert!(matches!(reveal_line("plain é ✓"), Cow::Borrowed(_)));
    }
}
