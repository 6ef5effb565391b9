//! `toolhost.lock`: the operator's approvals, one table per plugin and per MCP server.
//!
//! ```toml
//! version = 1
//!
//! [plugins.files]
//! source = "file:///home/me/plugins/files.wasm"
//! digest = "sha256:…"
//! signer = "A1B2C3D4E5F60718"          # minisign key id, when the signature was verified
//! version = "2.1.0"                     # the release its signed statement names
//! approved_at = "2026-12-01T07:00:00Z"
//!
//! [plugins.files.grant]
//! read = ["/home/me/plugins/files-data"]
//! timeout_ms = 2000
//! memory_mb = 32
//!
//! [plugins.files.tools]
//! read_file = "sha256:…"                # canonical JSON of name, description, parameters, permissions
//!
//! [mcp.everything]
//! approved_at = "…"
//! [mcp.everything.tools]
//! echo = "sha256:…"
//! ```
//!
//! The file is read with unknown keys refused (a typo must not silently drop an approval)
//! and written atomically: a temp file in the same folder, synced, then renamed over.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::TrustError;
use toolhost_caps::Capabilities;

/// The lock file's name in the plugins folder.
pub const LOCK_FILE: &str = "toolhost.lock";

/// The lock format version this build reads and writes.
pub const VERSION: u32 = 1;

/// The whole lock file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// Approved plugins, by plugin name (the file stem of `NAME.wasm`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins: BTreeMap<String, PluginEntry>,
    /// Approved MCP servers, by the server's name in the host config.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp: BTreeMap<String, McpEntry>,
    /// Approved skills (the `skills/` folder `serve` offers), by skill name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skills: BTreeMap<String, SkillEntry>,
}

impl Default for Lock {
    fn default() -> Self {
        Lock {
            version: VERSION,
            plugins: BTreeMap::new(),
            mcp: BTreeMap::new(),
            skills: BTreeMap::new(),
        }
    }
}

/// The approval of one skill: the digest of its whole content (every file's path and
/// digest), so any change to any file withholds it until approved again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillEntry {
    /// "sha256:HEX" of the skill's manifest (see `toolhost_mcp::skills`).
    pub digest: String,
    /// When it was approved (RFC 3339, UTC).
    pub approved_at: String,
}

/// The approval of one plugin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginEntry {
    /// Where it came from (`file:///…`, `https://…`, `oci://…`).
    pub source: String,
    /// "sha256:HEX" of the approved `.wasm`.
    pub digest: String,
    /// The minisign key id that signed it, if a signature was verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The release version the verified signature covered (its package statement's
    /// `version`); absent for an unsigned or unversioned approval. A package older than
    /// this, or another file of the same version, is held (docs/trust.md, "Rollback and
    /// freeze").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<semver::Version>,
    /// What that signature covered (docs/trust.md, "What a signature covers"); absent for
    /// an unsigned plugin and in locks written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature_covers: Option<SignatureCovers>,
    /// When it was approved (RFC 3339, UTC).
    pub approved_at: String,
    /// The approved grant.
    #[serde(default)]
    pub grant: Capabilities,
    /// Hash of each approved tool definition, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
}

/// What a verified signature covered when a plugin was approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureCovers {
    /// The package: the plugin's name, its component and its request file (or that it
    /// had none).
    Package,
    /// The component only (signed the old way); the request file was unsigned.
    Component,
}

/// The approval of one MCP server's tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpEntry {
    /// When it was approved (RFC 3339, UTC).
    pub approved_at: String,
    /// Hash of each approved tool definition, by tool name (as the server names it).
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
}

impl Lock {
    /// The lock file of a plugins folder.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join(LOCK_FILE)
    }

    /// Reads a lock file; a missing file is an empty lock.
    pub fn load(path: &Path) -> Result<Lock, TrustError> {
        let file = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            Err(source) => return Err(TrustError::Read { file, source }),
        };
        Self::parse(&text, &file)
    }

    /// Parses lock text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Lock, TrustError> {
        // Read the version first, so a newer format says so instead of "unknown field".
        if let Ok(v) = toml::from_str::<toml::Table>(text)
            && let Some(found) = v.get("version").and_then(toml::Value::as_integer)
            && found != i64::from(VERSION)
        {
            return Err(TrustError::Version {
                file: file.to_string(),
                found: u32::try_from(found).unwrap_or(u32::MAX),
                supported: VERSION,
            });
        }
        toml::from_str(text).map_err(|e| TrustError::Invalid {
            file: file.to_string(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// The lock as TOML text.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string_pretty(self).unwrap_or_default();
        format!(
            "# toolhost.lock: the operator's approvals (written by `toolhost approve`/`install`).\n\
             # The effective grant of a plugin is what its tools declare, what NAME.toml\n\
             # requests and what is approved here. See docs/trust.md.\n{body}"
        )
    }

    /// Writes the lock atomically: a temp file beside it, synced, renamed over it.
    pub fn save(&self, path: &Path) -> Result<(), TrustError> {
        write_atomically(path, self.to_toml().as_bytes())
    }
}

/// Writes `bytes` to `path` atomically (temp file in the same folder, fsync, rename), so a
/// reader sees the old file or the new one, never a torn one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), TrustError> {
    let file = path.display().to_string();
    let err = |source| TrustError::Write {
        file: file.clone(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.map_err(err)
}

/// The current time as RFC 3339 UTC, seconds precision (`2026-12-01T07:00:00Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Lock {
        let mut lock = Lock::default();
        lock.plugins.insert(
            "files".into(),
            PluginEntry {
                source: "file:///p/files.wasm".into(),
                digest: "sha256:00".into(),
                signer: Some("A1B2C3D4E5F60718".into()),
                version: Some(semver::Version::new(2, 1, 0)),
                signature_covers: Some(SignatureCovers::Package),
                approved_at: now_rfc3339(),
                grant: Capabilities {
                    read: vec!["/p/files-data".into()],
                    memory_mb: Some(32),
                    ..Capabilities::default()
                },
                tools: [("read_file".to_string(), "sha256:11".to_string())].into(),
            },
        );
        lock.mcp.insert(
            "everything".into(),
            McpEntry {
                approved_at: now_rfc3339(),
                tools: [("echo".to_string(), "sha256:22".to_string())].into(),
            },
        );
        lock
    }

    #[test]
    fn round_trip_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = Lock::path_in(dir.path());
        assert_eq!(
            Lock::load(&path).unwrap(),
            Lock::default(),
            "missing = empty"
        );
        let lock = sample();
        lock.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("[plugins.files.grant]"), "{text}");
        assert!(text.contains("read_file = \"sha256:11\""), "{text}");
        assert!(text.contains("version = \"2.1.0\""), "{text}");
        assert_eq!(Lock::load(&path).unwrap(), lock);
        // No temp file left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(LOCK_FILE)]);
    }

    #[test]
    fn hand_edited_lock_is_a_typed_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = Lock::path_in(dir.path());
        let text = sample().to_toml().replace("memory_mb", "memroy_mb");
        std::fs::write(&path, text).unwrap();
        let err = Lock::load(&path).unwrap_err();
        assert!(matches!(err, TrustError::Invalid { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.contains(&path.display().to_string()) && msg.contains("memroy_mb"),
            "{msg}"
        );

        std::fs::write(&path, "version = 1\n[plugins.x]\nsource = 3\n").unwrap();
        assert!(matches!(Lock::load(&path), Err(TrustError::Invalid { .. })));
        let bad_version = sample().to_toml().replace("\"2.1.0\"", "\"2.1\"");
        std::fs::write(&path, bad_version).unwrap();
        assert!(matches!(Lock::load(&path), Err(TrustError::Invalid { .. })));
        std::fs::write(&path, "version = 7\n").unwrap();
        let err = Lock::load(&path).unwrap_err();
        assert!(
            matches!(err, TrustError::Version { found: 7, .. }),
            "{err:?}"
        );
        std::fs::write(&path, "not = [toml").unwrap();
        assert!(matches!(Lock::load(&path), Err(TrustError::Invalid { .. })));
        // A network rule is parsed when the lock is read: one that is not a rule is an
        // error naming it, never a string that might match something later.
        let bad_rule = sample()
            .to_toml()
            .replace("network = []", "network = [\"https://a.*.example\"]");
        std::fs::write(&path, bad_rule).unwrap();
        let err = Lock::load(&path).unwrap_err();
        assert!(
            matches!(err, TrustError::Invalid { .. }) && err.to_string().contains("wildcard"),
            "{err:?}"
        );
    }
}
