//! Who is asking: a wrapped server's requests to the user of `serve` (or of `toolhost call`)
//! are attributed to it in a form it cannot forge, so it cannot pass its questions off as
//! toolhost's own approvals (docs/mcp.md, "Who is asking").
//!
//! - Every line of a wrapped server's elicitation message starts with its tag, `[NAME] `
//!   (NAME is the operator's name for it in `[mcp.servers.NAME]`). The server's own text is
//!   escaped: control, bidi and zero-width characters become visible escapes, and a line
//!   of its text that opens with a bracket (a tag of its own, `[other]`) gets a backslash
//!   before it. A message that mentions toolhost says first that the server, not
//!   toolhost, is asking.
//! - toolhost's own approvals start with [`APPROVAL_MARKER`] (`toolhost approval:`), which
//!   no attributed message can: every one starts with `[`.
//! - `_meta` names the source for clients that render it: [`SOURCE_META_KEY`] is
//!   [`SOURCE_TOOLHOST`] on toolhost's approvals, [`SOURCE_MCP_SERVER`] (with
//!   [`SERVER_META_KEY`] naming the server) on a wrapped server's requests; any
//!   `io.toolhost/` key the server put in its own `_meta` is dropped.
//! - A form that asks for something that looks like a secret (a password, token, key,
//!   secret or credential, in a free-text field's name, title, description or `format`,
//!   or in the message of a form with a free-text field) is refused, unless the operator
//!   set `allow_secret_fields = true` for the server; then it passes, flagged.
//! - Sampling requests get the same `_meta` and a tagged `systemPrompt`; `roots/list`
//!   gets the `_meta`.
//!
//! The secret check is a heuristic over English words (a server can misspell "token");
//! the tag is the guarantee.

// Sampling is deprecated in rmcp (2026-07-28); 2025-11-25 servers use it.
#![allow(deprecated)]

use rmcp::model::{CreateMessageRequestParams, ElicitRequestParams, RequestMetaObject};
use serde_json::{Map, Value, json};
// `is_invisible`: the one list of zero-width, tag and other invisible characters (shared
// with `toolhost lint`) that can hide a word from a reader or from the checks here.
use toolhost_core::tools::escape::{escape_text, is_invisible};
use toolhost_core::tools::render::head;

/// How toolhost's own approval messages start; no wrapped server's message can.
pub const APPROVAL_MARKER: &str = "toolhost approval:";
/// The `_meta` key naming who asks: [`SOURCE_TOOLHOST`] or [`SOURCE_MCP_SERVER`].
pub const SOURCE_META_KEY: &str = "io.toolhost/source";
/// The `_meta` key naming the wrapped server that asks (beside [`SOURCE_MCP_SERVER`]).
pub const SERVER_META_KEY: &str = "io.toolhost/server";
/// [`SOURCE_META_KEY`] of toolhost's own approvals.
pub const SOURCE_TOOLHOST: &str = "toolhost";
/// [`SOURCE_META_KEY`] of a wrapped server's requests.
pub const SOURCE_MCP_SERVER: &str = "mcp-server";
/// The most bytes of a wrapped server's message passed on (before escaping).
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024;
/// The most lines of a wrapped server's message passed on.
pub const MAX_MESSAGE_LINES: usize = 64;

/// Why a wrapped server's request is not passed on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttributionError {
    /// The form asks for what looks like a secret, and the operator did not allow it.
    #[error(
        "MCP server '{server}' asked for what looks like a secret ({what}); toolhost does \
         not pass such forms on unless the operator sets `allow_secret_fields = true` \
         under [mcp.servers.{server}]"
    )]
    SecretFields {
        /// The server's name.
        server: String,
        /// What looked secret (field names, or "the message").
        what: String,
    },
    /// The request could not be rewritten (it does not serialise as MCP says).
    #[error("MCP server '{server}' sent a request toolhost cannot attribute: {reason}")]
    Malformed {
        /// The server's name.
        server: String,
        /// What went wrong.
        reason: String,
    },
}

impl From<AttributionError> for rmcp::ErrorData {
    fn from(e: AttributionError) -> Self {
        rmcp::ErrorData::invalid_request(e.to_string(), None)
    }
}

/// Attributes one wrapped server's requests.
#[derive(Debug, Clone)]
pub struct Attribution {
    server: String,
    allow_secret_fields: bool,
}

/// `[NAME]` for the server `name`: the name as it is when it is plain (letters, digits,
/// `_ . -`), else as a JSON string, so it cannot close the bracket itself.
pub fn tag(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if plain {
        format!("[{name}]")
    } else {
        format!(
            "[{}]",
            escape_line_all(&Value::String(name.into()).to_string())
        )
    }
}

/// Escapes a line's controls, newlines included, and invisible characters.
fn escape_line_all(s: &str) -> String {
    let s = toolhost_core::tools::escape::escape_line(s);
    escape_invisible(&s)
}

fn escape_invisible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Characters a line of the server's text may not open with: they could start a tag of
/// its own (`[other]`, or a look-alike bracket).
fn opens_like_a_tag(c: char) -> bool {
    matches!(
        c,
        '[' | '［'
            | '【'
            | '〔'
            | '〖'
            | '〘'
            | '〚'
            | '⟦'
            | '⦋'
            | '⁅'
            | '❲'
            | '('
            | '{'
            | '<'
    )
}

/// Whether `text` names toolhost (letters only, any case, ignoring what is between them:
/// `Tool-Host`, `t o o l h o s t`).
fn mentions_toolhost(text: &str) -> bool {
    let letters: String = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    letters.contains("toolhost")
}

/// The words of `text`, lower case: split at anything not a letter or digit and where a
/// lower-case letter meets an upper-case one (`apiKey` is `api`, `key`).
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parts of a word that mark a secret wherever they appear in it.
const SECRET_STEMS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "token",
    "secret",
    "credential",
    "apikey",
    "privatekey",
];
/// Whole words that mark a secret (as parts they are too common: "keyboard").
const SECRET_WORDS: &[&str] = &["key", "keys", "pwd", "pat", "otp"];

/// The first secret-looking word of `text`, if any.
pub fn secret_word(text: &str) -> Option<String> {
    let text: String = text.chars().filter(|c| !is_invisible(*c)).collect();
    words(&text)
        .into_iter()
        .find(|w| SECRET_STEMS.iter().any(|s| w.contains(s)) || SECRET_WORDS.contains(&w.as_str()))
}

/// Whether a form field lets the user type anything (a secret could go there): a string
/// without a fixed set of options, or a number.
fn free_entry(field: &Value) -> bool {
    match field.get("type").and_then(Value::as_str) {
        Some("string") => {
            field.get("enum").is_none()
                && field.get("oneOf").is_none()
                && field.get("anyOf").is_none()
        }
        Some("number" | "integer") => true,
        _ => false,
    }
}

impl Attribution {
    /// Attributes the requests of the server the operator named `server`; forms asking for
    /// secrets pass only when `allow_secret_fields`.
    pub fn new(server: impl Into<String>, allow_secret_fields: bool) -> Self {
        Self {
            server: server.into(),
            allow_secret_fields,
        }
    }

    /// The server's tag, `[NAME]`.
    pub fn tag(&self) -> String {
        tag(&self.server)
    }

    /// The `_meta` entries naming this server as the source.
    fn meta_entries(&self) -> [(String, Value); 2] {
        [
            (SOURCE_META_KEY.to_string(), json!(SOURCE_MCP_SERVER)),
            (SERVER_META_KEY.to_string(), json!(self.server)),
        ]
    }

    /// `meta` (the server's own `_meta`, if any) without `io.toolhost/` keys, with the
    /// source entries.
    fn meta(&self, meta: Option<&Value>) -> Value {
        let mut m: Map<String, Value> = meta
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !k.starts_with("io.toolhost/"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        m.extend(self.meta_entries());
        Value::Object(m)
    }

    /// A `_meta` naming this server, for requests that carry nothing else (`roots/list`).
    pub fn request_meta(&self) -> RequestMetaObject {
        let mut meta = RequestMetaObject::new();
        for (k, v) in self.meta_entries() {
            meta.0.insert(k, v);
        }
        meta
    }

    /// The server's `text` as shown to a person: every line tagged, its text escaped
    /// and neutralised (see the module docs), `notes` (toolhost's, in parentheses) first.
    pub fn message(&self, text: &str, notes: &[String]) -> String {
        let tag = self.tag();
        let mut cut = head(text, MAX_MESSAGE_BYTES).to_string();
        let mut notes = notes.to_vec();
        if mentions_toolhost(text) {
            notes.insert(
                0,
                format!(
                    "MCP server {tag} is asking this, not toolhost; toolhost's own \
                     approvals start with \"{APPROVAL_MARKER}\""
                ),
            );
        }
        if cut.len() < text.len() {
            cut.push_str(&format!("… ({} bytes in all)", text.len()));
        }
        let escaped = escape_invisible(&escape_text(&cut));
        let mut lines: Vec<String> = notes.iter().map(|n| format!("{tag} ({n})")).collect();
        let total = escaped.lines().count();
        for line in escaped.lines().take(MAX_MESSAGE_LINES) {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            let guard = if body.starts_with(opens_like_a_tag) {
                "\\"
            } else {
                ""
            };
            lines.push(
                format!("{tag} {indent}{guard}{body}")
                    .trim_end()
                    .to_string(),
            );
        }
        if total > MAX_MESSAGE_LINES {
            lines.push(format!(
                "{tag} … ({} more lines not shown)",
                total - MAX_MESSAGE_LINES
            ));
        }
        if lines.is_empty() {
            lines.push(tag);
        }
        lines.join("\n")
    }

    /// What in a form looks like a secret: its free-text fields whose name, title,
    /// description or `format` has a secret word, and its message when it has one and the
    /// form has a free-text string field.
    fn secrets_asked(&self, message: &str, schema: &Value) -> Vec<String> {
        let mut found = Vec::new();
        let props = schema.get("properties").and_then(Value::as_object);
        let mut any_free_string = false;
        for (name, field) in props.into_iter().flatten() {
            if !free_entry(field) {
                continue;
            }
            any_free_string |= field.get("type").and_then(Value::as_str) == Some("string");
            let texts = ["title", "description", "format"]
                .iter()
                .filter_map(|k| field.get(*k).and_then(Value::as_str));
            if std::iter::once(name.as_str())
                .chain(texts)
                .any(|t| secret_word(t).is_some())
            {
                found.push(format!(
                    "field {}",
                    escape_line_all(&json!(name).to_string())
                ));
            }
        }
        if any_free_string && let Some(w) = secret_word(message) {
            found.push(format!("the message says \"{}\"", escape_line_all(&w)));
        }
        found.truncate(8);
        found
    }

    /// A wrapped server's `elicitation/create`, attributed: the message tagged, the
    /// schema's texts escaped, `_meta` naming the server. A form asking for secrets is an
    /// error unless they are allowed (then it is flagged in the message).
    pub fn elicitation(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitRequestParams, AttributionError> {
        let malformed = |e: serde_json::Error| AttributionError::Malformed {
            server: self.server.clone(),
            reason: e.to_string(),
        };
        let mut v = serde_json::to_value(&params).map_err(malformed)?;
        let message = v
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut notes = Vec::new();
        if let Some(schema) = v.get_mut("requestedSchema") {
            let secrets = self.secrets_asked(&message, schema);
            if !secrets.is_empty() {
                let what = secrets.join(", ");
                if !self.allow_secret_fields {
                    return Err(AttributionError::SecretFields {
                        server: self.server.clone(),
                        what,
                    });
                }
                notes.push(format!(
                    "this form asks for what looks like a secret: {what}"
                ));
            }
            escape_schema_texts(schema);
        }
        let meta = self.meta(v.get("_meta"));
        if let Some(obj) = v.as_object_mut() {
            obj.insert("message".into(), json!(self.message(&message, &notes)));
            obj.insert("_meta".into(), meta);
        }
        serde_json::from_value(v).map_err(malformed)
    }

    /// A wrapped server's `sampling/createMessage`, attributed: `_meta` naming the server
    /// and its `systemPrompt` tagged (set to say who asks when it had none).
    pub fn sampling(&self, mut params: CreateMessageRequestParams) -> CreateMessageRequestParams {
        let prompt = match params.system_prompt.take() {
            Some(p) => self.message(&p, &[]),
            None => format!(
                "{} (MCP server {} asks for this completion through toolhost)",
                self.tag(),
                self.tag()
            ),
        };
        params.system_prompt = Some(prompt);
        let own = params
            .meta
            .take()
            .and_then(|m| serde_json::to_value(m).ok());
        let meta = self.meta(own.as_ref());
        params.meta = serde_json::from_value(meta).ok();
        params
    }
}

/// Escapes the texts a client shows of a form's fields (titles, descriptions, option
/// titles): control, bidi and invisible characters, newlines included.
fn escape_schema_texts(schema: &mut Value) {
    fn walk(v: &mut Value, depth: usize) {
        if depth > 8 {
            return;
        }
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    match x {
                        Value::String(s) if matches!(k.as_str(), "title" | "description") => {
                            *s = escape_line_all(s);
                        }
                        _ => walk(x, depth + 1),
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, depth + 1)),
            _ => {}
        }
    }
    walk(schema, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(message: &str, schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form", "message": message, "requestedSchema": schema,
            "_meta": {"io.toolhost/source": "toolhost", "other": 1}
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn name_schema() -> Value {
        json!({"type": "object", "properties": {"name": {"type": "string", "title": "Name\u{1b}[2J"}}})
    }

    #[test]
    fn every_line_is_tagged_and_cannot_forge_a_tag_or_the_marker() {
        let a = Attribution::new("ref", false);
        let m = a.message(
            "[other] hi\n  【x】 there\r\u{1b}[2J\n\u{200b}toolhost approval: ok",
            &[],
        );
        for line in m.lines() {
            assert!(line.starts_with("[ref] "), "{m}");
            assert!(!line.starts_with(APPROVAL_MARKER));
        }
        assert!(m.contains("[ref] \\[other] hi"), "{m}");
        assert!(m.contains("[ref]   \\【x】"), "{m}");
        assert!(!m.contains('\u{1b}') && !m.contains('\r') && !m.contains('\u{200b}'));
        assert!(m.contains("not toolhost"), "{m}");
        assert_eq!(
            a.message("Your name?", &[]),
            "[ref] Your name?",
            "a plain message only gets the tag"
        );
        assert_eq!(tag("my server]"), "[\"my server]\"]");
        assert_eq!(tag("a\nb"), "[\"a\\nb\"]");
    }

    #[test]
    fn forms_are_attributed_and_secret_ones_refused() {
        let a = Attribution::new("ref", false);
        let out = serde_json::to_value(a.elicitation(form("Name?", name_schema())).unwrap())
            .unwrap_or_default();
        assert_eq!(out["message"], "[ref] Name?");
        assert_eq!(out["_meta"][SOURCE_META_KEY], SOURCE_MCP_SERVER);
        assert_eq!(out["_meta"][SERVER_META_KEY], "ref");
        assert_eq!(out["_meta"]["other"], 1);
        assert_eq!(
            out["requestedSchema"]["properties"]["name"]["title"],
            "Name\\x1b[2J"
        );

        let secret = |props: Value, message: &str| {
            a.elicitation(form(
                message,
                json!({"type": "object", "properties": props}),
            ))
        };
        for props in [
            json!({"githubToken": {"type": "string"}}),
            json!({"x": {"type": "number", "description": "Your bank PIN or password"}}),
            json!({"x": {"type": "string", "description": "Your API key"}}),
            json!({"x": {"type": "string", "title": "Secret\u{200b}"}}),
        ] {
            assert!(
                matches!(
                    secret(props.clone(), "Hi"),
                    Err(AttributionError::SecretFields { .. })
                ),
                "{props}"
            );
        }
        // The message asks, the field is neutral.
        assert!(secret(json!({"answer": {"type": "string"}}), "paste your token").is_err());
        // Not secret: a keyboard, an enum, a boolean beside a message naming a key.
        assert!(secret(json!({"keyboard": {"type": "string"}}), "Hi").is_ok());
        assert!(
            secret(
                json!({"kind": {"type": "string", "enum": ["rsa", "ed25519"]}}),
                "Which key type?"
            )
            .is_ok()
        );
        // Allowed by the operator: passed on, flagged.
        let allowed = Attribution::new("ref", true)
            .elicitation(form(
                "Token?",
                json!({"type": "object", "properties": {"token": {"type": "string"}}}),
            ))
            .unwrap();
        let v = serde_json::to_value(allowed).unwrap_or_default();
        assert!(
            v["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("[ref] (this form asks for what looks like a secret: field \"token\""),
            "{v}"
        );
    }

    #[test]
    fn words_split_camel_case_and_find_secrets() {
        assert_eq!(
            words("apiKey my_PASSWORD"),
            ["api", "key", "my", "password"]
        );
        assert_eq!(secret_word("GitHub token please").as_deref(), Some("token"));
        assert_eq!(secret_word("monkey keyboard"), None);
    }
}
