//! `toolhost-dist`: where plugins come from, and whether to believe them.
//!
//! - [`Source`] / [`OciRef`]: a local `NAME.wasm`, an `https://…/NAME.wasm` URL or an
//!   `oci://HOST[:PORT]/REPO:TAG` (or `@sha256:…`) reference.
//! - [`fetch`]: brings the component, its request file (`NAME.toml`) and its minisign
//!   signature, bounded by [`Limits`]; the digest is always computed locally and checked
//!   against the `--digest` pin.
//! - [`verify_signature`] / [`sign`]: minisign signatures, interoperable with the `minisign` tool;
//!   [`Statement`]: what a publisher signs (the plugin's name, its component's and its
//!   request file's digests); [`check_package`]: the install rule (unsigned / untrusted
//!   refused unless allowed, a request the signature does not cover refused unless allowed).
//! - [`publish`]: pushes a component as a CNCF "Wasm OCI artifact" (config
//!   `application/vnd.wasm.config.v0+json`, one `application/wasm` layer), with the request
//!   and signature as layers of their own media types.
//!
//! Everything that comes from the network or a plugin author is untrusted: sizes are capped
//! before and while reading, plain HTTP is refused off loopback unless `insecure`, and every
//! failed check is a typed [`DistError`] that names the check. The rules are written down in
//! docs/trust.md.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

mod creds;
pub mod error;
mod http;
pub mod oci;
pub mod signature;
pub mod source;
pub mod statement;

pub use error::DistError;
pub use oci::{
    PublishOptions, REQUEST_MEDIA_TYPE, SIGNATURE_MEDIA_TYPE, STATEMENT_MEDIA_TYPE,
    WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE, list_tags, publish,
};
pub use signature::{public_key_id, sign, signature_key_id, verify_signature};
pub use source::{OciRef, Source};
pub use statement::{
    Coverage, MAX_VERSION_CHARS, STATEMENT_HEADER, STATEMENT_HEADER_V1, Statement, Verified,
    component_version, parse_version, verify_package,
};

/// Size and time limits on everything fetched. Every field has a default (see [`Limits::default`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The largest component accepted, in bytes (default 64 MiB).
    pub max_component_bytes: u64,
    /// The largest request file (`NAME.toml`) accepted, in bytes (default 64 KiB).
    pub max_request_bytes: u64,
    /// The largest signature (`.minisig`) accepted, in bytes (default 16 KiB).
    pub max_signature_bytes: u64,
    /// The largest package statement accepted, in bytes (default 4 KiB).
    pub max_statement_bytes: u64,
    /// The largest OCI manifest accepted, in bytes (default 256 KiB).
    pub max_manifest_bytes: u64,
    /// The most layers an OCI manifest may list (default 16).
    pub max_layers: usize,
    /// How long to wait for a connection (default 10 s).
    pub connect_timeout: Duration,
    /// How long a connection may stay silent while reading (default 30 s).
    pub read_timeout: Duration,
    /// How long a whole fetch (component, request, signature) may take (default 10 min).
    pub total_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_component_bytes: 64 * 1024 * 1024,
            max_request_bytes: 64 * 1024,
            max_signature_bytes: signature::MAX_SIGNATURE_BYTES,
            max_statement_bytes: statement::MAX_STATEMENT_BYTES,
            max_manifest_bytes: 256 * 1024,
            max_layers: 16,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            total_timeout: Duration::from_secs(600),
        }
    }
}

/// How to fetch.
#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// A `sha256:HEX` pin (from `--digest`): the component's locally computed digest must equal it.
    pub expected_digest: Option<String>,
    /// Allow plain-HTTP registries and URLs on hosts that are not loopback.
    pub insecure: bool,
    /// Size and time limits.
    pub limits: Limits,
}

/// What [`fetch`] brought back. Nothing in it has been verified except the digest pin.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Suggested plugin name (the file stem, or the repository's last segment).
    pub name: String,
    /// The component's bytes.
    pub wasm: Vec<u8>,
    /// `sha256:HEX` of `wasm`, computed here (never taken from the remote).
    pub digest: String,
    /// The `NAME.toml` request text, if the source has one.
    pub request: Option<String>,
    /// The minisign signature text (`.minisig`), if the source has one.
    pub signature: Option<String>,
    /// The package statement that travelled with it (`NAME.wasm.statement`, or the OCI
    /// statement layer), if any: unverified text, checked by [`check_package`].
    pub statement: Option<String>,
    /// Canonical source string (for the lock's `source`).
    pub source: String,
}

/// Fetches a component with its request file and signature, enforcing the digest pin and
/// the size limits. Does not verify the signature: call [`verify_signature`] on the result.
pub async fn fetch(source: &Source, opts: &FetchOptions) -> Result<Fetched, DistError> {
    let pin = opts
        .expected_digest
        .as_deref()
        .map(source::check_digest)
        .transpose()?;
    let fetching = async {
        match source {
            Source::File(path) => fetch_file(path, &opts.limits),
            Source::Https(url) => http::fetch(url, opts).await,
            Source::Oci(r) => oci::fetch(r, opts).await,
        }
    };
    let fetched = tokio::time::timeout(opts.limits.total_timeout, fetching)
        .await
        .map_err(|_| DistError::TimedOut {
            source_str: source.to_string(),
            seconds: opts.limits.total_timeout.as_secs(),
        })??;
    if !fetched.wasm.starts_with(b"\0asm") {
        return Err(DistError::InvalidSource {
            source_str: fetched.source,
            reason: "the component is not a WebAssembly binary".into(),
        });
    }
    if let Some(expected) = pin
        && expected != fetched.digest
    {
        return Err(DistError::DigestMismatch {
            expected,
            actual: fetched.digest,
        });
    }
    tracing::info!(source = %fetched.source, digest = %fetched.digest, bytes = fetched.wasm.len(), "fetched");
    Ok(fetched)
}

/// The signature rule of `toolhost install` and `toolhost update` (docs/trust.md, "What a
/// signature covers"), applied to a fetched package named `name` (the name its publisher
/// signed: [`Fetched::name`]):
///
/// - signed by a trusted key over the package statement: `Ok(Some(_))` with
///   [`Coverage::Package`];
/// - signed the old way (the component alone) and the package has no request file: the
///   same, as there is nothing else to cover;
/// - signed the old way and it has a request file: [`DistError::RequestUnsigned`], or
///   `Ok(Some(_))` with [`Coverage::Component`] when `allow_unsigned` (the caller shows
///   the request as unsigned, never under the signer's name);
/// - unsigned ([`DistError::Unsigned`]) or signed by an unknown key
///   ([`DistError::UntrustedKey`]): refused, `Ok(None)` when `allow_unsigned`;
/// - a signature by a trusted key over anything else ([`DistError::BadSignature`]) and an
///   unreadable signature: never accepted.
pub fn check_package(
    fetched: &Fetched,
    name: &str,
    trusted_keys: &[String],
    allow_unsigned: bool,
) -> Result<Option<Verified>, DistError> {
    let statement = Statement::with_digest(
        name,
        &fetched.digest,
        fetched.request.as_deref().map(str::as_bytes),
    );
    let file = format!("shipped with {}", fetched.source);
    let shipped = fetched
        .statement
        .as_deref()
        .map(|text| (file.as_str(), text));
    let result = match &fetched.signature {
        None => Err(DistError::Unsigned),
        Some(sig) => verify_package(&statement, &fetched.wasm, sig, shipped, trusted_keys),
    };
    match result {
        Ok(v) if v.coverage == Coverage::Component && fetched.request.is_none() => {
            Ok(Some(Verified {
                coverage: Coverage::Package,
                ..v
            }))
        }
        Ok(v) if v.coverage == Coverage::Component && !allow_unsigned => {
            Err(DistError::RequestUnsigned { key_id: v.signer })
        }
        Ok(v) => Ok(Some(v)),
        Err(DistError::Unsigned | DistError::UntrustedKey { .. }) if allow_unsigned => {
            tracing::warn!(source = %fetched.source, "accepting an unsigned or untrusted artifact (--allow-unsigned)");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// `sha256:HEX` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A local `NAME.wasm` with `NAME.toml` and `NAME.wasm.minisig` beside it (each optional).
fn fetch_file(path: &Path, limits: &Limits) -> Result<Fetched, DistError> {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let wasm =
        read_capped(path, limits.max_component_bytes, "the component")?.ok_or_else(|| {
            DistError::Io {
                path: path.to_path_buf(),
                source: std::io::ErrorKind::NotFound.into(),
            }
        })?;
    let request = read_text(
        &path.with_extension("toml"),
        limits.max_request_bytes,
        "the request file",
    )?;
    let mut sig_path = path.as_os_str().to_owned();
    sig_path.push(".minisig");
    let signature = read_text(
        Path::new(&sig_path),
        limits.max_signature_bytes,
        "the signature",
    )?;
    let statement = read_text(
        &statement_path(path),
        limits.max_statement_bytes,
        "the package statement",
    )?;
    Ok(Fetched {
        name,
        digest: sha256_digest(&wasm),
        wasm,
        request,
        signature,
        statement,
        source: Source::File(path.to_path_buf()).to_string(),
    })
}

/// Where the package statement of component `wasm` lives beside it: `NAME.wasm.statement`.
pub fn statement_path(wasm: &Path) -> std::path::PathBuf {
    let mut p = wasm.as_os_str().to_owned();
    p.push(".statement");
    p.into()
}

/// Reads at most `limit` bytes of a file; `None` if it does not exist.
fn read_capped(path: &Path, limit: u64, what: &str) -> Result<Option<Vec<u8>>, DistError> {
    let io = |source| DistError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let mut buf = Vec::new();
    // Read one byte past the limit to tell "exactly at the limit" from "larger".
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > limit {
        return Err(DistError::TooLarge {
            what: what.to_string(),
            limit,
        });
    }
    Ok(Some(buf))
}

fn read_text(path: &Path, limit: u64, what: &str) -> Result<Option<String>, DistError> {
    read_capped(path, limit, what)?
        .map(|b| {
            String::from_utf8(b).map_err(|_| DistError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
            })
        })
        .transpose()
}

/// Checks UTF-8 for a side file fetched from the network.
pub(crate) fn utf8(bytes: Vec<u8>, what: &str, source_str: &str) -> Result<String, DistError> {
    String::from_utf8(bytes).map_err(|_| DistError::InvalidSource {
        source_str: source_str.to_string(),
        reason: format!("{what} is not UTF-8 text"),
    })
}
