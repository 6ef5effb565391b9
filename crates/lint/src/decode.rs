//! Readings of a text: the decoded forms the phrase rules read besides the text itself.
//!
//! The phrase rules ([`super::poison`]) match the normalised text, and an author who
//! wants a phrase past them encodes it: Cyrillic look-alike letters (`іgnоrе`), HTML
//! entities (`&#105;gnore`, `&lt;IMPORTANT&gt;`), percent-escapes (`%69gnore`), base64 or
//! hex payloads, letters spaced out (`i g n o r e`, `i.g.n.o.r.e`), leetspeak
//! (`1gn0r3 pr3v10us`) or defanged links (`hxxps://evil[.]example`). A model reads
//! through all of these. [`readings`] gives the text once per decoding that changes it,
//! each a [`Reading`] naming its [`Decoding`], so the rules run on every reading and a
//! finding can say which decoding revealed the phrase.
//!
//! Each decoding is applied once to the plain reading (decodings are not combined with
//! each other), except base64 and hex: a decoded payload is read again through every
//! decoding, base64 and hex included, up to [`MAX_NESTING`] payloads deep (base64 of
//! percent-escapes, hex of base64). The decodings are conservative so that ordinary
//! descriptions yield no extra reading: ASCII letters are never read as confusables, a
//! base64 or hex payload counts only if it decodes to mostly printable UTF-8 (a digest
//! or an identifier does not), only runs of single characters are joined, only words
//! mixing letters and leet digits are read as leetspeak, and `dot`/`at` spelled out
//! count only between parts of a domain or an e-mail address.
//!
//! Work is bounded whatever the input: only the first [`MAX_READ_CHARS`] characters are
//! read, every reading is cut there too, at most [`MAX_DECODED_RUNS`] base64 and as many
//! hex runs are decoded per text, nesting stops at [`MAX_NESTING`], and every decoding is
//! a linear scan (the regexes are the `regex` crate's, linear in their input).

use std::sync::LazyLock;

use base64::Engine as _;
use base64::engine::GeneralPurpose;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use regex::Regex;

use super::text::normalize;

/// Only this many characters of a text are decoded; the plain reading, and every other
/// reading, is cut there too.
pub const MAX_READ_CHARS: usize = 64 * 1024;

/// At most this many base64 runs, and as many hex runs, are decoded per text.
pub const MAX_DECODED_RUNS: usize = 16;

/// Base64 and hex runs shorter than this (in characters) are not decoded.
pub const MIN_ENCODED_RUN: usize = 20;

/// A decoded base64 or hex payload is read again through the decodings (base64 and hex
/// included) at most this many payloads deep.
pub const MAX_NESTING: usize = 2;

/// Which decoding produced a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Decoding {
    /// The text itself, normalised ([`super::text::normalize`]).
    Plain,
    /// Non-ASCII letters that look like ASCII ones (UTS #39 skeletons) read as ASCII.
    Confusables,
    /// HTML entities decoded (`&#105;`, `&lt;`).
    Entities,
    /// `%XX` escapes decoded.
    Percent,
    /// Base64 payloads decoded, and anything read in them.
    Base64,
    /// Hex payloads decoded (`69676e...`, `\x69\x67...`), and anything read in them.
    Hex,
    /// Letters spaced out (`i g n o r e`, `i.g.n.o.r.e`) joined.
    Spaced,
    /// Leetspeak (`1gn0r3`) read as letters.
    Leet,
    /// Defanged links (`hxxps://evil[.]example`, `a[at]b[dot]com`) restored.
    Defanged,
}

impl Decoding {
    /// Short lowercase name used in messages: "plain", "confusable letters",
    /// "HTML entities", "percent-escapes", "base64", "hex", "spaced-out letters",
    /// "leetspeak", "defanged links".
    pub fn as_str(self) -> &'static str {
        match self {
            Decoding::Plain => "plain",
            Decoding::Confusables => "confusable letters",
            Decoding::Entities => "HTML entities",
            Decoding::Percent => "percent-escapes",
            Decoding::Base64 => "base64",
            Decoding::Hex => "hex",
            Decoding::Spaced => "spaced-out letters",
            Decoding::Leet => "leetspeak",
            Decoding::Defanged => "defanged links",
        }
    }
}

/// One reading of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// The decoding that produced it (for a reading found inside a base64 or hex payload,
    /// the outermost of those: [`Decoding::Base64`] or [`Decoding::Hex`]).
    pub decoding: Decoding,
    /// The text read, normalised ([`super::text::normalize`]) and at most
    /// [`MAX_READ_CHARS`] characters.
    pub text: String,
}

/// The readings of `raw`: first [`Decoding::Plain`] (`super::text::normalize(raw)`,
/// always present), then each other decoding whose output differs from every earlier
/// reading, in the order of [`Decoding`]'s variants (the readings found inside a base64
/// or hex payload right after that payload's own reading). Every reading's text is
/// normalised too, and at most [`MAX_READ_CHARS`] characters; only the first
/// [`MAX_READ_CHARS`] characters of `raw` are read.
pub fn readings(raw: &str) -> Vec<Reading> {
    let raw = cut(raw, MAX_READ_CHARS);
    let mut out = vec![Reading {
        decoding: Decoding::Plain,
        text: reading_text(raw),
    }];
    read(raw, 0, None, &mut out);
    out
}

/// Pushes the readings of `raw` other than its plain one; `raw` is a payload `level`
/// base64/hex decodings deep, reported as `tag` when it is inside one.
fn read(raw: &str, level: usize, tag: Option<Decoding>, out: &mut Vec<Reading>) {
    let plain = reading_text(raw);
    let name = |d: Decoding| tag.unwrap_or(d);
    push(out, name(Decoding::Confusables), confusables(&plain));
    push(out, name(Decoding::Entities), entities(&plain));
    push(out, name(Decoding::Percent), percent(&plain));
    if level < MAX_NESTING {
        for (decoding, payloads) in [
            (Decoding::Base64, base64_payloads(&plain)),
            (Decoding::Hex, hex_payloads(&plain)),
        ] {
            if payloads.is_empty() {
                continue;
            }
            let joined = payloads.join(" | ");
            let joined = cut(&joined, MAX_READ_CHARS);
            push(out, name(decoding), Some(joined.to_string()));
            read(joined, level + 1, Some(name(decoding)), out);
        }
    }
    push(out, name(Decoding::Spaced), spaced(raw));
    push(out, name(Decoding::Leet), leet(&plain, 'i'));
    push(out, name(Decoding::Leet), leet(&plain, 'l'));
    push(out, name(Decoding::Defanged), defanged(&plain));
}

/// Adds a decoded text as a reading, normalised and cut, unless it is empty or equal to
/// an earlier reading.
fn push(out: &mut Vec<Reading>, decoding: Decoding, decoded: Option<String>) {
    let Some(decoded) = decoded else {
        return;
    };
    let text = reading_text(&decoded);
    if !text.is_empty() && !out.iter().any(|r| r.text == text) {
        out.push(Reading { decoding, text });
    }
}

/// The first `n` characters of `s`.
fn cut(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `s` normalised and cut to [`MAX_READ_CHARS`] characters (NFKC may lengthen a text).
fn reading_text(s: &str) -> String {
    let mut text = normalize(s);
    if let Some((i, _)) = text.char_indices().nth(MAX_READ_CHARS) {
        text.truncate(i);
    }
    text
}

/// The compiled patterns. A pattern that does not compile is left out (the tests check
/// that every one compiles, so none is).
struct Patterns {
    /// A percent-escape.
    percent: Option<Regex>,
    /// A base64 run.
    base64: Option<Regex>,
    /// A hex run: `\x`-escaped bytes, or hex digits with an optional `0x`.
    hex: Option<Regex>,
    /// `hxxp`.
    hxxp: Option<Regex>,
    /// A bracketed dot: `[.]`, `(dot)`, ...
    bracket_dot: Option<Regex>,
    /// A bracketed `:`, `://` or `/`.
    bracket_punct: Option<Regex>,
    /// A bracketed at: `[at]`, `[@]`, ...
    bracket_at: Option<Regex>,
    /// ` dot ` spelled out.
    word_dot: Option<Regex>,
    /// ` at ` spelled out.
    word_at: Option<Regex>,
}

static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| Patterns {
    percent: compile(r"%[0-9A-Fa-f]{2}"),
    base64: compile(&format!(r"[A-Za-z0-9+/_-]{{{MIN_ENCODED_RUN},}}={{0,2}}")),
    hex: compile(&format!(
        r"(?:\\x[0-9A-Fa-f]{{2}}){{{},}}|\b(?:0[xX])?[0-9A-Fa-f]{{{},}}\b",
        MIN_ENCODED_RUN / 2,
        MIN_ENCODED_RUN
    )),
    hxxp: compile(r"(?i)\bhxxp"),
    bracket_dot: compile(r"(?i)\[\.\]|\(\.\)|\{\.\}|\[dot\]|\(dot\)|\{dot\}"),
    bracket_punct: compile(r"\[(:|://|/)\]"),
    bracket_at: compile(r"(?i)\[at\]|\(at\)|\{at\}|\[@\]|\(@\)"),
    word_dot: compile(r"(?i) dot "),
    word_at: compile(r"(?i) at "),
});

/// A pattern compiled, or `None` if it does not compile.
fn compile(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

/// Every non-ASCII character whose confusable skeleton is ASCII replaced by it; ASCII
/// characters are kept (the skeleton of `m` is `rn`).
fn confusables(plain: &str) -> Option<String> {
    if plain.is_ascii() {
        return None;
    }
    let mut out = String::with_capacity(plain.len());
    let mut changed = false;
    let mut buf = [0u8; 4];
    for c in plain.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        let skeleton: String = unicode_security::skeleton(c.encode_utf8(&mut buf)).collect();
        if !skeleton.is_empty() && skeleton.is_ascii() {
            out.push_str(&skeleton);
            changed = true;
        } else {
            out.push(c);
        }
    }
    changed.then_some(out)
}

/// HTML entities decoded.
fn entities(plain: &str) -> Option<String> {
    match html_escape::decode_html_entities(plain) {
        std::borrow::Cow::Owned(decoded) => Some(decoded),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

/// `%XX` escapes decoded (invalid UTF-8 as U+FFFD), if there is one.
fn percent(plain: &str) -> Option<String> {
    PATTERNS
        .percent
        .as_ref()
        .is_some_and(|re| re.is_match(plain))
        .then(|| {
            percent_encoding::percent_decode_str(plain)
                .decode_utf8_lossy()
                .into_owned()
        })
}

/// A decoded payload as text, if it is UTF-8 and at least 80% of its characters are
/// printable (not control characters other than `\n`, `\r`, `\t`).
fn printable(bytes: Vec<u8>) -> Option<String> {
    let text = String::from_utf8(bytes).ok()?;
    let mut total = 0usize;
    let mut unprintable = 0usize;
    for c in text.chars() {
        total += 1;
        if c.is_control() && !matches!(c, '\n' | '\r' | '\t') {
            unprintable += 1;
        }
    }
    (total > 0 && unprintable * 5 <= total).then_some(text)
}

/// The printable payloads of the first [`MAX_DECODED_RUNS`] base64 runs.
fn base64_payloads(plain: &str) -> Vec<String> {
    let Some(re) = PATTERNS.base64.as_ref() else {
        return Vec::new();
    };
    re.find_iter(plain)
        .take(MAX_DECODED_RUNS)
        .filter_map(|m| decode_base64(m.as_str()))
        .collect()
}

/// One base64 run decoded with whichever alphabet and padding fits it. A run right after
/// a link's path (`.../aWdu...`) also is read without its leading slashes.
fn decode_base64(run: &str) -> Option<String> {
    const ENGINES: [&GeneralPurpose; 4] =
        [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD];
    let trimmed = run.trim_start_matches('/');
    let candidates: &[&str] = if trimmed.len() != run.len() && trimmed.len() >= MIN_ENCODED_RUN {
        &[run, trimmed]
    } else {
        &[run]
    };
    candidates.iter().find_map(|candidate| {
        ENGINES
            .iter()
            .find_map(|engine| engine.decode(candidate).ok().and_then(printable))
    })
}

/// The printable payloads of the first [`MAX_DECODED_RUNS`] hex runs of even length.
fn hex_payloads(plain: &str) -> Vec<String> {
    let Some(re) = PATTERNS.hex.as_ref() else {
        return Vec::new();
    };
    re.find_iter(plain)
        .take(MAX_DECODED_RUNS)
        .filter_map(|m| {
            let run = m.as_str();
            let digits = if run.starts_with("\\x") {
                run.replace("\\x", "")
            } else {
                run.strip_prefix("0x")
                    .or_else(|| run.strip_prefix("0X"))
                    .unwrap_or(run)
                    .to_string()
            };
            hex::decode(digits).ok().and_then(printable)
        })
        .collect()
}

/// The characters that may separate spaced-out letters.
const SEPARATORS: [char; 7] = [' ', '.', '-', '_', '*', '|', '/'];

/// Spaced-out letters joined. Reads `raw` (not the plain reading, which has lost the
/// width of its gaps): a gap of two or more whitespace characters, or of a newline or tab,
/// separates words.
fn spaced(raw: &str) -> Option<String> {
    let mut marked = String::with_capacity(raw.len() + 2);
    let mut start = 0;
    let mut chars = raw.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !c.is_whitespace() {
            continue;
        }
        let mut end = i + c.len_utf8();
        let mut wide = matches!(c, '\n' | '\r' | '\t');
        while let Some(&(j, d)) = chars.peek() {
            if !d.is_whitespace() {
                break;
            }
            wide = true;
            end = j + d.len_utf8();
            chars.next();
        }
        if wide {
            marked.push_str(&normalize(&raw[start..i]));
            marked.push_str("  ");
            start = end;
        }
    }
    marked.push_str(&normalize(&raw[start..]));
    join_spaced(&marked)
}

/// Runs of single alphanumeric characters separated by [`SEPARATORS`] joined into words:
/// characters one separator apart (the run's first single separator, the same each time)
/// join, and a wider gap (`  `, ` / `) or another separator separates words. A run is
/// joined only if one of its words is at least four characters long and has a letter.
fn join_spaced(s: &str) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    let alnum = |i: usize| chars.get(i).is_some_and(|c| c.is_alphanumeric());
    let single = |i: usize| alnum(i) && (i == 0 || !alnum(i - 1)) && !alnum(i + 1);
    let mut out = String::with_capacity(s.len());
    let mut changed = false;
    let mut i = 0;
    while i < n {
        if !single(i) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let mut words: Vec<String> = vec![chars[i].to_string()];
        let mut kind: Option<char> = None;
        let mut last = i;
        loop {
            let mut k = last + 1;
            while k < n && k - last <= 4 && SEPARATORS.contains(&chars[k]) {
                k += 1;
            }
            let gap = k - last - 1;
            if gap == 0 || gap > 3 || !single(k) {
                break;
            }
            let sep = chars[last + 1];
            if gap == 1 && kind.is_none_or(|c| c == sep) {
                kind = Some(sep);
                if let Some(word) = words.last_mut() {
                    word.push(chars[k]);
                }
            } else {
                words.push(chars[k].to_string());
            }
            last = k;
        }
        let joined = words
            .iter()
            .any(|w| w.chars().count() >= 4 && w.chars().any(char::is_alphabetic));
        if joined {
            out.push_str(&words.join(" "));
            changed = true;
        } else {
            out.extend(&chars[i..=last]);
        }
        i = last + 1;
    }
    changed.then_some(out)
}

/// Leetspeak read as letters, `1` read as `one` (`i` or `l`): in each word of ASCII
/// letters, digits, `@`, `$` and `!` (not counting `!`s at its end) that has a letter
/// and one of `0 1 3 4 5 7 @ $ !`, and is neither a digest (hex digits only, at least
/// [`MIN_DIGEST_CHARS`] of them) nor as long as an encoded run ([`MIN_ENCODED_RUN`]).
fn leet(plain: &str, one: char) -> Option<String> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '@' | '$' | '!');
    let map = |c: char| match c {
        '0' => Some('o'),
        '1' => Some(one),
        '3' => Some('e'),
        '4' | '@' => Some('a'),
        '5' | '$' => Some('s'),
        '7' => Some('t'),
        '!' => Some('i'),
        _ => None,
    };
    let mut out = String::with_capacity(plain.len());
    let mut changed = false;
    let mut rest = plain;
    while !rest.is_empty() {
        let word_len = rest.find(|c: char| !is_word(c)).unwrap_or(rest.len());
        if word_len == 0 {
            let mut other = rest.chars();
            if let Some(c) = other.next() {
                out.push(c);
            }
            rest = other.as_str();
            continue;
        }
        let (word, after) = rest.split_at(word_len);
        rest = after;
        let core = word.trim_end_matches('!');
        let tail = &word[core.len()..];
        let encoded = core.len() >= MIN_ENCODED_RUN
            || (core.len() >= MIN_DIGEST_CHARS && core.chars().all(|c| c.is_ascii_hexdigit()));
        if !encoded
            && core.contains(|c: char| c.is_ascii_alphabetic())
            && core.contains(|c| map(c).is_some())
        {
            out.extend(core.chars().map(|c| map(c).unwrap_or(c)));
            changed = true;
        } else {
            out.push_str(core);
        }
        out.push_str(tail);
    }
    changed.then_some(out)
}

/// Words of this many hex digits or more are digests, not leetspeak.
const MIN_DIGEST_CHARS: usize = 16;

/// Top-level domains that make `x dot y` a domain.
const TLDS: &[&str] = &[
    "com", "net", "org", "io", "ai", "dev", "app", "co", "me", "xyz", "info", "biz", "site",
    "online", "top", "ru", "cn", "su", "tk", "ml", "ga", "cf", "gq", "pw", "cc", "sh", "gg", "to",
    "ly", "us", "uk", "de", "fr", "nl", "eu", "example", "local", "onion", "test",
];

/// Whether `c` may be in a domain label.
fn label_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// Whether `c` may be in the local part of an e-mail address.
fn local_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '%' | '+' | '-')
}

/// The longest end of `s` made of characters `keep` accepts.
fn suffix(s: &str, keep: impl Fn(char) -> bool) -> &str {
    let start = s
        .char_indices()
        .rev()
        .take_while(|&(_, c)| keep(c))
        .last()
        .map_or(s.len(), |(i, _)| i);
    &s[start..]
}

/// The longest start of `s` made of characters `keep` accepts.
fn prefix(s: &str, keep: impl Fn(char) -> bool) -> &str {
    let end = s.find(|c: char| !keep(c)).unwrap_or(s.len());
    &s[..end]
}

/// Defanged links restored: `hxxp` read `http`; `[.]`, `(.)`, `{.}`, `[dot]`, `(dot)`,
/// `{dot}` read `.`; `[:]`, `[://]`, `[/]` without brackets; `[at]`, `(at)`, `{at}`,
/// `[@]`, `(@)` read `@`; ` dot ` read `.` between two domain labels (the second a
/// known top-level domain, or followed by another dot); ` at ` read `@` between an
/// e-mail local part and a domain with a dot.
fn defanged(plain: &str) -> Option<String> {
    let p = &*PATTERNS;
    let mut text = plain.to_string();
    for (re, with) in [
        (&p.hxxp, "http"),
        (&p.bracket_dot, "."),
        (&p.bracket_punct, "$1"),
        (&p.bracket_at, "@"),
    ] {
        if let Some(re) = re
            && let std::borrow::Cow::Owned(replaced) = re.replace_all(&text, with)
        {
            text = replaced;
        }
    }
    text = word_dots(&text);
    text = word_ats(&text);
    (text != plain).then_some(text)
}

/// ` dot ` read `.` where it joins two domain labels (see [`defanged`]).
fn word_dots(s: &str) -> String {
    let Some(re) = PATTERNS.word_dot.as_ref() else {
        return s.to_string();
    };
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for m in re.find_iter(s) {
        let left = suffix(&s[..m.start()], label_char);
        let after = &s[m.end()..];
        let right = prefix(after, label_char);
        let rest = &after[right.len()..];
        let chained = rest
            .get(..5)
            .is_some_and(|r| r.eq_ignore_ascii_case(" dot "))
            || rest
                .strip_prefix('.')
                .is_some_and(|r| r.starts_with(label_char));
        let tld = TLDS.iter().any(|t| t.eq_ignore_ascii_case(right));
        if !left.is_empty() && !right.is_empty() && (tld || chained) {
            out.push_str(&s[last..m.start()]);
            out.push('.');
            last = m.end();
        }
    }
    out.push_str(&s[last..]);
    out
}

/// ` at ` read `@` where it joins an e-mail local part and a domain (see [`defanged`]).
fn word_ats(s: &str) -> String {
    let Some(re) = PATTERNS.word_at.as_ref() else {
        return s.to_string();
    };
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for m in re.find_iter(s) {
        let local = suffix(&s[..m.start()], local_char);
        let domain = prefix(&s[m.end()..], |c| label_char(c) || c == '.');
        let domain = domain.trim_end_matches('.');
        let is_domain = domain.rsplit_once('.').is_some_and(|(host, tld)| {
            !host.is_empty()
                && !host.starts_with('.')
                && tld.len() >= 2
                && tld.chars().all(|c| c.is_ascii_alphabetic())
        });
        if local.starts_with(|c: char| c.is_ascii_alphanumeric()) && is_domain {
            out.push_str(&s[last..m.start()]);
            out.push('@');
            last = m.end();
        }
    }
    out.push_str(&s[last..]);
    out
}

#[cfg(test)]
mod tests;
