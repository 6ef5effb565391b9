//! Policy files: `NAME.toml` beside `NAME.wasm` grants concrete capabilities and sets
//! limits. Every key is optional; a missing file means "no capability, default limits".
//!
//! ```toml
//! read = ["./data"]                 # read-only preopens (relative to this file)
//! write = ["./out"]                 # read-write preopens
//! network = ["https://api.example.com", "http://127.0.0.1:8080", "https://*.github.com"]
//! sockets = false                   # raw TCP (wasi:sockets) to the network hosts; off by default
//! env = ["API_KEY"]                 # host environment variables passed in
//! config = ["OPENWEATHER_API_KEY"]  # wasi:config/store keys (values: the operator's toml)
//! timeout_ms = 5000                 # wall-clock deadline per call (epoch)
//! fuel = 100000000                  # instruction budget per call (deterministic; default DEFAULT_FUEL)
//! memory_mb = 64                    # linear memory cap per call
//! output_kb = 64                    # cap of captured guest stdout/stderr, each
//! ```
//!
//! Unknown keys are an error naming the file and the key. The grant a tool gets is the
//! intersection of what it **declared** (its permissions in `describe()`) and what this
//! file offers: `read` needs Read, `write` needs Write, `network`/`sockets` need Network.
//!
//! **Limits have maxima** ([`MAX_TIMEOUT_MS`], [`MAX_FUEL`], [`MAX_MEMORY_MB`],
//! [`MAX_OUTPUT_KB`]): a value above one is refused with an error naming the file and the
//! key, never clamped silently.
//!
//! **Never grantable** (see [`Protected`]): the plugins folder (the folder of the policy
//! file) and every folder above it, the folder holding the real file of any plugin or
//! policy of that folder (when it is a symlink) and every folder above that, the compile
//! cache (itself, everything inside it, every folder above it) and the paths the operator
//! protects (the host config file). A plugin granted one of those could rewrite its own
//! policy, replace another plugin or plant native code in the cache. A folder *inside*
//! the plugins folder is fine (a dedicated data folder such as `./data/NAME`): plugins are
//! only the `*.wasm` files directly in the plugins folder. Every granted folder is
//! resolved to its real path (symlinks followed) for the check; the sandbox opens the path
//! as written and holds it (`dirs.rs`). Such a policy is refused at load with an error
//! naming the file, the key and the entry.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use toolhost_core::tools::{Capability, Permission};

use crate::config::ConfigValues;
use crate::error::PolicyError;
use crate::net::NetRule;
use toolhost_caps::{Capabilities, Folder};

/// Default wall-clock deadline of one call.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// Default linear-memory cap of one call.
pub const DEFAULT_MEMORY_MB: u64 = 64;
/// Largest memory cap a policy may ask for (the pooling allocator's slot size).
pub const MAX_MEMORY_MB: u64 = 1024;
/// Default cap of captured stdout (and, separately, stderr), in KiB.
pub const DEFAULT_OUTPUT_KB: u64 = 64;
/// Largest wall-clock deadline a policy may ask for: 10 minutes.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Default fuel budget of one call: a CPU bound that does not depend on the machine's
/// speed or load. Sized from measurements (`docs/permissions.md`, "Fuel"): the heaviest
/// call of the example plugins (`js_http_get`) uses 0.6 % of it, while a guest spinning
/// in a tight loop spends it in well under a second, long before the default deadline.
pub const DEFAULT_FUEL: u64 = 5_000_000_000;
/// Largest fuel budget a policy may ask for (10^13 instructions, hours of CPU: the
/// deadline stops such a call long before).
pub const MAX_FUEL: u64 = 10_000_000_000_000;
/// Largest cap of captured stdout/stderr a policy may ask for: 16 MiB each.
pub const MAX_OUTPUT_KB: u64 = 16 * 1024;

/// Paths no policy may grant, in `read` or `write` (see the module docs). Compared by real
/// path (symlinks resolved).
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// `(real path, sealed)`: a grant may be neither the path nor a folder above it; when
    /// `sealed`, nor a folder inside it.
    entries: Vec<(PathBuf, bool)>,
}

impl Protected {
    /// No protected path (the plugins folder of a policy is always protected anyway).
    pub fn new() -> Self {
        Self::default()
    }

    /// Protects `path` (a file or folder): no grant may be it or a folder above it.
    pub fn add(&mut self, path: &Path) {
        self.entries.push((real_path(path), false));
    }

    /// Protects the folder `path` and all it holds: no grant may be it, a folder above
    /// it, or a folder inside it (the compile cache).
    pub fn add_sealed(&mut self, path: &Path) {
        self.entries.push((real_path(path), true));
    }

    /// Why the (real) folder `dir` may not be granted, if it may not.
    fn refuses(&self, dir: &Path) -> Option<String> {
        self.entries.iter().find_map(|(p, sealed)| {
            if p == dir {
                Some(format!("is the protected path {}", p.display()))
            } else if p.starts_with(dir) {
                Some(format!("contains the protected path {}", p.display()))
            } else if *sealed && dir.starts_with(p) {
                Some(format!("is inside the protected folder {}", p.display()))
            } else {
                None
            }
        })
    }
}

/// The real path of `p` (symlinks resolved), or its lexical normal form when it does not
/// exist (nothing can be granted inside a folder that does not exist yet).
fn real_path(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| normalize(p))
}

/// What a plugins folder protects: the folder itself and the real location of each of
/// its plugins and policies (a symlinked `calc.wasm` protects the folder it points into).
fn plugins_folder_protected(folder: &Path, out: &mut Protected) {
    out.add(folder);
    let Ok(rd) = std::fs::read_dir(folder) else {
        return;
    };
    for e in rd.filter_map(Result::ok) {
        let p = e.path();
        let ext = p.extension().and_then(|x| x.to_str());
        if matches!(ext, Some("wasm" | "toml")) && e.file_type().is_ok_and(|t| t.is_symlink()) {
            out.add(&p);
        }
    }
}

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
    #[serde(default)]
    config: Vec<String>,
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    memory_mb: Option<u64>,
    output_kb: Option<u64>,
}

/// A parsed, checked policy: a plugin's request, or (after the trust check) what is in
/// effect for it. Its capabilities are the one capability type ([`Capabilities`]), with
/// every limit filled in (the file's value or the host default).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// The file it came from (`None` for the default policy).
    pub file: Option<PathBuf>,
    /// The capabilities and limits: folders (absolute; the ones that exist), network
    /// rules, sockets, env names, config keys; `timeout_ms`, `memory_mb` and `output_kb`
    /// always set, `fuel` unset only for a policy built in code (an unmetered call).
    pub caps: Capabilities,
    /// The operator's values for the granted keys (only those; empty in a request).
    pub config_values: ConfigValues,
    /// Requested folders that do not exist (left out of `read` and `write`): the tools
    /// that need one refuse every call with the fix ([`Self::missing_refusal`]); the
    /// other tools of the plugin are unaffected.
    pub missing: Vec<MissingDir>,
}

/// A folder a policy requests that does not exist. It cannot be granted; only the tools
/// needing it are withheld (a pure tool of the same plugin still runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingDir {
    /// `read` or `write`.
    pub key: String,
    /// The entry as written.
    pub entry: String,
    /// The absolute path it names.
    pub path: PathBuf,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            file: None,
            caps: Capabilities {
                timeout_ms: Some(DEFAULT_TIMEOUT_MS),
                fuel: Some(DEFAULT_FUEL),
                memory_mb: Some(DEFAULT_MEMORY_MB),
                output_kb: Some(DEFAULT_OUTPUT_KB),
                ..Capabilities::default()
            },
            config_values: ConfigValues::default(),
            missing: Vec::new(),
        }
    }
}

/// `n` MiB in bytes, saturating.
pub(crate) fn mib(n: u64) -> usize {
    usize::try_from(n.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX)
}
/// `n` KiB in bytes, saturating.
pub(crate) fn kib(n: u64) -> usize {
    usize::try_from(n.saturating_mul(1024)).unwrap_or(usize::MAX)
}

impl Policy {
    /// Wall-clock deadline per call.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.caps.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS))
    }

    /// Fuel per call; `None` leaves the call unmetered.
    pub fn fuel(&self) -> Option<u64> {
        self.caps.fuel
    }

    /// Linear-memory cap per call, bytes.
    pub fn memory_bytes(&self) -> usize {
        mib(self.caps.memory_mb.unwrap_or(DEFAULT_MEMORY_MB))
    }

    /// Cap of captured stdout/stderr, bytes each.
    pub fn output_bytes(&self) -> usize {
        kib(self.caps.output_kb.unwrap_or(DEFAULT_OUTPUT_KB))
    }

    /// The policy file that belongs to a component: `NAME.toml` beside `NAME.wasm`.
    pub fn path_for(wasm: &Path) -> PathBuf {
        wasm.with_extension("toml")
    }

    /// Loads the policy of `wasm`: its `NAME.toml` if present, else the default policy.
    pub fn for_component(wasm: &Path) -> Result<Self, PolicyError> {
        Self::for_component_protected(wasm, &Protected::new())
    }

    /// [`Self::for_component`], refusing grants of `protected` paths too (the compile
    /// cache, the host config file).
    pub fn for_component_protected(
        wasm: &Path,
        protected: &Protected,
    ) -> Result<Self, PolicyError> {
        let file = Self::path_for(wasm);
        match std::fs::read_to_string(&file) {
            Ok(text) => Self::parse_protected(&text, &file, protected),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(PolicyError::Read {
                file: file.display().to_string(),
                source,
            }),
        }
    }

    /// Parses policy text. `file` names the file in errors and anchors relative paths;
    /// its folder is the plugins folder, which no entry may grant.
    pub fn parse(text: &str, file: &Path) -> Result<Self, PolicyError> {
        Self::parse_protected(text, file, &Protected::new())
    }

    /// [`Self::parse`], refusing grants of `protected` paths too.
    pub fn parse_protected(
        text: &str,
        file: &Path,
        protected: &Protected,
    ) -> Result<Self, PolicyError> {
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
        // Built only when the policy grants folders (a read_dir of the plugins folder).
        let mut forbidden: Option<Protected> = None;
        let mut missing = Vec::new();
        let mut refused = Vec::new();
        let mut dirs = |list: &[String], key: &str| -> Result<Vec<PathBuf>, PolicyError> {
            list.iter()
                .filter_map(|d| {
                    let p = normalize(&base.join(d));
                    // A folder that does not exist cannot be granted, and only the
                    // tools that need it lose it (see `MissingDir`).
                    if std::fs::symlink_metadata(&p)
                        .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
                    {
                        missing.push(MissingDir {
                            key: key.to_string(),
                            entry: d.clone(),
                            path: p,
                        });
                        return None;
                    }
                    Some((d, p))
                })
                .map(|(d, p)| {
                    if !p.is_dir() {
                        return Err(PolicyError::Invalid {
                            file: fname.clone(),
                            message: format!(
                                "`{key}` entry {d:?}: {} is not a directory",
                                p.display()
                            ),
                        });
                    }
                    let real = std::fs::canonicalize(&p).map_err(|e| PolicyError::Invalid {
                        file: fname.clone(),
                        message: format!("`{key}` entry {d:?}: {}: {e}", p.display()),
                    })?;
                    let forbidden = forbidden.get_or_insert_with(|| {
                        let mut f = protected.clone();
                        plugins_folder_protected(&base, &mut f);
                        f
                    });
                    if let Some(reason) = forbidden.refuses(&real) {
                        // Every refused entry is reported, not only the first.
                        refused.push(PolicyError::Forbidden {
                            file: fname.clone(),
                            key: key.to_string(),
                            entry: d.clone(),
                            reason: format!("{} {reason}", real.display()),
                        });
                    }
                    // The path as the operator wrote it is what gets opened (at load, as a
                    // held handle; see dirs.rs), not `real`: a symlink a guest planted in
                    // a writable folder since the last load must be refused there, not
                    // resolved here into a grant of wherever it points.
                    Ok(p)
                })
                .collect()
        };
        let read = dirs(&raw.read, "read")?;
        let write = dirs(&raw.write, "write")?;
        if refused.len() > 1 {
            return Err(PolicyError::ForbiddenEntries {
                file: fname,
                entries: refused.iter().map(ToString::to_string).collect(),
            });
        }
        if let Some(e) = refused.pop() {
            return Err(e);
        }
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
        if let Err((key, reason)) = crate::config::check_keys(&raw.config) {
            return Err(PolicyError::ConfigKey {
                file: fname,
                key,
                reason,
            });
        }
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
        if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
            return Err(PolicyError::Invalid {
                file: fname,
                message: format!(
                    "`timeout_ms` must be between 1 and {MAX_TIMEOUT_MS}, got {timeout_ms}"
                ),
            });
        }
        if let Some(fuel) = raw.fuel
            && (fuel == 0 || fuel > MAX_FUEL)
        {
            return Err(PolicyError::Invalid {
                file: fname,
                message: format!("`fuel` must be between 1 and {MAX_FUEL}, got {fuel}"),
            });
        }
        let output_kb = raw.output_kb.unwrap_or(DEFAULT_OUTPUT_KB);
        if output_kb == 0 || output_kb > MAX_OUTPUT_KB {
            return Err(PolicyError::Invalid {
                file: fname,
                message: format!(
                    "`output_kb` must be between 1 and {MAX_OUTPUT_KB}, got {output_kb}"
                ),
            });
        }
        Ok(Policy {
            file: Some(file.to_path_buf()),
            caps: Capabilities {
                read: read.into_iter().map(Folder::from).collect(),
                write: write.into_iter().map(Folder::from).collect(),
                network,
                sockets: raw.sockets,
                env: raw.env,
                config: raw.config,
                timeout_ms: Some(timeout_ms),
                fuel: Some(raw.fuel.unwrap_or(DEFAULT_FUEL)),
                memory_mb: Some(memory_mb),
                output_kb: Some(output_kb),
            },
            config_values: ConfigValues::default(),
            missing,
        })
    }

    /// Why a tool that declared `declared` cannot run under this policy, if it cannot:
    /// it needs a requested folder that does not exist (a `read` folder needs Read, a
    /// `write` folder Write). The message names the folder and how to fix it.
    pub fn missing_refusal(&self, declared: &[Permission]) -> Option<String> {
        let needed: Vec<&MissingDir> = self
            .missing
            .iter()
            .filter(|m| {
                let cap = if m.key == "write" {
                    Capability::WriteDirs
                } else {
                    Capability::ReadDirs
                };
                cap.granted_by(declared)
            })
            .collect();
        if needed.is_empty() {
            return None;
        }
        let file = self.file_name();
        let dirs: Vec<String> = needed
            .iter()
            .map(|m| format!("{} (`{}` entry {:?})", m.path.display(), m.key, m.entry))
            .collect();
        Some(format!(
            "needs the folder {} requested by {file}, which does not exist: create it (then restart toolhost or save {file} again), or edit {file}",
            dirs.join(" and ")
        ))
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
        assert_eq!(p.fuel(), Some(10));
        assert_eq!(p.memory_bytes(), 8 << 20);
        assert_eq!(p.timeout(), Duration::from_millis(200));
        assert!(Policy::parse("memory_mb = 0", Path::new("a.toml")).is_err());
        assert!(Policy::parse("network = [\"ftp://x\"]", Path::new("a.toml")).is_err());
    }

    #[test]
    fn a_missing_folder_withholds_only_what_needs_it() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = root.path().join("p.toml");
        std::fs::create_dir(root.path().join("out")).unwrap_or_else(|e| panic!("{e}"));
        let p = Policy::parse("read = [\"./gone\"]\nwrite = [\"./out\"]\n", &file)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(p.caps.read.is_empty());
        assert_eq!(p.caps.write.len(), 1);
        assert_eq!(p.missing.len(), 1);
        assert_eq!(p.missing[0].path, root.path().join("gone"));
        // Read needs the missing `read` folder, and so does Write (a Write tool is given
        // the read folders too); Network-only and pure tools do not.
        let why = p
            .missing_refusal(&[Permission::Read])
            .unwrap_or_else(|| panic!("Read needs ./gone"));
        assert!(
            why.contains(&root.path().join("gone").display().to_string())
                && why.contains("does not exist")
                && why.contains("create it")
                && why.contains("p.toml"),
            "{why}"
        );
        assert!(p.missing_refusal(&[Permission::Write]).is_some());
        assert_eq!(p.missing_refusal(&[Permission::Network]), None);
        assert_eq!(p.missing_refusal(&[]), None);
        // A file where a folder is requested stays an error.
        std::fs::write(root.path().join("f"), "").unwrap_or_else(|e| panic!("{e}"));
        assert!(Policy::parse("read = [\"./f\"]", &file).is_err());
    }

    fn err(text: &str, file: &Path, protected: &Protected) -> String {
        Policy::parse_protected(text, file, protected)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn huge_limits_are_refused_with_the_key() {
        let f = Path::new("/x/p.toml");
        let none = Protected::new();
        for (text, key) in [
            ("timeout_ms = 18446744073709551615", "`timeout_ms`"),
            ("timeout_ms = 600001", "`timeout_ms`"),
            ("fuel = 0", "`fuel`"),
            ("fuel = 18446744073709551615", "`fuel`"),
            ("output_kb = 99999999", "`output_kb`"),
            ("memory_mb = 4096", "`memory_mb`"),
        ] {
            let e = err(text, f, &none);
            assert!(e.contains("/x/p.toml") && e.contains(key), "{text}: {e}");
        }
        let ok = Policy::parse(
            "timeout_ms = 600000\nfuel = 10000000000000\noutput_kb = 16384\n",
            f,
        );
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn the_plugins_folder_its_ancestors_and_protected_paths_are_not_grantable() {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let plugins = root.path().join("plugins");
        let data = plugins.join("data");
        let cache = root.path().join("cache");
        let other = root.path().join("other");
        for d in [&data, &cache.join("index"), &other] {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(&plugins, other.join("link")).unwrap_or_else(|e| panic!("{e}"));
        let file = plugins.join("p.toml");
        let mut protected = Protected::new();
        protected.add_sealed(&cache);
        let config = root.path().join("other").join("toolhost.toml");
        std::fs::write(&config, "").unwrap_or_else(|e| panic!("{e}"));
        protected.add(&config);
        let abs = |p: &Path| p.display().to_string();
        for (key, entry) in [
            ("write", ".".to_string()),
            ("read", ".".to_string()),
            ("read", "..".to_string()),
            ("read", "/".to_string()),
            ("write", "./data/..".to_string()),
            ("write", abs(&cache)),
            ("read", abs(&cache.join("index"))),
            ("write", abs(&other)),
            #[cfg(unix)]
            ("write", abs(&other.join("link"))),
        ] {
            let e = err(&format!("{key} = [{entry:?}]"), &file, &protected);
            assert!(
                e.contains("p.toml")
                    && e.contains(&format!("`{key}`"))
                    && e.contains("not grantable"),
                "{key} = {entry}: {e}"
            );
        }
        // A dedicated data folder inside the plugins folder is fine, and kept as a real path.
        let p = Policy::parse_protected("write = [\"./data\"]", &file, &protected)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            p.caps.write,
            [Folder::from(
                std::fs::canonicalize(&data).unwrap_or_else(|e| panic!("{e}"))
            )]
        );
    }
}
