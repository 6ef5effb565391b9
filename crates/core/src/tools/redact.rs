//! Secret redaction: the one place that decides what counts as a secret, used by the audit
//! log ([`JsonlAuditSink`](crate::tools::events::JsonlAuditSink)) and by the argument
//! validation errors of the registry (which reach the model, the audit and the terminal).
//!
//! A value is secret because of **where** it sits or **what it looks like**:
//!
//! - **by key**: the key is split into words (at `_`, `-`, `.`, spaces and camelCase
//!   humps) and lower-cased. It is secret when a word is one of [`SECRET_KEY_WORDS`]
//!   (`pass`, `pwd`, `auth`, `bearer`, `private`, `session`, `key`, ...) or the words
//!   joined contain one of [`SECRET_KEY_MARKERS`] (`password`, `token`, `secret`,
//!   `apikey`, `credential`, `authorization`, `cookie`, ...). So `api_key`, `apiKey`,
//!   `x-api-key`, `client_secret`, `access_token` and `Set-Cookie` are all secret. The
//!   whole value under such a key (whatever its type) becomes `"[REDACTED]"`.
//! - **by pair**: header lists given as `[name, value]` arrays or `{"name": .., "value": ..}`
//!   objects redact the value when the name is a secret key (`["Authorization", "Bearer x"]`).
//! - **by shape**, anywhere in any string: `Bearer`/`Basic`/`Token` credentials, JWTs
//!   (`eyJ...` with three dot-separated parts), credentials inside URLs
//!   (`https://user:pw@host` keeps the host: `https://[REDACTED]@host`), PEM private keys,
//!   provider tokens with a known prefix (`sk-`, `ghp_`, `xoxb-`, `AKIA`, ...) and long
//!   high-entropy tokens (32+ characters mixing upper case, lower case and digits).
//! - **by query parameter**, in every URL inside any string: after a `?` or a `#` (query
//!   and fragment: OAuth puts tokens in both), each `name=value` parameter (separated by
//!   `&`, `;`, `?` or `#`, up to the end of the URL) whose percent-decoded name is secret
//!   keeps its name and loses its value: `?access_token=[REDACTED]&user=ann`. Names follow
//!   the key rules above, plus [`SECRET_QUERY_WORDS`] (`sig`, `signature`: signed URLs)
//!   and a name that is exactly `code` (the OAuth authorization code); see
//!   [`is_secret_query_key`]. Every occurrence of a repeated parameter is hidden.
//!
//! [`scrub_urls`] applies only the two URL rules (user-info and query parameters): the CLI
//! passes its log lines and error messages through it, since they quote URLs that
//! toolhost did not write (configured MCP servers, upstream errors).
//!
//! Redaction errs on the side of hiding: a harmless `key` or `session` field is hidden too.
//! A redacted value is never echoed, not even in an error message (see
//! [`value_has_secrets`], which the validation errors use to mask the offending value).

use std::borrow::Cow;

use serde_json::Value;

mod urls;

pub use urls::{is_secret_query_key, scrub_urls};
use urls::{scrub_url_query, scrub_url_userinfo};

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Substrings of a normalised key (words joined, lower case) that mark it secret.
pub const SECRET_KEY_MARKERS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "authorization",
    "authentication",
    "cookie",
    "sessionid",
    "signingkey",
];

/// Whole words of a key that mark it secret.
pub const SECRET_KEY_WORDS: &[&str] = &[
    "pass", "pwd", "pw", "auth", "oauth", "bearer", "private", "session", "key", "pin", "otp",
    "sid", "jwt", "csrf", "xsrf", "cvv", "mfa", "totp",
];

/// Whole words of a URL query parameter name that mark it secret, on top of the key rules
/// ([`SECRET_KEY_WORDS`], [`SECRET_KEY_MARKERS`]): the signature of a signed URL (`sig` of
/// Azure SAS, `Signature` of CloudFront, `X-Amz-Signature`, `X-Goog-Signature`). They stay
/// out of the key rules because an argument named `signature` is as often a function's.
pub const SECRET_QUERY_WORDS: &[&str] = &["sig", "signature"];

/// Prefixes of provider tokens (OpenAI/Stripe `sk-`/`sk_live_`, GitHub `ghp_` & co, Slack
/// `xox?-`, GitLab `glpat-`, AWS `AKIA`/`ASIA`, Google `AIza`, npm, Hugging Face, PyPI).
/// A word starting with one of them and at least 16 characters long is secret.
pub const SECRET_TOKEN_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxr-",
    "xoxs-",
    "xapp-",
    "glpat-",
    "AKIA",
    "ASIA",
    "AIza",
    "npm_",
    "hf_",
    "pypi-",
];

/// The words of a key: split at non-alphanumerics and at lower→upper camelCase humps,
/// lower-cased.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Whether a key (an argument name, a header name) names a secret. See the module docs.
pub fn is_secret_key(key: &str) -> bool {
    let words = key_words(key);
    if words.iter().any(|w| SECRET_KEY_WORDS.contains(&w.as_str())) {
        return true;
    }
    let joined: String = words.concat();
    SECRET_KEY_MARKERS.iter().any(|m| joined.contains(m))
}

/// Whether the whole string `s` looks like a credential (or contains one): true exactly
/// when [`scrub_text`] would change it.
pub fn is_secret_value(s: &str) -> bool {
    matches!(scrub_text(s), Cow::Owned(_))
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '+' | '/' | '=' | '-')
}

fn is_jwt(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    word.starts_with("eyJ")
        && word.len() >= 20
        && parts.len() == 3
        && parts[..2].iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '=')
        })
}

fn has_token_prefix(word: &str) -> bool {
    word.len() >= 16 && SECRET_TOKEN_PREFIXES.iter().any(|p| word.starts_with(p))
}

/// 32+ characters mixing upper case, lower case and digits with high Shannon entropy (at
/// least 4 bits per character): API keys and random secrets, but not hex digests, UUIDs,
/// words or paths.
fn is_high_entropy(word: &str) -> bool {
    if word.len() < 32 {
        return false;
    }
    let (mut upper, mut lower, mut digit) = (false, false, false);
    let mut counts = [0u32; 128];
    for b in word.bytes() {
        upper |= b.is_ascii_uppercase();
        lower |= b.is_ascii_lowercase();
        digit |= b.is_ascii_digit();
        counts[usize::from(b & 0x7f)] += 1;
    }
    if !(upper && lower && digit) {
        return false;
    }
    let n = word.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum();
    entropy >= 4.0
}

fn is_secret_word(word: &str) -> bool {
    let word = word.trim_end_matches(['.', ',']);
    is_jwt(word) || has_token_prefix(word) || is_high_entropy(word)
}

/// A credential after an auth scheme word: 8+ token characters, not all lower-case letters
/// (so "basic arithmetic" in prose stays).
fn is_scheme_credential(word: &str) -> bool {
    word.len() >= 8 && !word.chars().all(|c| c.is_ascii_lowercase())
}

/// Replaces PEM private key blocks.
fn scrub_pem(s: &str) -> Cow<'_, str> {
    const BEGIN: &str = "-----BEGIN ";
    if !s.contains("PRIVATE KEY") {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut changed = false;
    while let Some(i) = rest.find(BEGIN) {
        let header_end = rest[i + BEGIN.len()..]
            .find("-----")
            .map(|j| i + BEGIN.len() + j + 5);
        let Some(header_end) = header_end else { break };
        if !rest[i..header_end].contains("PRIVATE KEY") {
            out.push_str(&rest[..header_end]);
            rest = &rest[header_end..];
            continue;
        }
        out.push_str(&rest[..i]);
        out.push_str(REDACTED);
        changed = true;
        // Up to the matching END line, or to the end of the text if it never comes.
        rest = match rest[header_end..].find("-----END ") {
            Some(j) => {
                let end = header_end + j + "-----END ".len();
                match rest[end..].find("-----") {
                    Some(k) => &rest[end + k + 5..],
                    None => "",
                }
            }
            None => "",
        };
    }
    if !changed {
        return Cow::Borrowed(s);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// Replaces credentials found anywhere in free text (see the module docs for the shapes):
/// auth-scheme credentials, JWTs, provider tokens, high-entropy tokens, URL user-info and
/// PEM private keys. Returns the text borrowed when nothing was found.
///
/// One pass can expose a new match to the next (a replaced token can complete a URL's
/// user-info), so passes repeat until nothing changes (at most four): scrubbing scrubbed
/// text changes nothing.
pub fn scrub_text(s: &str) -> Cow<'_, str> {
    let mut out = match scrub_once(s) {
        Cow::Borrowed(_) => return Cow::Borrowed(s),
        Cow::Owned(o) => o,
    };
    for _ in 0..3 {
        match scrub_once(&out) {
            Cow::Borrowed(_) => break,
            Cow::Owned(o) => out = o,
        }
    }
    Cow::Owned(out)
}

fn scrub_once(s: &str) -> Cow<'_, str> {
    let pem = scrub_pem(s);
    let url = match scrub_url_userinfo(&pem) {
        Cow::Owned(o) => Some(o),
        Cow::Borrowed(_) => None,
    };
    let url: Cow<'_, str> = match url {
        Some(o) => Cow::Owned(o),
        None => pem,
    };
    let url: Cow<'_, str> = match scrub_url_query(&url) {
        Cow::Owned(o) => Cow::Owned(o),
        Cow::Borrowed(_) => url,
    };
    let mut out = String::new();
    let mut changed = false;
    let mut last = 0;
    // Where a credential would start after an auth-scheme word and one space.
    let mut credential_at = None;
    let text: &str = &url;
    let mut iter = text.char_indices().peekable();
    while let Some((start, c)) = iter.next() {
        if !is_token_char(c) {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, c)) = iter.peek() {
            if !is_token_char(c) {
                break;
            }
            end = i + c.len_utf8();
            iter.next();
        }
        let word = &text[start..end];
        let secret = if credential_at == Some(start) {
            is_scheme_credential(word) || is_secret_word(word)
        } else {
            is_secret_word(word)
        };
        credential_at = matches!(
            word.to_ascii_lowercase().as_str(),
            "bearer" | "basic" | "token" | "digest"
        )
        .then_some(end + 1)
        .filter(|_| text[end..].starts_with(' '));
        if secret {
            out.push_str(&text[last..start]);
            out.push_str(REDACTED);
            last = end;
            changed = true;
        }
    }
    if !changed {
        return url;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// Returns `value` with every secret replaced by `"[REDACTED]"`, at any depth: values of
/// secret keys, values of secret `[name, value]` / `{name, value}` pairs, and credentials
/// inside strings (see the module docs).
pub fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let pair_name = ["name", "key", "header"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str));
            let secret_pair = pair_name.is_some_and(is_secret_key);
            Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let hide = is_secret_key(k) || (secret_pair && k == "value");
                        if hide {
                            (k.clone(), Value::String(REDACTED.into()))
                        } else {
                            (k.clone(), redact_value(v))
                        }
                    })
                    .collect(),
            )
        }
        Value::Array(items) => {
            if let [Value::String(name), _] = items.as_slice()
                && is_secret_key(name)
            {
                return Value::Array(vec![
                    Value::String(name.clone()),
                    Value::String(REDACTED.into()),
                ]);
            }
            Value::Array(items.iter().map(redact_value).collect())
        }
        Value::String(s) => match scrub_text(s) {
            Cow::Borrowed(_) => value.clone(),
            Cow::Owned(o) => Value::String(o),
        },
        other => other.clone(),
    }
}

/// Whether [`redact_value`] would hide anything in `value`.
pub fn value_has_secrets(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            let pair_name = ["name", "key", "header"]
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str));
            (pair_name.is_some_and(is_secret_key) && map.contains_key("value"))
                || map
                    .iter()
                    .any(|(k, v)| is_secret_key(k) || value_has_secrets(v))
        }
        Value::Array(items) => {
            matches!(items.as_slice(), [Value::String(name), _] if is_secret_key(name))
                || items.iter().any(value_has_secrets)
        }
        Value::String(s) => is_secret_value(s),
        _ => false,
    }
}

/// The values [`redact_value`] hides because of their key or pair name, as JSON text
/// (`"hunter2"` with its quotes; numbers and objects as serialised). Used to make sure an
/// error message that quotes one of them is masked whatever path it reports.
pub fn secret_values(value: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                let pair_name = ["name", "key", "header"]
                    .iter()
                    .find_map(|k| map.get(*k).and_then(Value::as_str));
                let secret_pair = pair_name.is_some_and(is_secret_key);
                for (k, v) in map {
                    if is_secret_key(k) || (secret_pair && k == "value") {
                        out.push(v.to_string());
                    } else {
                        walk(v, out);
                    }
                }
            }
            Value::Array(items) => {
                if let [Value::String(name), secret] = items.as_slice()
                    && is_secret_key(name)
                {
                    out.push(secret.to_string());
                } else {
                    items.iter().for_each(|i| walk(i, out));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut out);
    out
}

/// Whether a JSON pointer (`/headers/0/password`) passes through a secret key.
pub fn pointer_has_secret_key(pointer: &str) -> bool {
    pointer
        .split('/')
        .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
        .any(|seg| is_secret_key(&seg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_keys_by_word_and_marker() {
        for k in [
            "password",
            "Password",
            "pass",
            "pwd",
            "auth",
            "bearer",
            "credentials",
            "private",
            "session",
            "api_key",
            "apiKey",
            "x-api-key",
            "X-API-KEY",
            "client_secret",
            "clientSecret",
            "access_token",
            "cookie",
            "Set-Cookie",
            "Authorization",
            "private_key",
            "db.passwd",
            "AuthToken",
        ] {
            assert!(is_secret_key(k), "{k} should be secret");
        }
        for k in [
            "user", "name", "path", "passport", "compass", "author", "url", "query", "keyword",
            "monkey",
        ] {
            assert!(!is_secret_key(k), "{k} should not be secret");
        }
    }

    #[test]
    fn secret_shapes_in_text() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        for s in [
            "Bearer abc.DEF-123_456",
            "authorization: Basic dXNlcjpwYXNzd29yZA==",
            jwt,
            "key sk-proj-4f9aXb2Kq8ZrT1mN0pQs",
            "ghp_0123456789abcdefABCDEF0123456789abcd",
            "xoxb-1234567890-abcdefghijklmnop",
            "AKIAIOSFODNN7EXAMPLE",
            "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz",
            "https://user:hunter2@example.com/x",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
        ] {
            let out = scrub_text(s);
            assert!(matches!(out, Cow::Owned(_)), "{s} should be scrubbed");
            assert!(out.contains(REDACTED), "{s}: {out}");
        }
        for s in [
            "hello world",
            "basic arithmetic",
            "https://example.com/path?q=1",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "123e4567-e89b-12d3-a456-426614174000",
            "/home/user/projects/toolhost/target/debug/build",
        ] {
            assert!(
                matches!(scrub_text(s), Cow::Borrowed(_)),
                "{s} was scrubbed"
            );
        }
        assert_eq!(
            scrub_text("see https://bob:pw@db.example:5432/x now"),
            "see https://[REDACTED]@db.example:5432/x now"
        );
        assert_eq!(
            scrub_text("Authorization: Bearer tok3n.Value"),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(
            scrub_text("a -----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY----- b"),
            "a [REDACTED] b"
        );
        // Scrubbing what was scrubbed changes nothing.
        for s in [
            "Bearer [REDACTED]",
            "https://[REDACTED]@h.example/",
            "https://[REDACTED]@[REDACTED]@",
            "[REDACTED]",
        ] {
            assert!(matches!(scrub_text(s), Cow::Borrowed(_)), "{s}");
        }
    }

    #[test]
    fn query_and_fragment_credentials() {
        let cases = [
            (
                "https://example.com/x?access_token=qwerty123&sig=Zm9vYmFyc2ln&user=ann",
                "https://example.com/x?access_token=[REDACTED]&sig=[REDACTED]&user=ann",
            ),
            (
                "see https://s3.example/b/o?X-Amz-Credential=AK%2F1&X-Amz-Signature=abc&X-Amz-Expires=60 now",
                "see https://s3.example/b/o?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Expires=60 now",
            ),
            // Percent-encoded and mixed-case names; `+` is a space in a query.
            (
                "/cb?X%2DAmz%2DSignature=s1&API%5FKEY=k1&Client+Secret=c1&q=a+b",
                "/cb?X%2DAmz%2DSignature=[REDACTED]&API%5FKEY=[REDACTED]&Client+Secret=[REDACTED]&q=a+b",
            ),
            // Repeated parameters: every one.
            (
                "http://h/?token=a&token=b&page=2&token=c",
                "http://h/?token=[REDACTED]&token=[REDACTED]&page=2&token=[REDACTED]",
            ),
            // Fragments (OAuth implicit flow) and `;` separators, with user-info too.
            (
                "https://bob:pw@app.example/cb?code=c0de&state=xyz#access_token=t0k&expires_in=3600",
                "https://[REDACTED]@app.example/cb?code=[REDACTED]&state=xyz#access_token=[REDACTED]&expires_in=3600",
            ),
            (
                "a?key=1;password=2;x=3",
                "a?key=[REDACTED];password=[REDACTED];x=3",
            ),
            // Inside JSON quoted in a string, and HTML's `&amp;`.
            (
                r#"{"u":"https://h/p?apikey=zz","v":1}"#,
                r#"{"u":"https://h/p?apikey=[REDACTED]","v":1}"#,
            ),
            (
                "<a href='/x?a=1&amp;signature=abc'>",
                "<a href='/x?a=1&amp;signature=[REDACTED]'>",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(scrub_urls(input), want, "{input}");
            assert_eq!(scrub_text(input), want, "{input}");
        }
        // Nothing secret: borrowed back untouched, whatever the shape.
        for s in [
            "https://example.com/search?q=token&page=2&code_style=x#section-key",
            "what? really# yes",
            "?",
            "#=&=?",
            "https://h/?token=&code",
            "a?token=[REDACTED]",
            "https://h/x?country_code=US&keyword=monkey",
        ] {
            assert!(matches!(scrub_urls(s), Cow::Borrowed(_)), "{s}");
            assert!(matches!(scrub_text(s), Cow::Borrowed(_)), "{s}");
        }
        for k in [
            "code",
            "CODE",
            "sig",
            "Signature",
            "X-Goog-Signature",
            "access%5Ftoken",
        ] {
            assert!(is_secret_query_key(k), "{k}");
        }
        for k in ["q", "page", "country_code", "state", "user", "%ZZ"] {
            assert!(!is_secret_query_key(k), "{k}");
        }
    }

    /// Scrubbing is idempotent and never panics on URL-shaped noise: random strings over
    /// the characters the URL rules look at (a small deterministic stand-in for the
    /// `redact_escape` fuzz target).
    #[test]
    fn url_scrubbing_is_idempotent_on_url_noise() {
        const PIECES: &[&str] = &[
            "?",
            "#",
            "&",
            ";",
            "=",
            "://",
            "@",
            "/",
            ":",
            " ",
            "\"",
            "token",
            "sig",
            "code",
            "user",
            "[REDACTED]",
            "%2D",
            "%",
            "x",
            "é",
            "\\",
            "h.example",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            let mut text = String::new();
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            for _ in 0..(seed >> 60) + 1 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                text.push_str(PIECES[(seed >> 33) as usize % PIECES.len()]);
            }
            let once = scrub_urls(&text).into_owned();
            assert_eq!(scrub_urls(&once), once, "{text:?}");
            let once = scrub_text(&text).into_owned();
            assert_eq!(scrub_text(&once), once, "{text:?}");
        }
    }

    #[test]
    fn values_pairs_and_depth() {
        let v = json!({
            "user": "bob",
            "pass": "hunter2",
            "nested": {"apiKey": {"a": 1}, "list": [{"AuthToken": "t", "ok": 1}]},
            "headers": [["Authorization", "Bearer x"], ["Accept", "text/plain"]],
            "hdrs": [{"name": "X-Api-Key", "value": "k"}, {"name": "Accept", "value": "v"}],
            "url": "https://u:p@h.example/x",
            "note": "plain",
        });
        assert!(value_has_secrets(&v));
        let r = redact_value(&v);
        assert_eq!(r["user"], "bob");
        assert_eq!(r["pass"], REDACTED);
        assert_eq!(r["nested"]["apiKey"], REDACTED);
        assert_eq!(r["nested"]["list"][0]["AuthToken"], REDACTED);
        assert_eq!(r["nested"]["list"][0]["ok"], 1);
        assert_eq!(r["headers"][0], json!(["Authorization", REDACTED]));
        assert_eq!(r["headers"][1], json!(["Accept", "text/plain"]));
        assert_eq!(r["hdrs"][0]["value"], REDACTED);
        assert_eq!(r["hdrs"][1]["value"], "v");
        assert_eq!(r["url"], "https://[REDACTED]@h.example/x");
        assert_eq!(r["note"], "plain");
        assert!(!value_has_secrets(&json!({"user": "bob", "n": [1, "x"]})));
        assert!(pointer_has_secret_key("/creds/0/password"));
        assert_eq!(
            secret_values(&json!({"a": {"pwd": "x1"}, "h": [["Cookie", 7]]})),
            vec!["\"x1\"".to_string(), "7".to_string()]
        );
        assert!(!pointer_has_secret_key("/a/b"));
    }
}
