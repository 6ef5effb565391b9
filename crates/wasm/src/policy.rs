//! Policy files: `NAME.toml` beside `NAME.wasm` grants concrete capabilities and sets
//! limits. Every key is optional; a missing file means "no capability, default limits".
//!
//! ```toml
//! read = ["./data"]                 # read-only preopens (relative to this file)
//! write = ["./out"]                 # read-write preopens
//! network = ["https://api.example.com", "http://127.0.0.1:8080", "https://*.github.com"]
//! sockets = false                   # raw TCP (wasi:sockets) to the network hosts; off by default
//! env = ["API_KEY"]                 # host environment variables passed in
//! timeout_ms = 5000                 # wall-clock deadline per call (epoch)
//! fuel = 100000000                  # optional instruction budget per call (deterministic)
//! memory_mb = 64                    # linear memory cap per call
//! output_kb = 64                    # cap of captured guest stdout/stderr, each
//! ```
//!
//! Unknown keys are an error naming the file and the key. The grant a tool gets is the
//! intersection of what it **declared** (its permissions in `describe()`) and what this
//! file offers: `read` needs Read, `write` needs Write, `network`/`sockets` need Network.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::PolicyError;
use crate::net::NetRule;

/// Default wall-clock deadline of one call.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Default linear-memory cap of one call.
pub const DEFAULT_MEMORY_MB: u64 = 64;
/// Largest memory cap a policy may ask for (the pooling allocator's slot size).
pub const MAX_MEMORY_MB: u64 = 1024;
/// Default cap of captured stdout (and, separately, stderr), in KiB.
pub const DEFAULT_OUTPUT_KB: u64 = 64;

/// The raw file, as written. `deny_unknown_fields` makes a typo an error.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    read: Vec<String>,
    #[serde(default)]
    write: Vec<String>,
    #[serde(default)]
    network: Vec<String>,
    #[serde(default)]
    sockets: bool,
    #[serde(default)]
    env: Vec<String>,
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    memory_mb: Option<u64>,
    output_kb: Option<u64>,
}

/// A parsed, checked policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The file it came from (`None` for the default policy).
    pub file: Option<PathBuf>,
    /// Read-only directories (absolute, normalised).
    pub read: Vec<PathBuf>,
    /// Read-write directories (absolute, normalised).
    pub write: Vec<PathBuf>,
    /// The network allowlist.
    pub network: Vec<NetRule>,
    /// Whether raw sockets (wasi:sockets TCP) are granted, checked against `network`.
    pub sockets: bool,
    /// Names of host environment variables passed in.
    pub env: Vec<String>,
    /// Wall-clock deadline per call.
    pub timeout: Duration,
    /// Fuel per call, if metered.
    pub fuel: Option<u64>,
    /// Linear-memory cap per call, bytes.
    pub memory_bytes: usize,
    /// Cap of captured stdout/stderr, bytes each.
    pub output_bytes: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            file: None,
            read: Vec::new(),
            write: Vec::new(),
            network: Vec::new(),
            sockets: false,
            env: Vec::new(),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            fuel: None,
            memory_bytes: mib(DEFAULT_MEMORY_MB),
            output_bytes: kib(DEFAULT_OUTPUT_KB),
        }
    }
}

fn mib(n: u64) -> usize {
    usize::try_from(n.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX)
}
fn kib(n: u64) -> usize {
    usize::try_from(n.saturating_mul(1024)).unwrap_or(usize::MAX)
}

impl Policy {
    /// The policy file that belongs to a component: `NAME.toml` beside `NAME.wasm`.
    pub fn path_for(wasm: &Path) -> PathBuf {
        wasm.with_extension("toml")
    }

    /// Loads the policy of `wasm`: its `NAME.toml` if present, else the default policy.
    pub fn for_component(wasm: &Path) -> Result<Self, PolicyError> {
        let file = Self::path_for(wasm);
        match std::fs::read_to_string(&file) {
            Ok(text) => Self::parse(&text, &file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(PolicyError::Read {
                file: file.display().to_string(),
                source,
            }),
        }
    }

    /// Parses policy text. `file` names the file in errors and anchors relative paths.
    pub fn parse(text: &str, file: &Path) -> Result<Self, PolicyError> {
        let fname = file.display().to_string();
        let raw: RawPolicy = toml::from_str(text).map_err(|e| {
            let msg = e.message().to_string();
            // serde's message for an unknown key is "unknown field `x`, expected one of ..."
            match msg
                .strip_prefix("unknown field `")
                .and_then(|r| r.split('`').next())
            {
                Some(key) => PolicyError::UnknownKey {
                    file: fname.clone(),
                    key: key.to_string(),
                },
                None => PolicyError::Invalid {
                    file: fname.clone(),
                    message: msg,
                },
            }
        })?;
        let base = file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let dirs = |list: &[String], key: &str| -> Result<Vec<PathBuf>, PolicyError> {
            list.iter()
                .map(|d| {
                    let p = normalize(&base.join(d));
                    if !p.is_dir() {
                        return Err(PolicyError::Invalid {
                            file: fname.clone(),
                            message: format!(
                                "`{key}` entry {d:?}: {} is not a directory",
                                p.display()
                            ),
                        });
                    }
                    Ok(p)
                })
                .collect()
        };
        let network = raw
            .network
            .iter()
            .map(|r| {
                NetRule::parse(r).map_err(|why| PolicyError::Invalid {
                    file: fname.clone(),
                    message: format!("`network` entry {r:?}: {why}"),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let memory_mb = raw.memory_mb.unwrap_or(DEFAULT_MEMORY_MB);
        if memory_mb == 0 || memory_mb > MAX_MEMORY_MB {
            return Err(PolicyError::Invalid {
                file: fname,
                message: format!(
                    "`memory_mb` must be between 1 and {MAX_MEMORY_MB}, got {memory_mb}"
                ),
            });
        }
        let timeout_ms = raw.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 {
            return Err(PolicyError::Invalid {
                file: fname,
                message: "`timeout_ms` must be at least 1".into(),
            });
        }
        Ok(Policy {
            file: Some(file.to_path_buf()),
            read: dirs(&raw.read, "read")?,
            write: dirs(&raw.write, "write")?,
            network,
            sockets: raw.sockets,
            env: raw.env,
            timeout: Duration::from_millis(timeout_ms),
            fuel: raw.fuel,
            memory_bytes: mib(memory_mb),
            output_bytes: kib(raw.output_kb.unwrap_or(DEFAULT_OUTPUT_KB)),
        })
    }

    /// The file name to quote in denial messages ("add ... to `network` in calc.toml").
    pub fn file_name(&self) -> String {
        match &self.file {
            Some(f) => f.display().to_string(),
            None => "the plugin's policy file (NAME.toml beside NAME.wasm)".into(),
        }
    }
}

/// Makes a path absolute and removes `.`/`..` lexically (symlinks are left to the
/// sandbox, which never follows one out of a preopen).
fn normalize(p: &Path) -> PathBuf {
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_names_file_and_key() {
        let err = Policy::parse("timeout_ms = 5\nnetwrok = []\n", Path::new("/x/calc.toml"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("/x/calc.toml") && err.contains("netwrok"),
            "{err}"
        );
    }

    #[test]
    fn defaults_and_limits() {
        let p = Policy::parse(
            "fuel = 10\nmemory_mb = 8\ntimeout_ms = 200\n",
            Path::new("/tmp/a.toml"),
        )
        .unwrap_or_default();
        assert_eq!(p.fuel, Some(10));
        assert_eq!(p.memory_bytes, 8 << 20);
        assert_eq!(p.timeout, Duration::from_millis(200));
        assert!(Policy::parse("memory_mb = 0", Path::new("a.toml")).is_err());
        assert!(Policy::parse("network = [\"ftp://x\"]", Path::new("a.toml")).is_err());
        assert!(Policy::parse("read = [\"/definitely/not/here\"]", Path::new("a.toml")).is_err());
    }
}
