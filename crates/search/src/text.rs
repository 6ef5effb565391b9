//! The text of a tool that is indexed, and the tokenizer both documents and queries go
//! through.
//!
//! Identifiers are split into words before the `bm25` crate's tokenizer (Unicode word
//! boundaries, lower case, English stop words and stemming) sees them: `read_file`,
//! `read-file`, `readFile` and `ReadFILE` all become `read file`, so a query in words
//! finds a tool named in any convention, and a query naming the tool finds it too.
//! Unicode word boundaries keep `read_file` one word, hence the split here.

use bm25::{DefaultTokenizer, Language, Tokenizer};
use serde_json::Value;
use toolhost_core::tools::ToolEntry;

/// The most bytes of any one field of a definition (description, a parameter's
/// description…) that are indexed; the rest is cut at a character boundary.
pub const MAX_FIELD_BYTES: usize = 4096;

/// The most parameters of one tool (at any depth of nested objects, up to three levels)
/// whose names and descriptions are indexed.
pub const MAX_PARAMETERS: usize = 128;

/// How many times a tool's name and its title count in its document: a word of the name
/// says more of what the tool does than the same word in a long description.
const NAME_WEIGHT: usize = 3;
const TITLE_WEIGHT: usize = 2;

/// The tokenizer of tool documents and queries: identifiers split into words, then the
/// `bm25` crate's English tokenizer.
pub(crate) struct ToolTokenizer {
    words: DefaultTokenizer,
}

impl ToolTokenizer {
    pub(crate) fn new() -> Self {
        Self {
            words: DefaultTokenizer::new(Language::English),
        }
    }
}

impl Tokenizer for ToolTokenizer {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        self.words.tokenize(&split_identifiers(input_text))
    }
}

/// `text` with identifier separators (`_`, `-`, `.`, `/`, `:`) turned into spaces and a
/// space put where a lower-case letter or digit meets an upper-case one (`readFile`),
/// and before the last capital of a run followed by a lower-case letter (`HTTPServer`:
/// `HTTP Server`).
pub(crate) fn split_identifiers(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '_' | '-' | '.' | '/' | ':') {
            out.push(' ');
            continue;
        }
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(' ');
            }
        }
        out.push(c);
    }
    out
}

/// At most [`MAX_FIELD_BYTES`] of `s`, cut at a character boundary.
fn cut(s: &str) -> &str {
    toolhost_core::tools::render::head(s, MAX_FIELD_BYTES)
}

/// The document of one tool: the text its ranking is computed from (see the module
/// docs for what it holds and how it is weighed).
pub(crate) fn document(entry: &ToolEntry) -> String {
    let mut doc = String::new();
    let mut add = |text: &str, times: usize| {
        for _ in 0..times {
            doc.push_str(cut(text));
            doc.push('\n');
        }
    };
    add(entry.name(), NAME_WEIGHT);
    if let Some(title) = &entry.metadata().title {
        add(title, TITLE_WEIGHT);
    }
    add(entry.description(), 1);
    for tag in entry.tags().iter().take(MAX_PARAMETERS) {
        add(tag, 1);
    }
    add(entry.category(), 1);
    let mut budget = MAX_PARAMETERS;
    parameters(entry.parameters(), 0, &mut budget, &mut add);
    doc
}

/// Adds the names and descriptions of the properties of `schema` (and of nested object
/// properties and array items, up to three levels), at most `budget` of them.
fn parameters(schema: &Value, depth: usize, budget: &mut usize, add: &mut impl FnMut(&str, usize)) {
    if depth >= 3 {
        return;
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, prop) in props {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        add(name, 1);
        for key in ["title", "description"] {
            if let Some(text) = prop.get(key).and_then(Value::as_str) {
                add(text, 1);
            }
        }
        parameters(prop, depth + 1, budget, add);
        if let Some(items) = prop.get("items") {
            parameters(items, depth + 1, budget, add);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_words_in_every_convention() {
        for name in [
            "read_file",
            "read-file",
            "readFile",
            "read.file",
            "server:read/file",
        ] {
            let words = split_identifiers(name).to_lowercase();
            assert!(
                words.contains("read") && words.contains("file"),
                "{name}: {words}"
            );
        }
        assert_eq!(split_identifiers("HTTPServer"), "HTTP Server");
        assert_eq!(split_identifiers("getV2Time"), "get V2 Time");
        assert_eq!(split_identifiers("plain words stay"), "plain words stay");
        // Other scripts pass through untouched.
        assert_eq!(split_identifiers("読む_ファイル"), "読む ファイル");
    }

    #[test]
    fn the_tokenizer_stems_and_drops_stop_words() {
        let t = ToolTokenizer::new();
        assert_eq!(t.tokenize("Reads the files"), t.tokenize("read file"));
        assert_eq!(t.tokenize("read_file"), t.tokenize("READ FILE"));
    }

    #[test]
    fn long_fields_are_cut_at_a_character_boundary() {
        let s = "é".repeat(MAX_FIELD_BYTES);
        let c = cut(&s);
        assert!(c.len() <= MAX_FIELD_BYTES && c.len() > MAX_FIELD_BYTES - 2);
    }
}
