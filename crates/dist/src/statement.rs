//! What a signature vouches for: the **package statement**, a short canonical text naming
//! the plugin, its release version, the sha256 of its component and the sha256 of its
//! request file (or that it has none). A publisher signs the statement, not the component
//! alone, so that a signature covers everything the operator approves: the code, the
//! capabilities it asks for, and which release it is. Swapping the request file, or the
//! component, or moving a signature to another package or another version changes the
//! statement and the signature no longer verifies.
//!
//! The format (docs/trust.md, "What a signature covers"):
//!
//! ```text
//! toolhost package statement v2
//! name: files
//! version: 2.1.0
//! component: sha256:6f1e…
//! request: sha256:9a0b…        (or `request: none`)
//! ```
//!
//! **The version is the one field the verifier cannot compute.** So the statement
//! travels with the package (`NAME.wasm.statement` beside a file or URL, a layer of its
//! own in an OCI artifact), and whoever verifies it parses it strictly ([`Statement::parse`]),
//! checks that every field it *can* compute (name, component, request) equals what it
//! fetched or found, and only then believes the version the signature covers. A statement
//! that does not match the package is refused like a signature over another package.
//!
//! Older statements (`… statement v1`, no version line) stay readable: a package with no
//! statement beside it is checked against the v1 statement rebuilt from its bytes, and is
//! *unversioned*. A package signed the old way (the component's bytes alone) still
//! verifies for the component: [`verify_package`] says so with [`Coverage::Component`],
//! and the caller treats its request file as unsigned.

use crate::DistError;
use crate::signature::verify_signature;

/// The first line of every statement this build writes: the format and its version.
pub const STATEMENT_HEADER: &str = "toolhost package statement v2";
/// The first line of the older, unversioned statements (still verified).
pub const STATEMENT_HEADER_V1: &str = "toolhost package statement v1";
/// The longest release version accepted, in characters.
pub const MAX_VERSION_CHARS: usize = 64;
/// The largest statement text read, in bytes (a real one is about 200).
pub const MAX_STATEMENT_BYTES: u64 = 4 * 1024;

/// Parses a release version: semantic versioning (`MAJOR.MINOR.PATCH`, optional
/// `-pre.release` and `+build`), at most [`MAX_VERSION_CHARS`] characters. The error says
/// what is wrong, for a message that names where the version came from.
pub fn parse_version(text: &str) -> Result<semver::Version, String> {
    if text.chars().count() > MAX_VERSION_CHARS {
        return Err(format!(
            "the version is longer than {MAX_VERSION_CHARS} characters"
        ));
    }
    semver::Version::parse(text).map_err(|e| {
        format!(
            "`{}` is not a semantic version such as 1.2.3 ({e})",
            crate::error::clip(text)
        )
    })
}

/// One package as a signer vouches for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The plugin's name (the file stem of `NAME.wasm`; the last segment of an OCI
    /// repository).
    pub name: String,
    /// The release version; `None` in an older (v1) statement.
    pub version: Option<semver::Version>,
    /// `sha256:HEX` of the component.
    pub component: String,
    /// `sha256:HEX` of the request file's bytes, `None` when the package has none.
    pub request: Option<String>,
}

impl Statement {
    /// The unversioned statement of plugin `name` with component `wasm` and request file
    /// `request` (give it a version with [`Statement::versioned`]).
    pub fn of(name: &str, wasm: &[u8], request: Option<&[u8]>) -> Self {
        Statement::with_digest(name, &crate::sha256_digest(wasm), request)
    }

    /// [`Statement::of`] for a component whose digest (`sha256:HEX`) is known already.
    pub fn with_digest(name: &str, component_digest: &str, request: Option<&[u8]>) -> Self {
        Statement {
            name: name.to_string(),
            version: None,
            component: component_digest.to_ascii_lowercase(),
            request: request.map(crate::sha256_digest),
        }
    }

    /// The same package as release `version`.
    pub fn versioned(self, version: semver::Version) -> Self {
        Statement {
            version: Some(version),
            ..self
        }
    }

    /// Whether `other` names the same package: name, component and request (the version
    /// aside).
    pub fn same_package(&self, other: &Statement) -> bool {
        self.name == other.name
            && self.component == other.component
            && self.request == other.request
    }

    /// The canonical text that is signed, each line ending in `\n`: five lines (v2) with a
    /// version, the four of v1 without.
    pub fn text(&self) -> String {
        let request = self.request.as_deref().unwrap_or("none");
        match &self.version {
            Some(v) => format!(
                "{STATEMENT_HEADER}\nname: {}\nversion: {v}\ncomponent: {}\nrequest: {request}\n",
                self.name, self.component
            ),
            None => format!(
                "{STATEMENT_HEADER_V1}\nname: {}\ncomponent: {}\nrequest: {request}\n",
                self.name, self.component
            ),
        }
    }

    /// Parses a statement shipped with a package, strictly: the header, then each field
    /// once in its order, nothing else, and the text exactly as [`Statement::text`] writes
    /// it (so one signed text means one statement). The error says what is wrong.
    pub fn parse(text: &str) -> Result<Statement, String> {
        if text.len() as u64 > MAX_STATEMENT_BYTES {
            return Err(format!(
                "larger than the limit of {MAX_STATEMENT_BYTES} bytes"
            ));
        }
        let mut lines = text.lines();
        let fields: &[&str] = match lines.next() {
            Some(STATEMENT_HEADER) => &["name", "version", "component", "request"],
            Some(STATEMENT_HEADER_V1) => &["name", "component", "request"],
            Some(other) => {
                return Err(format!(
                    "the first line is `{}`, not `{STATEMENT_HEADER}`",
                    crate::error::clip(other)
                ));
            }
            None => return Err("it is empty".into()),
        };
        let mut values: Vec<&str> = Vec::with_capacity(fields.len());
        for line in lines {
            let (key, value) = line.split_once(": ").ok_or_else(|| {
                format!("`{}` is not a `key: value` line", crate::error::clip(line))
            })?;
            if values.len() < fields.len() && fields[values.len()] == key {
                values.push(value);
                continue;
            }
            return Err(if fields[..values.len()].contains(&key) {
                format!("`{key}` appears twice")
            } else if fields.contains(&key) {
                format!(
                    "`{key}` is out of order (the order is {})",
                    fields.join(", ")
                )
            } else {
                format!("unknown field `{}`", crate::error::clip(key))
            });
        }
        if values.len() < fields.len() {
            return Err(format!("`{}` is missing", fields[values.len()]));
        }
        let field = |k: &str| {
            fields
                .iter()
                .position(|f| *f == k)
                .and_then(|i| values.get(i).copied())
        };
        let digest = |k: &str| -> Result<String, String> {
            let v = field(k).unwrap_or_default();
            let hex = v.strip_prefix("sha256:").unwrap_or("");
            if hex.len() == 64
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                Ok(v.to_string())
            } else {
                Err(format!("`{k}` is not sha256: and 64 lowercase hex digits"))
            }
        };
        let name = field("name").unwrap_or_default();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err("`name` is empty or has control characters".into());
        }
        let version = field("version").map(parse_version).transpose()?;
        let request = match field("request") {
            Some("none") => None,
            _ => Some(digest("request")?),
        };
        let statement = Statement {
            name: name.to_string(),
            version,
            component: digest("component")?,
            request,
        };
        if statement.text() != text {
            return Err(
                "it is not in canonical form (one `\\n` after each line, nothing else)".into(),
            );
        }
        Ok(statement)
    }
}

/// What a verified signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// The package statement: the component, the request file (or its absence) and the
    /// plugin's name (and its version, when the statement has one).
    Package,
    /// The component's bytes only (signed the old way); a request file beside it is
    /// unsigned.
    Component,
}

/// A signature that verified: by whom, over what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The signer's key id (16 hex digits, as minisign prints it).
    pub signer: String,
    /// What the signature covers.
    pub coverage: Coverage,
    /// The release version the signature covers; `None`: an unversioned (v1) statement,
    /// or a signature over the component alone.
    pub version: Option<semver::Version>,
}

/// Verifies `signature` over the package `expected` (name, component, request; its
/// version is ignored) with `wasm` its component's bytes. `shipped` is the statement that
/// travelled with the package, if any: it must name exactly this package, and then its
/// version is the one verified. Without one (or when the signature is not over it) the
/// unversioned v1 statement rebuilt from the package is tried, then the component alone.
///
/// Errors: [`DistError::BadStatement`] when the shipped statement is malformed (`file`
/// names it); [`DistError::UntrustedKey`] when no trusted key made the signature;
/// [`DistError::BadSignature`] when a trusted key made it but it covers neither the
/// package nor the component (a swapped request or component, a signature moved from
/// another package, a statement naming another plugin or another package); the message
/// quotes the statement that was expected, so the operator can compare it with what the
/// publisher signed.
pub fn verify_package(
    expected: &Statement,
    wasm: &[u8],
    signature: &str,
    shipped: Option<(&str, &str)>,
    trusted_keys: &[String],
) -> Result<Verified, DistError> {
    let expected = Statement {
        version: None,
        ..expected.clone()
    };
    if let Some((file, text)) = shipped {
        let statement = Statement::parse(text).map_err(|reason| DistError::BadStatement {
            file: file.to_string(),
            reason,
        })?;
        if !statement.same_package(&expected) {
            return Err(DistError::BadSignature(format!(
                "the package statement {file} describes another package than the one \
                 fetched; it says:\n{}\nthe package is:\n{}",
                indent(&statement.text()),
                indent(&expected.text())
            )));
        }
        match verify_signature(text.as_bytes(), signature, trusted_keys) {
            Ok(signer) => {
                return Ok(Verified {
                    signer,
                    coverage: Coverage::Package,
                    version: statement.version,
                });
            }
            // Perhaps a signature over the older statement, beside a newer file.
            Err(DistError::BadSignature(_)) => {}
            Err(e) => return Err(e),
        }
    }
    let text = expected.text();
    match verify_signature(text.as_bytes(), signature, trusted_keys) {
        Ok(signer) => {
            return Ok(Verified {
                signer,
                coverage: Coverage::Package,
                version: None,
            });
        }
        Err(DistError::BadSignature(_)) => {}
        Err(e) => return Err(e),
    }
    match verify_signature(wasm, signature, trusted_keys) {
        Ok(signer) => Ok(Verified {
            signer,
            coverage: Coverage::Component,
            version: None,
        }),
        Err(DistError::BadSignature(_)) => {
            let key = crate::signature_key_id(signature)?;
            Err(DistError::BadSignature(format!(
                "the signature by trusted key {key} covers neither this package nor its \
                 component: it was made over something else (another package, or this one \
                 with a different component or request file). The package it was checked \
                 against:\n{}",
                indent(&text)
            )))
        }
        Err(e) => Err(e),
    }
}

/// The release version a component carries in its own metadata: the top-level `version`
/// custom section that `wasm-tools metadata add --version` and registry toolchains write
/// (the format of the `wasm-metadata` crate: the version's UTF-8 text). `None` when there
/// is none; an error when there is one that is not a version, or several.
pub fn component_version(wasm: &[u8]) -> Result<Option<semver::Version>, String> {
    use wasmparser::{Chunk, Parser, Payload};
    let mut parser = Parser::new(0);
    let mut rest = wasm;
    let mut found: Option<semver::Version> = None;
    loop {
        let (consumed, payload) = match parser.parse(rest, true) {
            Ok(Chunk::Parsed { consumed, payload }) => (consumed, payload),
            // With `eof` set the parser never asks for more data; treat it as the end.
            Ok(Chunk::NeedMoreData(_)) => return Ok(found),
            Err(e) => return Err(format!("not a readable WebAssembly binary: {e}")),
        };
        let skip = match &payload {
            // A nested module's or component's own sections are not the package's: skip
            // their bytes (the parser has already stepped over them; `consumed` is the
            // section's header only).
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => unchecked_range.len(),
            Payload::CustomSection(c) if c.name() == "version" => {
                let text = std::str::from_utf8(c.data())
                    .map_err(|_| "its `version` section is not UTF-8 text".to_string())?;
                if found.is_some() {
                    return Err("it has several `version` sections".into());
                }
                found = Some(parse_version(text.trim())?);
                0
            }
            Payload::End(_) => return Ok(found),
            _ => 0,
        };
        rest = rest
            .get(consumed + skip..)
            .ok_or_else(|| "a section runs past the end of the file".to_string())?;
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_statement_names_every_part_and_changes_with_each() {
        let s = Statement::of("files", b"\0asm-bytes", Some(b"read = [\"data\"]\n"))
            .versioned(v("1.2.0"));
        let text = s.text();
        assert!(text.starts_with("toolhost package statement v2\nname: files\nversion: 1.2.0\n"));
        assert!(text.contains(&format!(
            "component: {}\n",
            crate::sha256_digest(b"\0asm-bytes")
        )));
        assert!(text.ends_with('\n'));
        assert_eq!(text.lines().count(), 5);
        let base = || Statement::of("files", b"\0asm-bytes", Some(b"read = [\"data\"]\n"));
        let variants = [
            Statement::of("other", b"\0asm-bytes", Some(b"read = [\"data\"]\n"))
                .versioned(v("1.2.0")),
            Statement::of("files", b"\0asm-other", Some(b"read = [\"data\"]\n"))
                .versioned(v("1.2.0")),
            Statement::of("files", b"\0asm-bytes", Some(b"read = [\"/etc\"]\n"))
                .versioned(v("1.2.0")),
            Statement::of("files", b"\0asm-bytes", None).versioned(v("1.2.0")),
            base().versioned(v("1.2.1")),
            base(),
        ];
        for other in variants {
            assert_ne!(other.text(), text);
        }
        assert_eq!(base().text().lines().count(), 4, "unversioned is v1");
        assert!(base().text().starts_with("toolhost package statement v1\n"));
        assert!(
            Statement::of("files", b"x", None)
                .text()
                .ends_with("request: none\n")
        );
    }

    #[test]
    fn a_statement_parses_back_and_anything_else_is_refused_with_the_reason() {
        let s = Statement::of("files", b"\0asm", Some(b"r")).versioned(v("2.0.0-rc.1+build.7"));
        assert_eq!(Statement::parse(&s.text()), Ok(s.clone()));
        let v1 = Statement::of("files", b"\0asm", None);
        assert_eq!(Statement::parse(&v1.text()), Ok(v1));
        let text = s.text();
        let version_line = "version: 2.0.0-rc.1+build.7\n";
        let cases = [
            (
                text.replace(version_line, &format!("{version_line}{version_line}")),
                "appears twice",
            ),
            (
                text.replace("2.0.0-rc.1+build.7", "2.0"),
                "not a semantic version",
            ),
            (
                text.replace("2.0.0-rc.1+build.7", &format!("1.0.0-{}", "a".repeat(70))),
                "longer than 64",
            ),
            (text.replace(version_line, ""), "out of order"),
            (text.replace("name: files\n", ""), "out of order"),
            (text.replace("request: ", "requests: "), "unknown field"),
            (
                text.replace("component: sha256:", "component: md5:"),
                "sha256",
            ),
            (text.replace("statement v2", "statement v9"), "first line"),
            (text.replace('\n', "\r\n"), "canonical"),
            (format!("{text}extra: x\n"), "unknown field"),
            (format!("{text}\n"), "not a `key: value`"),
            (text.trim_end().to_string(), "canonical"),
            (String::new(), "empty"),
            ("x".repeat(5000), "larger than"),
        ];
        for (bad, why) in cases {
            let err = Statement::parse(&bad).expect_err(&bad);
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn a_component_carries_its_version_in_a_custom_section() {
        // A component (layer 0x0d, version 1) with a nested core module holding a
        // `version` section of its own, which is not the component's.
        let custom = |name: &str, data: &str| {
            let mut body = vec![name.len() as u8];
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(data.as_bytes());
            let mut s = vec![0u8, body.len() as u8];
            s.extend(body);
            s
        };
        let mut module = b"\0asm\x01\0\0\0".to_vec();
        module.extend(custom("version", "9.9.9"));
        let mut component = b"\0asm\x0d\0\x01\0".to_vec();
        component.push(1); // core module section
        component.push(module.len() as u8);
        component.extend(&module);
        assert_eq!(component_version(&component), Ok(None));
        let mut versioned = component.clone();
        versioned.extend(custom("version", "1.4.2"));
        assert_eq!(component_version(&versioned), Ok(Some(v("1.4.2"))));
        let mut twice = versioned.clone();
        twice.extend(custom("version", "1.4.3"));
        assert!(component_version(&twice).is_err_and(|e| e.contains("several")));
        let mut bad = component.clone();
        bad.extend(custom("version", "one"));
        assert!(component_version(&bad).is_err_and(|e| e.contains("semantic version")));
        assert!(component_version(b"not wasm").is_err());
    }

    #[test]
    fn versions_are_bounded() {
        assert_eq!(parse_version("1.2.3"), Ok(v("1.2.3")));
        assert!(parse_version("1.2").is_err());
        assert!(parse_version("v1.2.3").is_err());
        assert!(parse_version(&format!("1.2.3+{}", "b".repeat(60))).is_err());
    }
}
