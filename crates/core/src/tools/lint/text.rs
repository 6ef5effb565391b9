//! The text of a definition as the rules read it: every string a model is shown (the
//! description, and the descriptions, titles, enum values, defaults and examples in the
//! parameter schema), a normalised form that phrase rules match on, and [`excerpt`], the
//! only way a message quotes the definition.

use unicode_normalization::UnicodeNormalization;

use super::hidden::is_hidden;
use super::schema::Walk;
use crate::tools::definition::FunctionDefinition;

/// One string of a definition and where it is.
#[derive(Debug, Clone)]
pub struct Text<'a> {
    /// `description` or `parameters#/json/pointer`.
    pub location: String,
    /// The text as the source gave it.
    pub raw: &'a str,
}

/// Every string of `def` a model is shown, with its location: the description first, then
/// per schema node (in `walk`'s order) its `title`, `description`, string `enum` and
/// `examples` items, and string `default` and `const`.
pub fn texts<'a>(def: &'a FunctionDefinition, walk: &Walk<'a>) -> Vec<Text<'a>> {
    let mut out = vec![Text {
        location: "description".into(),
        raw: &def.description,
    }];
    for node in &walk.nodes {
        let Some(obj) = node.schema.as_object() else {
            continue;
        };
        for key in ["title", "description", "default", "const"] {
            if let Some(s) = obj.get(key).and_then(|v| v.as_str()) {
                out.push(Text {
                    location: format!("parameters#{}/{key}", node.pointer),
                    raw: s,
                });
            }
        }
        for key in ["enum", "examples"] {
            let Some(items) = obj.get(key).and_then(|v| v.as_array()) else {
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                if let Some(s) = item.as_str() {
                    out.push(Text {
                        location: format!("parameters#{}/{key}/{i}", node.pointer),
                        raw: s,
                    });
                }
            }
        }
    }
    out
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
    crate::tools::escape::reveal_line(&cut).into_owned()
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
    fn texts_are_the_description_and_every_schema_string_a_model_sees() {
        let def = FunctionDefinition {
            name: "t".into(),
            description: "Top.".into(),
            parameters: json!({"type": "object", "title": "T", "properties": {
                "a": {"type": "string", "description": "A.", "enum": ["x", 1, "y"],
                      "default": "x", "examples": ["z"]},
                "b": {"type": "integer", "default": 3}
            }}),
        };
        let walk = super::super::schema::walk(&def.parameters);
        let got: Vec<(String, &str)> = texts(&def, &walk)
            .into_iter()
            .map(|t| (t.location, t.raw))
            .collect();
        assert_eq!(
            got,
            vec![
                ("description".to_string(), "Top."),
                ("parameters#/title".into(), "T"),
                ("parameters#/properties/a/description".into(), "A."),
                ("parameters#/properties/a/default".into(), "x"),
                ("parameters#/properties/a/enum/0".into(), "x"),
                ("parameters#/properties/a/enum/2".into(), "y"),
                ("parameters#/properties/a/examples/0".into(), "z"),
            ]
        );
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
