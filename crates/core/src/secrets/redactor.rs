//! [`Redactor`]: exact-match replacement of secret values with `[redacted: KEY]`.
//!
//! One Aho-Corasick automaton (leftmost-longest, so a value that contains another is
//! replaced whole) finds every value in one pass over the text; a tool with no secret
//! pays nothing (an empty redactor returns its input untouched).

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

use crate::tools::{ContentBlock, ToolError, ToolOutput};

/// The shortest value replaced: 8 bytes. A shorter value (`eu`, `true`, `1234`) cannot be
/// told from ordinary text, so replacing it would garble results without protecting it.
pub const MIN_REDACTED_LEN: usize = 8;

/// Replaces secret values with `[redacted: KEY]` (see the module docs).
#[derive(Clone, Default)]
pub struct Redactor {
    /// `None` when there is nothing to replace.
    matcher: Option<AhoCorasick>,
    /// The replacement of each pattern, by pattern index.
    replacements: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} values)", self.replacements.len())
    }
}

impl Redactor {
    /// A redactor of `(key, value)` pairs. Values shorter than [`MIN_REDACTED_LEN`] are
    /// left out; a value given under two keys is named by the first.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut values: Vec<&str> = Vec::new();
        let mut replacements = Vec::new();
        for (key, value) in pairs {
            if value.len() >= MIN_REDACTED_LEN && !values.contains(&value) {
                values.push(value);
                replacements.push(format!("[redacted: {key}]"));
            }
        }
        if values.is_empty() {
            return Redactor::default();
        }
        // Building fails only past the automaton's size limits, far above what the
        // bounded sources can hold (MAX_SECRET_BYTES each); then nothing could be
        // matched, so the values are replaced by a plain scan instead of not at all.
        match AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&values)
        {
            Ok(m) => Redactor {
                matcher: Some(m),
                replacements,
            },
            Err(e) => {
                tracing::error!("secret redaction: cannot build the matcher: {e}");
                Redactor {
                    matcher: None,
                    replacements: Vec::new(),
                }
            }
        }
    }

    /// Whether there is nothing to replace.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every secret value replaced.
    pub fn text<'s>(&self, text: &'s str) -> Cow<'s, str> {
        let Some(m) = &self.matcher else {
            return Cow::Borrowed(text);
        };
        if !m.is_match(text) {
            return Cow::Borrowed(text);
        }
        Cow::Owned(m.replace_all(text, &self.replacements))
    }

    /// Replaces in place, in an owned string.
    pub fn string(&self, s: &mut String) {
        if let Cow::Owned(new) = self.text(s) {
            *s = new;
        }
    }

    /// Replaces in every string and object key of a JSON value.
    pub fn value(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) => self.string(s),
            Value::Array(items) => items.iter_mut().for_each(|i| self.value(i)),
            Value::Object(map) => {
                let touched = map.keys().any(|k| matches!(self.text(k), Cow::Owned(_)));
                if touched {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.text(&k).into_owned(), v);
                    }
                }
                map.values_mut().for_each(|i| self.value(i));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// A tool's output with every secret value replaced: the canonical value, the
    /// render text, each content block and the `_meta`.
    pub fn output(&self, mut out: ToolOutput) -> ToolOutput {
        if self.is_empty() {
            return out;
        }
        self.value(&mut out.canonical);
        self.string(&mut out.render);
        for block in &mut out.content {
            self.block(block);
        }
        if let Some(meta) = out.meta.take() {
            let mut v = Value::Object(meta);
            self.value(&mut v);
            out.meta = match v {
                Value::Object(m) => Some(m),
                _ => None,
            };
        }
        out
    }

    /// A content block with every secret value replaced, in all its text (a block that
    /// would not read back after replacement is replaced by a text block saying so).
    fn block(&self, block: &mut ContentBlock) {
        let Ok(mut v) = serde_json::to_value(&*block) else {
            return;
        };
        let before = v.clone();
        self.value(&mut v);
        if v == before {
            return;
        }
        *block = serde_json::from_value(v)
            .unwrap_or_else(|_| ContentBlock::text("[a content block held a secret value]"));
    }

    /// A tool's error with every secret value replaced in its messages.
    pub fn error(&self, e: ToolError) -> ToolError {
        if self.is_empty() {
            return e;
        }
        let r = |s: String| self.text(&s).into_owned();
        match e {
            ToolError::ExecutionFailed(n, m) => ToolError::ExecutionFailed(n, r(m)),
            ToolError::Panicked(n, m) => ToolError::Panicked(n, r(m)),
            ToolError::InvalidArguments(n, m) => ToolError::InvalidArguments(n, r(m)),
            ToolError::PermissionDenied(n, m) => ToolError::PermissionDenied(n, r(m)),
            ToolError::McpError(m) => ToolError::McpError(r(m)),
            ToolError::McpNotInitialized(m) => ToolError::McpNotInitialized(r(m)),
            ToolError::McpTimeout(m) => ToolError::McpTimeout(r(m)),
            ToolError::LimitExceeded(n, m) => ToolError::LimitExceeded(n, r(m)),
            ToolError::InvalidDefinition(n, m) => ToolError::InvalidDefinition(n, r(m)),
            ToolError::Other(m) => ToolError::Other(r(m)),
            ToolError::Io(io) => {
                let text = io.to_string();
                match self.text(&text) {
                    Cow::Borrowed(_) => ToolError::Io(io),
                    Cow::Owned(t) => ToolError::Io(std::io::Error::new(io.kind(), t)),
                }
            }
            other @ (ToolError::NotFound(_)
            | ToolError::Timeout(..)
            | ToolError::Cancelled(_)
            | ToolError::DuplicateTool(_)) => other,
        }
    }
}
