//! [`Source`] and [`OciRef`]: where a plugin comes from, parsed from what the operator typed.
//!
//! Three kinds (see docs/trust.md):
//! - a local `NAME.wasm` path (or `file://` URL), with `NAME.toml` and `NAME.wasm.minisig` beside it;
//! - an `https://…/NAME.wasm` URL, with `NAME.toml` and `NAME.wasm.minisig` beside it;
//! - `oci://HOST[:PORT]/REPO:TAG` or `oci://HOST[:PORT]/REPO@sha256:HEX`.
//!
//! Parsing never touches the network or the file system; the `Display` form is the canonical
//! string the lock file stores as `source`.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use crate::DistError;

/// Where a plugin comes from; `Display` gives the canonical string stored in the lock's `source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A local `.wasm` file (an absolute path).
    File(PathBuf),
    /// An `https://…/NAME.wasm` URL (or `http://`, allowed on loopback or with `insecure`).
    Https(url::Url),
    /// An OCI registry reference.
    Oci(OciRef),
}

impl Source {
    /// Parses `oci://…`, `https://…`/`http://…`, `file://…` or a plain path to a `.wasm` file.
    pub fn parse(s: &str) -> Result<Source, DistError> {
        let invalid = |reason: &str| DistError::InvalidSource {
            source_str: s.to_string(),
            reason: reason.to_string(),
        };
        if s.starts_with("oci://") {
            return OciRef::parse(s).map(Source::Oci);
        }
        if s.starts_with("https://") || s.starts_with("http://") {
            let url = url::Url::parse(s).map_err(|e| invalid(&e.to_string()))?;
            if url.host_str().is_none_or(str::is_empty) {
                return Err(invalid("the URL has no host"));
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err(invalid("credentials in the URL are not supported"));
            }
            let last = url
                .path_segments()
                .and_then(|mut segs| segs.next_back())
                .unwrap_or("");
            if last.strip_suffix(".wasm").is_none_or(str::is_empty) {
                return Err(invalid("the URL must end in NAME.wasm"));
            }
            return Ok(Source::Https(url));
        }
        let path = if s.starts_with("file://") {
            let url = url::Url::parse(s).map_err(|e| invalid(&e.to_string()))?;
            url.to_file_path()
                .map_err(|()| invalid("not a local file URL"))?
        } else if s.contains("://") {
            return Err(invalid(
                "unknown scheme: use a path, https://…/NAME.wasm or oci://HOST/REPO:TAG",
            ));
        } else {
            PathBuf::from(s)
        };
        if path.extension().is_none_or(|e| e != "wasm") || path.file_stem().is_none() {
            return Err(invalid("a local source must be a NAME.wasm file"));
        }
        let path = std::path::absolute(&path).map_err(|e| invalid(&e.to_string()))?;
        Ok(Source::File(path))
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(p) => match url::Url::from_file_path(p) {
                Ok(u) => write!(f, "{u}"),
                Err(()) => write!(f, "file://{}", p.display()),
            },
            Source::Https(u) => write!(f, "{u}"),
            Source::Oci(r) => write!(f, "{r}"),
        }
    }
}

/// `oci://HOST[:PORT]/REPO:TAG` or `oci://HOST[:PORT]/REPO@sha256:HEX` (or both: the digest wins).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    /// `HOST[:PORT]` of the registry.
    pub registry: String,
    /// The repository path inside the registry (lowercase, `/`-separated).
    pub repository: String,
    /// The tag, if given.
    pub tag: Option<String>,
    /// The manifest digest (`sha256:HEX`), if given.
    pub digest: Option<String>,
}

impl OciRef {
    /// Parses `oci://HOST[:PORT]/REPO:TAG`, `oci://HOST[:PORT]/REPO@sha256:HEX`
    /// or `oci://HOST[:PORT]/REPO:TAG@sha256:HEX`.
    pub fn parse(s: &str) -> Result<OciRef, DistError> {
        let invalid = |reason: &str| DistError::InvalidSource {
            source_str: s.to_string(),
            reason: reason.to_string(),
        };
        let rest = s
            .strip_prefix("oci://")
            .ok_or_else(|| invalid("an OCI reference starts with oci://"))?;
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| invalid("expected oci://HOST[:PORT]/REPO:TAG"))?;
        // The registry must be a plain HOST[:PORT]: let the URL parser judge the host and port.
        let as_url = url::Url::parse(&format!("https://{registry}/"))
            .map_err(|e| invalid(&format!("bad registry `{registry}`: {e}")))?;
        if registry.is_empty()
            || registry.contains(['@', '?', '#', '\\'])
            || as_url.host_str().is_none_or(str::is_empty)
        {
            return Err(invalid(&format!("bad registry `{registry}`")));
        }
        let (path, digest) = match path.split_once('@') {
            Some((p, d)) => {
                check_digest(d)
                    .map_err(|_| invalid("the digest must be sha256:<64 hex digits>"))?;
                (p, Some(d.to_string()))
            }
            None => (path, None),
        };
        // A tag follows the last ':' that comes after the last '/'.
        let last_slash = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last_slash..].rfind(':') {
            Some(i) => {
                let i = last_slash + i;
                (&path[..i], Some(path[i + 1..].to_string()))
            }
            None => (path, None),
        };
        if !valid_repository(repository) {
            return Err(invalid(
                "the repository must be lowercase letters, digits and . _ - separated by /",
            ));
        }
        if let Some(t) = &tag
            && !valid_tag(t)
        {
            return Err(invalid(
                "a tag is 1 to 128 of A-Z a-z 0-9 . _ - (not starting with . or -)",
            ));
        }
        if tag.is_none() && digest.is_none() {
            return Err(invalid("add :TAG or @sha256:DIGEST to the repository"));
        }
        Ok(OciRef {
            registry: registry.to_string(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// The host part of the registry, without port or IPv6 brackets.
    pub fn host(&self) -> String {
        url::Url::parse(&format!("https://{}/", self.registry))
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_string()))
            .unwrap_or_else(|| self.registry.clone())
    }

    /// The last path segment of the repository: the suggested plugin name.
    pub fn basename(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Checks `sha256:` followed by 64 hex digits, and returns it lowercased.
pub fn check_digest(d: &str) -> Result<String, DistError> {
    let hex = d
        .strip_prefix("sha256:")
        .ok_or_else(|| DistError::InvalidDigest(crate::error::clip(d)))?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(DistError::InvalidDigest(crate::error::clip(d)));
    }
    Ok(format!("sha256:{}", hex.to_ascii_lowercase()))
}

/// The OCI distribution spec's repository grammar: `/`-separated components of lowercase
/// letters and digits, joined inside a component by `.`, `_`, `__` or runs of `-`.
fn valid_repository(r: &str) -> bool {
    !r.is_empty()
        && r.len() <= 255
        && r.split('/').all(|c| {
            let b = c.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|&x| x.is_ascii_lowercase() || x.is_ascii_digit() || b"._-".contains(&x))
        })
}

/// The OCI distribution spec's tag grammar: `[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`.
fn valid_tag(t: &str) -> bool {
    let b = t.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|&x| x.is_ascii_alphanumeric() || b"._-".contains(&x))
}

/// True when `host` (a name or an IP literal, IPv6 with or without brackets) is a loopback
/// address: only there may plain HTTP be used without `insecure`. `localhost` counts, as the
/// resolver maps it to loopback (RFC 6761).
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn oci_refs() {
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/calc:1.0").unwrap();
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "tools/calc");
        assert_eq!(r.tag.as_deref(), Some("1.0"));
        assert_eq!(r.basename(), "calc");
        assert_eq!(r.host(), "127.0.0.1");
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/tools/calc:1.0");
        let d = format!("sha256:{}", "a".repeat(64));
        let r = OciRef::parse(&format!("oci://ghcr.io/x/calc@{d}")).unwrap();
        assert_eq!(r.tag, None);
        assert_eq!(r.digest.as_deref(), Some(d.as_str()));
        for bad in [
            "oci://host/calc",
            "oci:///calc:1",
            "oci://host/Calc:1",
            "oci://host/calc:-x",
            "oci://host/calc@sha256:abc",
            "oci://us@host/calc:1",
            "https://host/calc:1",
        ] {
            assert!(OciRef::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sources() {
        assert!(matches!(
            Source::parse("https://example.com/p/calc.wasm").unwrap(),
            Source::Https(_)
        ));
        assert!(Source::parse("https://example.com/p/calc.toml").is_err());
        assert!(Source::parse("ftp://example.com/calc.wasm").is_err());
        let Source::File(p) = Source::parse("calc.wasm").unwrap() else {
            panic!("not a file source")
        };
        assert!(p.is_absolute());
        assert!(Source::parse("calc.txt").is_err());
    }

    #[test]
    fn loopback() {
        for h in ["127.0.0.1", "127.1.2.3", "[::1]", "::1", "localhost"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["10.0.0.1", "example.com", "[::2]", "localhost.example.com"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
