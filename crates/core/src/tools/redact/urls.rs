//! The URL rules of secret redaction (`super`'s module docs, "by query parameter"):
//! credentials in a URL's user-info and in its query and fragment parameters, found in
//! free text. Apart from the rest of the redaction because the CLI applies these alone
//! ([`scrub_urls`]) to the lines it prints, and because they are a parser of their own.

use std::borrow::Cow;

use super::{REDACTED, SECRET_QUERY_WORDS, is_secret_key, key_words};

/// Whether a URL query (or fragment) parameter name names a secret: its percent-decoded
/// form (`+` as a space) is a secret key ([`is_secret_key`]), has a word in
/// [`SECRET_QUERY_WORDS`], or is exactly `code` (the OAuth authorization code, a one-time
/// credential; as an argument name `code` is usually source code, so only here).
/// Case-insensitive, like the key rules: `X%2DAmz%2DSignature` is secret.
pub fn is_secret_query_key(name: &str) -> bool {
    // `form_urlencoded` decodes exactly as a server reads a query (`%XX`, `+`); `name`
    // holds no `&` or `=` (the caller split them off), so it parses as one pair.
    let decoded = url::form_urlencoded::parse(name.as_bytes())
        .next()
        .map(|(k, _)| k)
        .unwrap_or_default();
    if decoded.trim().eq_ignore_ascii_case("code") || is_secret_key(&decoded) {
        return true;
    }
    key_words(&decoded)
        .iter()
        .any(|w| SECRET_QUERY_WORDS.contains(&w.as_str()))
}

/// Where a URL ends inside text: whitespace, control characters, quotes, angle brackets,
/// backticks and backslashes (none of them may appear unencoded in a URL; a backslash
/// ends a URL inside escaped JSON or a Debug-quoted string).
fn ends_url(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(b, b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\')
}

/// Separates query or fragment parameters (`;` is the old alternative to `&`; a `?` or
/// `#` inside a query starts more parameters as far as a reader is concerned).
fn splits_params(b: u8) -> bool {
    matches!(b, b'&' | b';' | b'?' | b'#')
}

/// Replaces the values of secret query and fragment parameters (see the module docs).
///
/// Hand-written rather than `url::Url::parse`: URLs sit inside free text (prose, log
/// lines, JSON quoted in a string), often relative or malformed, and the rest of the text
/// must come back byte for byte. One left-to-right pass over the bytes (every delimiter
/// is ASCII, so each cut is a char boundary): linear in the input, no backtracking.
pub(super) fn scrub_url_query(s: &str) -> Cow<'_, str> {
    let bytes = s.as_bytes();
    if !bytes.iter().any(|&b| b == b'?' || b == b'#') {
        return Cow::Borrowed(s);
    }
    let mut out = String::new();
    let mut last = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'?' && bytes[i] != b'#' {
            i += 1;
            continue;
        }
        // Parameters, each starting after a separator, until the URL ends.
        let mut sep = i;
        loop {
            let start = sep + 1;
            let end = bytes[start..]
                .iter()
                .position(|&b| splits_params(b) || ends_url(b))
                .map_or(bytes.len(), |n| start + n);
            let param = &s[start..end];
            if let Some(eq) = param.find('=') {
                let value = &param[eq + 1..];
                if !value.is_empty() && value != REDACTED && is_secret_query_key(&param[..eq]) {
                    out.push_str(&s[last..start + eq + 1]);
                    out.push_str(REDACTED);
                    last = end;
                }
            }
            if end >= bytes.len() || !splits_params(bytes[end]) {
                i = end;
                break;
            }
            sep = end;
        }
    }
    if last == 0 {
        return Cow::Borrowed(s);
    }
    out.push_str(&s[last..]);
    Cow::Owned(out)
}

/// Hides the credentials of every URL inside `s` and nothing else: user-info
/// (`https://[REDACTED]@host`) and the values of secret query and fragment parameters
/// (`?access_token=[REDACTED]&user=ann`). For text toolhost prints or logs that quotes
/// URLs it did not write; [`scrub_text`](super::scrub_text) does this and more. Borrowed when nothing changed.
///
/// Like [`scrub_text`](super::scrub_text), passes repeat until nothing changes (at most four): a value
/// replaced in the query can join an earlier authority to an `@` after it.
pub fn scrub_urls(s: &str) -> Cow<'_, str> {
    let once = |t: &str| -> Option<String> {
        let user = scrub_url_userinfo(t);
        if let Cow::Owned(o) = scrub_url_query(&user) {
            return Some(o);
        }
        match user {
            Cow::Owned(o) => Some(o),
            Cow::Borrowed(_) => None,
        }
    };
    let Some(mut out) = once(s) else {
        return Cow::Borrowed(s);
    };
    for _ in 0..3 {
        match once(&out) {
            Some(o) => out = o,
            None => break,
        }
    }
    Cow::Owned(out)
}

/// Replaces the user-info of URLs (`scheme://user:pw@host` → `scheme://[REDACTED]@host`).
pub(super) fn scrub_url_userinfo(s: &str) -> Cow<'_, str> {
    if !s.contains("://") {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut changed = false;
    while let Some(i) = rest.find("://") {
        let start = i + 3;
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let auth_len = after
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == '"')
            .unwrap_or(after.len());
        let authority = &after[..auth_len];
        match authority.rfind('@') {
            // User-info that is already nothing but redaction markers stays as it is, so
            // scrubbing twice gives what scrubbing once gave.
            Some(at) if at > 0 && !authority[..at].split('@').all(|p| p == REDACTED) => {
                out.push_str(REDACTED);
                out.push_str(&authority[at..]);
                changed = true;
            }
            _ => out.push_str(authority),
        }
        rest = &after[auth_len..];
    }
    out.push_str(rest);
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}
