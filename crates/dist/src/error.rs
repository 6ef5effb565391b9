//! [`DistError`]: every way fetching, verifying or publishing a plugin can fail.
//!
//! Each variant names the check that failed and why, so `toolhost install` can tell the
//! operator what to do next. Text that came from a remote party (registry error bodies,
//! HTTP reasons) is cut to a bounded length before it lands in an error.

use std::path::PathBuf;

/// Why fetching, verifying or publishing failed.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The source string is not a path, an `https://…/NAME.wasm` URL or an `oci://` reference.
    #[error("invalid source `{source_str}`: {reason}")]
    InvalidSource {
        /// The source as given.
        source_str: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The component's sha256 differs from the pinned `--digest`.
    #[error(
        "digest check failed: expected {expected}, got {actual} (the artifact changed, or the pin is wrong)"
    )]
    DigestMismatch {
        /// The pinned digest.
        expected: String,
        /// The digest computed locally from the bytes received.
        actual: String,
    },
    /// A `--digest` pin that is not `sha256:` and 64 hex digits.
    #[error("invalid digest `{0}`: expected sha256: and 64 hex digits")]
    InvalidDigest(String),
    /// The artifact carries no signature (and the caller requires one).
    #[error(
        "signature check failed: the artifact is not signed (use --allow-unsigned to accept it)"
    )]
    Unsigned,
    /// The signature was made by a key that is not in `[trust] keys`.
    #[error(
        "signature check failed: signed by key {key_id}, which is not a trusted key (add its public key to [trust] keys, or use --allow-unsigned)"
    )]
    UntrustedKey {
        /// The signer's minisign key id (16 hex digits).
        key_id: String,
    },
    /// The signature was made the old way, over the component alone, and the package has a
    /// request file that it therefore does not cover.
    #[error(
        "signature check failed: the signature by trusted key {key_id} covers the component \
         only (it was signed the old way), not its request file, which asks for \
         capabilities nobody signed; ask the publisher to sign the package (`toolhost \
         publish --sign`), or use --allow-unsigned to take the request as unsigned"
    )]
    RequestUnsigned {
        /// The signer's minisign key id (16 hex digits).
        key_id: String,
    },
    /// The signature does not verify (the bytes or the trusted comment were altered).
    #[error("signature check failed: {0}")]
    BadSignature(String),
    /// A package statement (shipped with a package, given to `publish`, or a version in
    /// one) that is malformed: two versions, a version that is not semver or is over 64
    /// characters, a missing or unknown field.
    #[error("package statement {file}: {reason}")]
    BadStatement {
        /// Where the statement (or the version) came from.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A trusted key or a secret key file that cannot be read as minisign.
    #[error("bad minisign key: {0}")]
    BadKey(String),
    /// Something untrusted is larger than its limit.
    #[error("{what} is larger than the limit of {limit} bytes")]
    TooLarge {
        /// What was too large (component, request file, signature, manifest).
        what: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Plain HTTP to a host that is not loopback, without `--insecure`. No connection was made.
    #[error(
        "refusing plain HTTP to {host}: only loopback addresses may be reached without TLS (use --insecure to allow it)"
    )]
    InsecureRefused {
        /// The host that would have been reached.
        host: String,
    },
    /// The whole fetch took longer than `Limits::total_timeout`.
    #[error("fetching {source_str} took longer than {seconds} s")]
    TimedOut {
        /// The source.
        source_str: String,
        /// The limit, in seconds.
        seconds: u64,
    },
    /// The registry refused a request or sent something that is not a valid Wasm artifact.
    #[error("registry {registry}: {reason}")]
    Registry {
        /// The registry (`HOST[:PORT]`).
        registry: String,
        /// What went wrong.
        reason: String,
    },
    /// An HTTP download failed.
    #[error("HTTP {url}: {reason}")]
    Http {
        /// The URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// A local file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Cuts remote text to a bounded, single-line, printable form for an error message.
pub(crate) fn clip(text: &str) -> String {
    const MAX: usize = 300;
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX)
        .collect();
    if text.chars().count() > MAX {
        out.push('…');
    }
    out
}
