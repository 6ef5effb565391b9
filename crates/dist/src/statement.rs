//! What a signature vouches for: the **package statement**, a short canonical text naming
//! the plugin, the sha256 of its component and the sha256 of its request file (or that it
//! has none). A publisher signs the statement, not the component alone, so that a
//! signature covers everything the operator approves: the code and the capabilities it
//! asks for. Swapping the request file, or the component, or moving a signature to
//! another package changes the statement and the signature no longer verifies.
//!
//! The statement is rebuilt by whoever verifies it, from the bytes it fetched and the
//! plugin's name; it is never taken from the publisher. So it need not travel with the
//! package, and an offline signer can sign the file `toolhost publish --statement-out`
//! writes with the `minisign` tool itself. The format (docs/trust.md, "What a signature
//! covers"):
//!
//! ```text
//! toolhost package statement v1
//! name: files
//! component: sha256:6f1e…
//! request: sha256:9a0b…        (or `request: none`)
//! ```
//!
//! A package signed the old way (the component's bytes alone) still verifies for the
//! component: [`verify_package`] says so with [`Coverage::Component`], and the caller
//! treats its request file as unsigned.

use crate::DistError;
use crate::signature::verify_signature;

/// The first line of every statement: the format and its version.
pub const STATEMENT_HEADER: &str = "toolhost package statement v1";

/// One package as a signer vouches for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The plugin's name (the file stem of `NAME.wasm`; the last segment of an OCI
    /// repository).
    pub name: String,
    /// `sha256:HEX` of the component.
    pub component: String,
    /// `sha256:HEX` of the request file's bytes, `None` when the package has none.
    pub request: Option<String>,
}

impl Statement {
    /// The statement of plugin `name` with component `wasm` and request file `request`.
    pub fn of(name: &str, wasm: &[u8], request: Option<&[u8]>) -> Self {
        Statement::with_digest(name, &crate::sha256_digest(wasm), request)
    }

    /// [`Statement::of`] for a component whose digest (`sha256:HEX`) is known already.
    pub fn with_digest(name: &str, component_digest: &str, request: Option<&[u8]>) -> Self {
        Statement {
            name: name.to_string(),
            component: component_digest.to_ascii_lowercase(),
            request: request.map(crate::sha256_digest),
        }
    }

    /// The canonical text that is signed: four lines, each ending in `\n`.
    pub fn text(&self) -> String {
        format!(
            "{STATEMENT_HEADER}\nname: {}\ncomponent: {}\nrequest: {}\n",
            self.name,
            self.component,
            self.request.as_deref().unwrap_or("none")
        )
    }
}

/// What a verified signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// The package statement: the component, the request file (or its absence) and the
    /// plugin's name.
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
}

/// Verifies `signature` over the package `statement` (with `wasm` its component's bytes),
/// falling back to a signature over the component alone.
///
/// Errors: [`DistError::UntrustedKey`] when no trusted key made it; [`DistError::BadSignature`]
/// when a trusted key made it but it covers neither the statement nor the component (a
/// swapped request or component, a signature moved from another package, a statement
/// naming another plugin); the message quotes the statement that was expected, so the
/// operator can compare it with what the publisher signed.
pub fn verify_package(
    statement: &Statement,
    wasm: &[u8],
    signature: &str,
    trusted_keys: &[String],
) -> Result<Verified, DistError> {
    let text = statement.text();
    match verify_signature(text.as_bytes(), signature, trusted_keys) {
        Ok(signer) => {
            return Ok(Verified {
                signer,
                coverage: Coverage::Package,
            });
        }
        Err(DistError::BadSignature(_)) => {}
        Err(e) => return Err(e),
    }
    match verify_signature(wasm, signature, trusted_keys) {
        Ok(signer) => Ok(Verified {
            signer,
            coverage: Coverage::Component,
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

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statement_names_every_part_and_changes_with_each() {
        let s = Statement::of("files", b"\0asm-bytes", Some(b"read = [\"data\"]\n"));
        let text = s.text();
        assert!(text.starts_with("toolhost package statement v1\nname: files\n"));
        assert!(text.contains(&format!(
            "component: {}\n",
            crate::sha256_digest(b"\0asm-bytes")
        )));
        assert!(text.ends_with('\n'));
        assert_eq!(text.lines().count(), 4);
        let variants = [
            Statement::of("other", b"\0asm-bytes", Some(b"read = [\"data\"]\n")),
            Statement::of("files", b"\0asm-other", Some(b"read = [\"data\"]\n")),
            Statement::of("files", b"\0asm-bytes", Some(b"read = [\"/etc\"]\n")),
            Statement::of("files", b"\0asm-bytes", None),
        ];
        for v in variants {
            assert_ne!(v.text(), text);
        }
        assert!(
            Statement::of("files", b"x", None)
                .text()
                .ends_with("request: none\n")
        );
    }
}
