//! The text of a definition as the rules read it: every string a model or client is
//! shown ([`toolhost_core::tools::shown`]: the description, the title and annotations' title, and
//! every string and key of the parameter and output schemas), a normalised form that
//! phrase rules match on, and [`excerpt`], the only way a message quotes the definition.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

use super::schema::Walk;
use toolhost_core::tools::escape;
use toolhost_core::tools::shown::{ShownTool, strings};

/// Whether `c` hides or reorders text, or steers a terminal (see [`crate::hidden`]): what
/// `tools::escape` escapes for review ([`escape::is_terminal_unsafe`] and
/// [`escape::is_invisible`]), but tab and newline.
pub fn is_hidden(c: char) -> bool {
    c != '\n' && c != '\t' && (escape::is_terminal_unsafe(c) || escape::is_invisible(c))
}

/// One string of a definition and where it is.
#[derive(Debug, Clone)]
pub struct Text<'a> {
    /// `description`, `title`, `annotations.title`, `parameters#/json/pointer`,
    /// `outputSchema#/json/pointer` or `icons/N`; an object key's location ends in
    /// ` (key)`.
    pub location: String,
    /// The text as the source gave it.
    pub raw: Cow<'a, str>,
    /// Whether it is an object key (a property name, an `x-*` key).
    pub is_key: bool,
}

/// Every string of `def` a model or client is shown, with its location, in a fixed order
/// (the shown value's keys sorted, depth first), and why the reading stopped early, if it
/// did (a definition too large or too deep to read whole: [`toolhost_core::tools::shown::strings`]).
/// The tool's name (the `names` rules read it) and its permissions (named by the host)
/// are not among them; nor is a `$schema` dialect URL.
pub fn texts<'a>(def: &'a ShownTool, _walk: &Walk<'a>) -> (Vec<Text<'a>>, Option<String>) {
    let value = def.to_value();
    let all = strings(&value);
    let mut out = Vec::new();
    for s in &all.items {
        let mut parts = s.pointer.splitn(3, '/').skip(1);
        let (field, rest) = (parts.next().unwrap_or(""), parts.next());
        let location = match (field, rest) {
            // The shown value's own field names are the host's, not the source's.
            (_, None) if s.is_key => continue,
            ("name" | "permissions", _) => continue,
            ("annotations", Some("title")) if s.is_key => continue,
            ("annotations", Some("title")) => "annotations.title".to_string(),
            ("parameters" | "outputSchema", Some(rest)) => {
                if !s.is_key && rest.ends_with("$schema") && s.text.contains("json-schema.org/") {
                    continue;
                }
                format!("{field}#/{rest}")
            }
            ("icons", Some(i)) => format!("icons/{i}"),
            (f, None) => f.to_string(),
            (f, Some(rest)) => format!("{f}/{rest}"),
        };
        out.push(Text {
            location: if s.is_key {
                format!("{location} (key)")
            } else {
                location
            },
            raw: Cow::Owned(s.text.to_string()),
            is_key: s.is_key,
        });
    }
    (out, all.cut)
}

/// The form phrase rules match on: hidden characters dropped (so `ig\u{200b}nore` reads
/// `ignore`), Unicode tag characters decoded to the ASCII they spell (set apart by spaces,
/// so text smuggled that way is read too), compatibility forms folded (NFKC: fullwidth
/// `ｉｇｎｏｒｅ` reads `ignore`), every run of whitespace or control characters made one
/// space, and the ends trimmed.
pub fn normalize(raw: &str) -> String {
    let mut decoded = String::with_capacity(raw.len());
    let mut in_tags = false;
    for c in raw.chars() {
        if let Some(a) = tag_ascii(c) {
            if !in_tags {
                decoded.push(' ');
                in_tags = true;
            }
            decoded.push(a);
            continue;
        }
        if in_tags {
            decoded.push(' ');
            in_tags = false;
        }
        if c.is_control() {
            decoded.push(' ');
        } else if !is_hidden(c) {
            decoded.push(c);
        }
    }
    let folded: String = decoded.nfkc().collect();
    let mut out = String::with_capacity(folded.len());
    for word in folded.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The ASCII character a Unicode tag character (U+E0020–U+E007E) stands for.
pub fn tag_ascii(c: char) -> Option<char> {
    let v = c as u32;
    if (0xE0020..=0xE007E).contains(&v) {
        char::from_u32(v - 0xE0000)
    } else {
        None
    }
}

/// The longest excerpt a message quotes, in characters.
pub const EXCERPT_CHARS: usize = 80;

/// Quotes untrusted text in a message: at most [`EXCERPT_CHARS`] characters (an ellipsis
/// marks a cut), on one line, with every character that could hide text or steer a
/// terminal shown as an escape (`\u{200b}`, `\x1b`, `\n`: `tools::escape::reveal_line`).
pub fn excerpt(s: &str) -> String {
    let mut cut: String = s.chars().take(EXCERPT_CHARS).collect();
    if s.chars().nth(EXCERPT_CHARS).is_some() {
        cut.push('…');
    }
    toolhost_core::tools::escape::reveal_line(&cut).into_owned()
}

/// The part of `text` around byte range `start..end` (a match in it): up to 30
/// characters either side, on char boundaries.
pub fn around(text: &str, start: usize, end: usize) -> &str {
    let before = text[..start]
        .char_indices()
        .rev()
        .nth(29)
        .map_or(0, |(i, _)| i);
    let after = text[end..]
        .char_indices()
        .nth(30)
        .map_or(text.len(), |(i, _)| end + i);
    &text[before..after]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn texts_are_every_string_and_key_a_model_or_client_is_shown() {
        let def = ShownTool::new(
            "t",
            "Top.",
            json!({"type": "object", "title": "T", "properties": {
                "a": {"type": "string", "description": "A.", "enum": ["x", 1, "y"],
                      "default": {"k": "x"}, "examples": ["z"]},
                "b": {"type": "integer", "default": 3}
            }}),
            vec!["read".into()],
        )
        .with_display(
            Some("Title".into()),
            Some("Ann".into()),
            Some(
                json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                        "x-hint": "h"}),
            ),
            vec![],
        );
        let walk = super::super::schema::walk(&def.parameters);
        let (texts, cut) = texts(&def, &walk);
        assert_eq!(cut, None);
        let got: Vec<(String, String)> = texts
            .into_iter()
            .map(|t| (t.location, t.raw.into_owned()))
            .collect();
        let want: Vec<(&str, &str)> = vec![
            ("title", "Title"),
            ("annotations.title", "Ann"),
            ("description", "Top."),
            ("parameters#/properties (key)", "properties"),
            ("parameters#/title (key)", "title"),
            ("parameters#/type (key)", "type"),
            ("parameters#/properties/a (key)", "a"),
            ("parameters#/properties/b (key)", "b"),
            ("parameters#/properties/a/default (key)", "default"),
            ("parameters#/properties/a/description (key)", "description"),
            ("parameters#/properties/a/enum (key)", "enum"),
            ("parameters#/properties/a/examples (key)", "examples"),
            ("parameters#/properties/a/type (key)", "type"),
            ("parameters#/properties/a/default/k (key)", "k"),
            ("parameters#/properties/a/default/k", "x"),
            ("parameters#/properties/a/description", "A."),
            ("parameters#/properties/a/enum/0", "x"),
            ("parameters#/properties/a/enum/2", "y"),
            ("parameters#/properties/a/examples/0", "z"),
            ("parameters#/properties/a/type", "string"),
            ("parameters#/properties/b/default (key)", "default"),
            ("parameters#/properties/b/type (key)", "type"),
            ("parameters#/properties/b/type", "integer"),
            ("parameters#/title", "T"),
            ("parameters#/type", "object"),
            ("outputSchema#/$schema (key)", "$schema"),
            ("outputSchema#/x-hint (key)", "x-hint"),
            ("outputSchema#/x-hint", "h"),
        ];
        let want: Vec<(String, String)> = want
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn normalize_reads_through_hiding_tricks() {
        assert_eq!(
            normalize("ig\u{200b}nore  all\n\tprevious"),
            "ignore all previous"
        );
        assert_eq!(normalize("ｉｇｎｏｒｅ"), "ignore");
        let smuggled: String = "hi you"
            .chars()
            .map(|c| char::from_u32(c as u32 + 0xE0000).unwrap())
            .collect();
        assert_eq!(normalize(&format!("Adds{smuggled}.")), "Adds hi you .");
        assert_eq!(normalize("a\u{1b}[2Jb"), "a [2Jb");
    }

    #[test]
    fn excerpts_are_short_one_line_and_show_hidden_characters() {
        assert_eq!(
            excerpt("a\u{200b}b\u{202e}c\n\u{1b}"),
            "a\\u{200b}b\\u{202e}c\\n\\x1b"
        );
        let long = "x".repeat(500);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT_CHARS + 1);
        assert_eq!(around("0123456789", 4, 5), "0123456789");
        let long = format!("{}needle{}", "é".repeat(100), "ü".repeat(100));
        let start = long.find("needle").unwrap();
        let part = around(&long, start, start + 6);
        assert_eq!(part.chars().count(), 30 + 6 + 30);
    }
}
