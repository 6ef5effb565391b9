//! The host configuration file (`--config FILE`, default `./toolhost.toml`).
//!
//! `[mcp.servers.NAME]` entries with `command`/`args`/`env`
//! (plus `inherit_env`) or `url`/`headers`, and `timeout_secs`; see
//! [`McpServerConfig`](crate::mcp::McpServerConfig).
//!
//! ```toml
//! plugins = "./plugins"      # or [plugins] folder = ..., with [plugins.NAME.config]
//!
//! [mcp.servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything"]
//! timeout_secs = 30
//!
//! [mcp.servers.remote]
//! url = "http://127.0.0.1:3001/mcp"
//! bearer_token_env = "REMOTE_TOKEN"
//!
//! [serve]
//! auth_token_file = "/etc/toolhost/tokens"   # bearer tokens of `serve --http`
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

mod plugins;

pub use plugins::{PluginSettings, PluginsConfig};

/// Errors reading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this schema.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// The plugins folder, if set here (the `--plugins` flag and `TOOLHOST_PLUGINS` win),
    /// and the operator's settings per plugin (`[plugins.NAME.config]`).
    #[serde(default)]
    pub plugins: PluginsConfig,
    /// The MCP servers whose tools load next to the plugins.
    #[serde(default)]
    pub mcp: crate::mcp::McpConfig,
    /// Who is trusted and what needs approval (see `docs/trust.md`).
    #[serde(default)]
    pub trust: TrustConfig,
    /// The static permission policy and the permission hooks (see
    /// [`crate::permissions`] and `docs/permissions.md`).
    #[serde(default)]
    pub permissions: crate::permissions::PermissionsConfig,
    /// The audit trail of `serve` and `chat` (see `docs/permissions.md`, "Audit trail").
    #[serde(default)]
    pub audit: AuditConfig,
    /// `toolhost serve` settings (see `docs/mcp.md`, "Authentication").
    #[serde(default)]
    pub serve: ServeConfig,
    /// `[lint]`: whether `approve`, `install` and `update` ask the judge model too.
    #[serde(default)]
    pub lint: LintConfig,
    /// `[admin]`: the operator console of `serve --admin` (docs/console.md).
    #[serde(default)]
    pub admin: AdminConfig,
}

/// `[admin]`: the console on the admin listener of `serve --http ADDR --admin ADDR2`
/// (docs/console.md).
///
/// ```toml
/// [admin]
/// console = true                                # serve the console (also --console)
/// token_file = "/etc/toolhost/operator.token"   # the operator token, mode 0600
/// behind_tls = false                            # TLS is terminated in front (non-loopback)
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Serve the console on the admin listener.
    #[serde(default)]
    pub console: bool,
    /// The operator token file (one token per line, at least 32 characters, mode 0600).
    pub token_file: Option<PathBuf>,
    /// A TLS proxy is in front of the admin listener: the console may listen on a
    /// non-loopback address and its cookie is `Secure`.
    #[serde(default)]
    pub behind_tls: bool,
}

/// `[lint]`: the judge of tool definitions (`docs/writing-plugins.md`, "The judge").
///
/// ```toml
/// [lint]
/// judge = true          # approve, install and update ask the model chat uses
/// judge_budget = 60000  # tokens of prompts per run
/// ```
///
/// The model is the one `chat` uses: `TOOLHOST_LLM_BASE_URL`, `TOOLHOST_LLM_MODEL`,
/// `TOOLHOST_LLM_PROVIDER` in the environment. Nothing is sent unless `judge` is true.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LintConfig {
    /// Ask the judge model when showing definitions for approval.
    #[serde(default)]
    pub judge: bool,
    /// The token budget of one run's prompts (default 60000).
    pub judge_budget: Option<usize>,
}

/// `[serve]`: settings of `toolhost serve --http`.
///
/// ```toml
/// [serve]
/// auth_token_file = "/etc/toolhost/tokens"   # one bearer token per line, mode 0600
/// max_concurrent_calls = 16                   # tool calls executing at once (default 4)
/// request_state_key_file = "/etc/toolhost/state.key"  # shared by replicas, mode 0600
/// spare_sandboxes = 8                         # sandboxes prepared ahead (default 0, max 32)
/// task_support = { export_report = "required", lookup = "forbidden" }
/// discovery = "search"                        # tools/list: search_tools, call_tool, pinned
/// pinned = ["read_file"]                      # listed in search mode too
/// code_mode = true                            # serve run_code (docs/code-mode.md)
///
/// [serve.clients.analyst]                     # a client as a tenant (docs/mcp.md, "Clients")
/// token_file = "/etc/toolhost/analyst.token"  # its bearer tokens, mode 0600
/// tools = ["read_*", "mean"]                  # what it sees and may call (default: all)
/// allowed = ["read"]                          # permission levels, narrowing [permissions]
/// max_concurrent_calls = 2                    # its own limit (default: the server's)
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// The bearer tokens `serve --http` accepts, one per line (`#` comment lines); used
    /// when no `--auth-token-file` is given. A relative path is taken from the current
    /// folder, like `plugins`.
    pub auth_token_file: Option<std::path::PathBuf>,
    /// How many tool calls execute at once, shared fairly by the clients (default
    /// `DEFAULT_MAX_CONCURRENT`, 4): a lone client may use them all; beyond a full pool a
    /// client running none still starts one (so at most twice this many run at once);
    /// other calls wait, and a freed slot goes to the client running the fewest
    /// (docs/mcp.md, "Clients"). A call waiting for its client's answer to a wrapped
    /// server's question keeps its slot until answered or timed out.
    pub max_concurrent_calls: Option<usize>,
    /// The key (at least 32 bytes; the file must not be readable by group or others)
    /// that seals the `requestState` of 2026-07-28 multi-round requests. Replicas behind
    /// one load balancer share it, so a retry continues an approval round on any of
    /// them. Without it each process makes a random key of its own.
    pub request_state_key_file: Option<std::path::PathBuf>,
    /// How many single-use sandboxes of recently called tools are prepared ahead, in the
    /// background (at most one per tool; each holds one of the engine's instance slots
    /// and its memory). Every call still runs in an instance nobody ran before. Only a
    /// tool called with pauses whose sandbox takes over 200 µs to build gets one (a
    /// Python component: its calls then take about 0.6× as long). A spare is
    /// instantiated with the tool's grant right after a call, so a component's start-up
    /// code (if it has any) runs before the next call passes the permission gate: off
    /// unless the operator sets it. Default [`DEFAULT_SPARE_SANDBOXES`], at most
    /// [`MAX_SPARE_SANDBOXES`] (docs/design.md, "Spare sandboxes").
    pub spare_sandboxes: Option<usize>,
    /// How served tools may run as tasks for MCP clients of the tasks extension, by
    /// tool name (as served): `optional` (the default: a task when the call outlives
    /// half a second or asks its client something), `required` (always a task, made at
    /// once; a client without the extension is refused with `-32021` before the tool
    /// runs), `forbidden` (never a task). Names no loaded tool has are logged as a
    /// warning once the start-up load is done (docs/mcp.md, "Tasks").
    #[serde(default)]
    pub task_support: std::collections::BTreeMap<String, toolhost_mcp::server::TaskSupport>,
    /// Clients as tenants, by name (`[serve.clients.NAME]`): a request carrying one of a
    /// client's tokens is that client's. Clients not listed see every tool.
    #[serde(default)]
    pub clients: std::collections::BTreeMap<String, ServedClientConfig>,
    /// What `tools/list` shows: `all` (the default) every tool the client may see;
    /// `search` only `search_tools`, `call_tool` and the `pinned` tools, the rest found
    /// by search (docs/mcp.md, "Progressive discovery"). `serve --discovery` wins.
    pub discovery: Option<DiscoveryMode>,
    /// Tools listed in `search` mode besides the two of the server's own (names as
    /// served; a client still sees only those its `tools` globs allow).
    #[serde(default)]
    pub pinned: Vec<String>,
    /// Serve `run_code`: the model's JavaScript run in a fresh sandbox, its tool calls
    /// through the pipeline as the client's own (docs/code-mode.md). `serve --code-mode`
    /// turns it on too.
    #[serde(default)]
    pub code_mode: bool,
    /// The skills folder `serve` offers (the Skills extension; docs/trust.md, "Skills"):
    /// one directory per skill with its `SKILL.md`, each offered once approved with
    /// `toolhost approve skill:NAME`. `--skills` wins.
    pub skills: Option<PathBuf>,
}

/// `[serve] discovery`: what `tools/list` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DiscoveryMode {
    /// Every tool the client may see.
    #[default]
    All,
    /// `search_tools`, `call_tool` and the pinned tools.
    Search,
}

/// `[serve.clients.NAME]`: one client of `serve --http` as a tenant.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServedClientConfig {
    /// Its bearer tokens, one per line, as `auth_token_file` (mode 0600). Each token is
    /// distinct from every other configured token.
    pub token_file: std::path::PathBuf,
    /// Name globs of the tools it sees in `tools/list` and may call (`*` any run of
    /// characters); any other name is an unknown tool to it. Default: every tool.
    pub tools: Option<Vec<String>>,
    /// Permission levels its calls may use, narrowing `[permissions]` (a tool declaring a
    /// level not listed is denied to it). Default: the host's policy alone.
    pub allowed: Option<Vec<toolhost_core::tools::Permission>>,
    /// Calls of its own executing at once, at most (default: `max_concurrent_calls`).
    pub max_concurrent_calls: Option<usize>,
}

/// `[serve] spare_sandboxes` when not set: none.
pub const DEFAULT_SPARE_SANDBOXES: usize = 0;

/// The most spare sandboxes `[serve] spare_sandboxes` may ask for: half the engine's
/// instance slots, so calls always have the other half.
pub const MAX_SPARE_SANDBOXES: usize = 32;

/// `[audit]`: where `serve` and `chat` write one record per tool call. The `--audit FILE`
/// and `--no-audit` flags win.
///
/// ```toml
/// [audit]
/// enabled = true                          # false: no trail unless --audit FILE
/// path = "/var/log/toolhost/audit.jsonl"  # default: <data dir>/toolhost/audit.jsonl
/// max_bytes = 10485760                    # rotate above this size
/// keep = 5                                # rotated files kept: audit.jsonl.1 .. .5
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Whether `serve` and `chat` write the trail by default.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The file (default: `<data dir>/toolhost/audit.jsonl`).
    pub path: Option<std::path::PathBuf>,
    /// Size above which the file is rotated.
    #[serde(default = "audit_max_bytes")]
    pub max_bytes: u64,
    /// Rotated files kept.
    #[serde(default = "audit_keep")]
    pub keep: usize,
}

fn audit_max_bytes() -> u64 {
    crate::tools::audit::DEFAULT_MAX_BYTES
}

fn audit_keep() -> usize {
    crate::tools::audit::DEFAULT_KEEP
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            enabled: true,
            path: None,
            max_bytes: audit_max_bytes(),
            keep: audit_keep(),
        }
    }
}

/// `[trust]`: the operator's trust settings.
///
/// ```toml
/// [trust]
/// keys = ["RWQ..."]                    # minisign public keys whose signatures `install` accepts
/// require_approval = "capabilities"    # or "all": unapproved plugins and unpinned MCP tools do not load
/// # accept_compatible_updates: unset (the default), a changed plugin file within its
/// # approval keeps it only when signed by its recorded signer; true: signed or not;
/// # false: every change is held until approved again
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustConfig {
    /// Trusted minisign public keys (the base64 line of a `.pub` file).
    #[serde(default)]
    pub keys: Vec<String>,
    /// What an unapproved plugin may do.
    #[serde(default)]
    pub require_approval: RequireApproval,
    /// Whether a changed plugin file whose request is within its approval and whose tool
    /// definitions are unchanged keeps its approval (its new digest is then recorded in
    /// the lock): unset, only when its package is signed by the signer the lock records
    /// ([`toolhost_trust::UpdateRule::Signed`]); `true`, signed or not; `false`, never.
    #[serde(default)]
    pub accept_compatible_updates: Option<bool>,
}

fn yes() -> bool {
    true
}

impl TrustConfig {
    /// The settings the trust evaluation needs.
    pub fn options(&self) -> toolhost_trust::TrustOptions {
        toolhost_trust::TrustOptions {
            updates: match self.accept_compatible_updates {
                None => toolhost_trust::UpdateRule::Signed,
                Some(true) => toolhost_trust::UpdateRule::Compatible,
                Some(false) => toolhost_trust::UpdateRule::Never,
            },
            require_all: self.require_approval == RequireApproval::All,
        }
    }
}

/// `[trust] require_approval`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequireApproval {
    /// Unapproved plugins load without any capability: their pure tools work, the others
    /// refuse with the command that approves them.
    #[default]
    Capabilities,
    /// Unapproved plugins do not load; MCP tools not pinned in the lock are withheld.
    All,
}

/// Each plugin's `wasi:config/store` sources, by plugin name and key.
pub type Sources = std::collections::BTreeMap<
    String,
    std::collections::BTreeMap<String, toolhost_core::secrets::SecretSource>,
>;

/// What the loader needs of the operator's configuration: `[trust]`'s evaluation options
/// and the keys whose signatures vouch for a changed file, and `[plugins.NAME.config]`.
#[derive(Debug, Clone, Default)]
pub struct LoadRules {
    /// The evaluation's options.
    pub opts: toolhost_trust::TrustOptions,
    /// The operator's trusted minisign public keys (`[trust] keys`).
    pub keys: std::sync::Arc<[String]>,
    /// Where each plugin's `wasi:config/store` values come from, by plugin name and key.
    pub config: std::sync::Arc<Sources>,
}

impl HostConfig {
    /// The settings the plugin loader needs: `[trust]`'s evaluation options and the
    /// trusted keys that vouch for changed files, and each plugin's config sources.
    pub fn load_rules(&self) -> LoadRules {
        LoadRules {
            opts: self.trust.options(),
            keys: self.trust.keys.clone().into(),
            config: std::sync::Arc::new(
                self.plugins
                    .named
                    .iter()
                    .map(|(name, s)| (name.clone(), s.config.clone()))
                    .collect(),
            ),
        }
    }

    /// Every file of toolhost's own this config names: the credential files
    /// (`[serve] auth_token_file`, `request_state_key_file`, each client's
    /// `token_file` and `[admin] token_file`; per MCP server `bearer_token_file` and the OAuth
    /// `client_secret_file` and `private_key_file`) and the audit trail. No plugin policy
    /// may grant them or a folder above them (see [`crate::host::Host::protect_config`]).
    pub fn credential_files(&self) -> Vec<std::path::PathBuf> {
        let mut out: Vec<std::path::PathBuf> = self.serve.auth_token_file.iter().cloned().collect();
        out.extend(self.serve.request_state_key_file.iter().cloned());
        out.extend(self.serve.clients.values().map(|c| c.token_file.clone()));
        out.extend(self.audit.path.iter().cloned());
        out.extend(self.admin.token_file.iter().cloned());
        for s in self.mcp.servers.values() {
            out.extend(s.bearer_token_file.iter().cloned());
            if let Some(o) = &s.oauth {
                out.extend(o.client_secret_file.iter().cloned());
                out.extend(o.private_key_file.iter().cloned());
            }
        }
        out
    }

    /// Reads `path`. A missing file at the default location is an empty config; a missing
    /// file given explicitly is an error.
    pub fn load(path: &Path, explicit: bool) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                return Ok(Self::default());
            }
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let mut config: HostConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        // Secret files named relative to the configuration file are found from any
        // working folder.
        let base = path.parent().filter(|p| !p.as_os_str().is_empty());
        let base = base.map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf);
        config.plugins.anchor(&base);
        config.mcp.anchor_secrets(&base);
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_servers_parse_from_toml() {
        let cfg: HostConfig = toml::from_str(
            r#"
            plugins = "p"
            [mcp.servers.fs]
            command = "node"
            args = ["server.js", "/tmp"]
            env = { A = "1" }
            timeout_secs = 7
            [mcp.servers.remote]
            url = "http://127.0.0.1:9/mcp"
            headers = { Authorization = "Bearer x" }
            "#,
        )
        .unwrap(); // ok: test code
        assert_eq!(cfg.mcp.servers.len(), 2);
        assert_eq!(cfg.mcp.servers["fs"].timeout_secs, Some(7));
        assert!(cfg.mcp.servers["remote"].transport().is_ok());
        assert!(toml::from_str::<HostConfig>("[mcp.servers.x]\nbogus = 1").is_err());
        assert_eq!(cfg.trust.accept_compatible_updates, None);
        assert_eq!(
            cfg.trust.options().updates,
            toolhost_trust::UpdateRule::Signed
        );
        assert_eq!(cfg.trust.require_approval, RequireApproval::Capabilities);
        let t: HostConfig = toml::from_str(
            "[trust]\nkeys = [\"RWQx\"]\nrequire_approval = \"all\"\naccept_compatible_updates = false\n",
        )
        .unwrap(); // ok: test code
        assert_eq!(t.trust.require_approval, RequireApproval::All);
        assert!(t.trust.accept_compatible_updates == Some(false) && t.trust.keys == ["RWQx"]);
        assert!(toml::from_str::<HostConfig>("[trust]\nrequire_approval = \"some\"").is_err());
    }

    #[test]
    fn serve_table_names_the_token_file() {
        assert!(HostConfig::default().serve.auth_token_file.is_none());
        let c: HostConfig =
            toml::from_str("[serve]\nauth_token_file = \"/etc/toolhost/tokens\"\n").unwrap(); // ok: test code
        assert_eq!(
            c.serve.auth_token_file.as_deref(),
            Some(std::path::Path::new("/etc/toolhost/tokens"))
        );
        // A typo is an error, not a silently unauthenticated server.
        assert!(toml::from_str::<HostConfig>("[serve]\nauth_token = \"x\"").is_err());
    }

    #[test]
    fn audit_table_parses_with_defaults() {
        let d = HostConfig::default().audit;
        assert!(d.enabled && d.path.is_none() && d.max_bytes == 10 << 20 && d.keep == 5);
        let c: HostConfig =
            toml::from_str("[audit]\nenabled = false\npath = \"/x/a.jsonl\"\nkeep = 2\n").unwrap(); // ok: test code
        assert!(!c.audit.enabled && c.audit.keep == 2 && c.audit.max_bytes == 10 << 20);
        assert!(toml::from_str::<HostConfig>("[audit]\nmax_byte = 1").is_err());
    }
}
