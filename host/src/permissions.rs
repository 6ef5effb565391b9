//! The operator's `[permissions]`: the static policy and the permission hooks every
//! command installs in its registry (`docs/permissions.md`, "Who decides what").
//!
//! ```toml
//! [permissions]
//! allowed = ["read", "network"]         # whitelist (the default); [] = decide by allow_unspecified
//! denied = ["delete", "shell"]          # wins over allowed (the default)
//! allow_unspecified = true              # tools that declare nothing may run (the default)
//! deny_paths = ["~/.ssh", "~/.aws", "**/.env"]   # no tool argument may name these
//! deny_hosts = ["169.254.169.254", "*.internal"] # no network tool may be pointed at these
//!
//! [permissions.rate_limits]
//! http_get = { calls = 10, per_secs = 60 }
//! "*" = { calls = 100, per_secs = 60 }  # each tool without its own rule
//! ```
//!
//! Without the table, the defaults below are in force: the policy of
//! [`PermissionConfig::default`], the secret folders of [`DEFAULT_DENY_PATHS`] and the
//! cloud metadata addresses of [`DEFAULT_DENY_HOSTS`]. toolhost's own files (the config
//! file, the plugins folder with its lock, the data folder with the remembered approvals
//! and the audit trail) are always denied as tool arguments, whatever the table says: a
//! model must not be able to approve itself by editing them through some tool.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::tools::{
    DenyHosts, DenyPaths, HookConfigError, Permission, PermissionChecker, PermissionConfig,
    RateLimit, RateRule, ToolRegistry,
};

/// Secret folders and files no tool argument may name unless the operator says otherwise.
pub const DEFAULT_DENY_PATHS: &[&str] = &[
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "/etc/shadow",
];

/// Cloud instance metadata endpoints (credentials live there) no network tool may be
/// pointed at unless the operator says otherwise.
pub const DEFAULT_DENY_HOSTS: &[&str] = &[
    "169.254.169.254",
    "fd00:ec2::254",
    "metadata.google.internal",
    "100.100.100.200",
];

/// `[permissions]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Allowed permission levels; non-empty: a whitelist.
    #[serde(default = "default_allowed")]
    pub allowed: Vec<Permission>,
    /// Denied permission levels (win over `allowed`).
    #[serde(default = "default_denied")]
    pub denied: Vec<Permission>,
    /// Whether a tool that declares no permission may run (and any permission when
    /// `allowed` is empty).
    #[serde(default = "yes")]
    pub allow_unspecified: bool,
    /// Path patterns no tool argument may name (default [`DEFAULT_DENY_PATHS`]).
    #[serde(default)]
    pub deny_paths: Option<Vec<String>>,
    /// Hosts no network tool may be pointed at (default [`DEFAULT_DENY_HOSTS`]).
    #[serde(default)]
    pub deny_hosts: Option<Vec<String>>,
    /// Calls per tool per window, by tool name (`"*"`: every tool without its own rule).
    #[serde(default)]
    pub rate_limits: BTreeMap<String, RateConfig>,
}

/// One `[permissions.rate_limits]` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateConfig {
    /// Calls allowed per window.
    pub calls: u32,
    /// The window, in seconds.
    pub per_secs: u64,
}

fn default_allowed() -> Vec<Permission> {
    PermissionConfig::default().allowed
}

fn default_denied() -> Vec<Permission> {
    PermissionConfig::default().denied
}

fn yes() -> bool {
    true
}

impl Default for PermissionsConfig {
    fn default() -> Self {
        let policy = PermissionConfig::default();
        PermissionsConfig {
            allowed: policy.allowed,
            denied: policy.denied,
            allow_unspecified: policy.allow_unspecified,
            deny_paths: None,
            deny_hosts: None,
            rate_limits: BTreeMap::new(),
        }
    }
}

/// A `[permissions]` table that cannot be put in force.
#[derive(Debug, thiserror::Error)]
pub enum PermissionsError {
    /// A hook setting is invalid.
    #[error("[permissions] {0}")]
    Hook(#[from] HookConfigError),
}

impl PermissionsConfig {
    /// The static policy.
    pub fn policy(&self) -> PermissionConfig {
        PermissionConfig {
            allowed: self.allowed.clone(),
            denied: self.denied.clone(),
            allow_unspecified: self.allow_unspecified,
        }
    }

    /// The denied path patterns in force: the configured (or default) ones, plus the
    /// `protected` patterns of toolhost's own files (see [`protected`]).
    pub fn deny_paths(&self, protected: &[String]) -> Vec<String> {
        let mut out: Vec<String> = match &self.deny_paths {
            Some(p) => p.clone(),
            None => DEFAULT_DENY_PATHS.iter().map(|s| s.to_string()).collect(),
        };
        out.extend(protected.iter().cloned());
        out
    }

    /// The folders of a plugin's request (`read` and `write`, absolute) that the
    /// `deny_paths` rules forbid granting: a folder a rule matches, one inside it, or one
    /// holding what a rule names (see [`DenyPaths::forbids_folder`]). One line per refused
    /// entry, with the rule. Approval refuses such a request: the argument hook cannot
    /// see a path a plugin builds inside the guest.
    pub fn denied_folders(
        &self,
        read: &[toolhost_trust::Folder],
        write: &[toolhost_trust::Folder],
    ) -> Result<Vec<String>, PermissionsError> {
        let rules = DenyPaths::new(&self.deny_paths(&[]))?;
        let entries = read
            .iter()
            .map(|d| ("read", d))
            .chain(write.iter().map(|d| ("write", d)));
        Ok(entries
            .filter_map(|(key, dir)| {
                // The folder as written and where it really is (a symlink to `~/.ssh`).
                let real = std::fs::canonicalize(dir).ok();
                let rule = rules
                    .forbids_folder(dir.as_path())
                    .or_else(|| real.as_deref().and_then(|r| rules.forbids_folder(r)))?;
                Some(format!(
                    "`{key}` entry {dir}: the operator's deny_paths rule {rule:?} forbids it"
                ))
            })
            .collect())
    }

    /// Puts the policy and the hooks (`deny_paths`, `deny_hosts`, `rate_limit`, in this
    /// order) in force on `registry`.
    pub fn install(
        &self,
        registry: &ToolRegistry,
        protected: &[String],
    ) -> Result<(), PermissionsError> {
        let paths = DenyPaths::new(&self.deny_paths(protected))?;
        let hosts: Vec<String> = match &self.deny_hosts {
            Some(h) => h.clone(),
            None => DEFAULT_DENY_HOSTS.iter().map(|s| s.to_string()).collect(),
        };
        let hosts = DenyHosts::new(&hosts)?;
        let rules: HashMap<String, RateRule> = self
            .rate_limits
            .iter()
            .map(|(tool, r)| {
                (
                    tool.clone(),
                    RateRule {
                        calls: r.calls,
                        per: Duration::from_secs(r.per_secs),
                    },
                )
            })
            .collect();
        let rate = RateLimit::new(rules)?;
        registry.set_permission_checker(Some(Arc::new(PermissionChecker::new(self.policy()))));
        registry.add_permission_hook(Arc::new(paths));
        registry.add_permission_hook(Arc::new(hosts));
        registry.add_permission_hook(Arc::new(rate));
        Ok(())
    }
}

/// The deny patterns of toolhost's own files: the config file, the lock and the
/// components and request files of the plugins folder (not its subfolders, which may hold
/// data granted to plugins), and the remembered approvals and the audit trail in the data
/// folder `data`.
pub fn protected(config: &Path, plugins: &Path, data: &Path) -> Vec<String> {
    let lit = |p: &Path| {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        glob_literal(&abs.to_string_lossy())
    };
    vec![
        lit(config),
        format!("{}/toolhost.lock", lit(plugins)),
        format!("{}/*.wasm", lit(plugins)),
        format!("{}/*.toml", lit(plugins)),
        format!("{}/approvals.json", lit(data)),
        format!("{}/audit.jsonl*", lit(data)),
    ]
}

/// `text` with the glob metacharacters escaped, so a real path is matched literally.
fn glob_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('[');
            out.push(c);
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_with_defaults_and_refuses_unknown_keys() {
        let c: PermissionsConfig = toml::from_str("").unwrap(); // ok: test code
        assert_eq!(c, PermissionsConfig::default());
        assert_eq!(c.policy(), PermissionConfig::default());
        let c: PermissionsConfig = toml::from_str(
            "allowed = []\ndenied = [\"shell\"]\ndeny_paths = []\n[rate_limits]\nx = { calls = 1, per_secs = 2 }\n",
        )
        .unwrap(); // ok: test code
        assert!(c.allowed.is_empty() && c.denied == [Permission::Shell]);
        assert_eq!(c.deny_paths(&[]), Vec::<String>::new());
        assert_eq!(c.rate_limits["x"].per_secs, 2);
        assert!(toml::from_str::<PermissionsConfig>("alowed = []").is_err());
    }

    #[test]
    fn protected_files_are_denied_literally_and_always() {
        let c: PermissionsConfig = toml::from_str("deny_paths = []").unwrap(); // ok: test code
        let prot = protected(
            Path::new("/srv/tool[1]/toolhost.toml"),
            Path::new("/srv/p"),
            Path::new("/home/u/.local/share/toolhost"),
        );
        let p = c.deny_paths(&prot);
        assert_eq!(p[0], "/srv/tool[[]1[]]/toolhost.toml");
        assert!(p.contains(&"/srv/p/*.wasm".to_string()));
        assert!(DenyPaths::new(&p).is_ok());
    }

    #[test]
    fn bad_settings_are_errors_not_panics() {
        let reg = ToolRegistry::new();
        let c: PermissionsConfig = toml::from_str("deny_hosts = [\"a b\"]").unwrap(); // ok: test code
        assert!(c.install(&reg, &[]).is_err());
        let c: PermissionsConfig =
            toml::from_str("[rate_limits]\nx = { calls = 0, per_secs = 1 }").unwrap(); // ok: test code
        assert!(c.install(&reg, &[]).is_err());
        assert!(reg.permission_hooks().is_empty(), "nothing half-installed");
    }
}
