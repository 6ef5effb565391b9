//! Permissions: what a tool declares, what the host allows, and who approves the risky ones.
//!
//! - [`Permission`]: the levels a tool declares, and what each one **means**, decided here
//!   and nowhere else: its [`RiskLevel`], the MCP annotations a tool with it is served with
//!   ([`ServedHints`]), how an MCP server's annotations map back to permissions
//!   ([`Permission::from_mcp_hints`]), and which sandbox [`Capability`] it unlocks. The
//!   table is in `docs/design.md`, "Permissions".
//! - [`PermissionConfig`] + [`PermissionChecker`]: the static policy gate (denied wins; a
//!   non-empty allowed list is a whitelist; otherwise `allow_unspecified` decides).
//! - [`RiskLevel`]: derived from the declared permissions. `Delete` and `Shell` are
//!   destructive, and destructive calls must be approved by an [`Approver`].
//!
//! The checker runs before anything executes; a denial never runs the tool.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::tools::error::ToolError;

/// A permission level a tool declares it needs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Permission {
    /// Read-only access (read files, query data).
    Read,
    /// Writes (create or modify files, insert data).
    Write,
    /// Deletion (remove files or records). Destructive.
    Delete,
    /// Network access (HTTP requests and the like).
    Network,
    /// Running shell commands. Destructive.
    Shell,
    /// File-system operations other than read, write and delete (rename, chmod, ...).
    FileSystem,
    /// A custom, namespaced permission (for example `"db.admin"`).
    Custom(String),
}

impl Permission {
    /// The stable lowercase name used in policy files, WIT and JSON: `read`, `write`,
    /// `delete`, `network`, `shell`, `filesystem`, or the custom string itself.
    pub fn as_str(&self) -> &str {
        match self {
            Permission::Read => "read",
            Permission::Write => "write",
            Permission::Delete => "delete",
            Permission::Network => "network",
            Permission::Shell => "shell",
            Permission::FileSystem => "filesystem",
            Permission::Custom(s) => s,
        }
    }

    /// The risk level of this single permission (see [`RiskLevel::of`]).
    pub fn risk(&self) -> RiskLevel {
        match self {
            Permission::Read => RiskLevel::ReadOnly,
            Permission::Write | Permission::FileSystem => RiskLevel::Write,
            Permission::Network => RiskLevel::Network,
            Permission::Delete | Permission::Shell => RiskLevel::Destructive,
            // A custom permission is opaque to the host: rate it as a write (it may change
            // something) rather than as read-only. Mark it destructive through a policy
            // (`denied`) or an approver if it is.
            Permission::Custom(_) => RiskLevel::Write,
        }
    }

    /// Whether a tool with this permission may change state (so it is not served as
    /// read-only): everything but `Read` and `Network`.
    pub fn changes_state(&self) -> bool {
        !matches!(self, Permission::Read | Permission::Network)
    }

    /// Whether this permission unlocks a sandbox capability (the policy must offer it too).
    pub fn unlocks(&self, capability: Capability) -> bool {
        match capability {
            Capability::ReadDirs => matches!(
                self,
                Permission::Read | Permission::Write | Permission::FileSystem
            ),
            Capability::WriteDirs => matches!(self, Permission::Write),
            Capability::DeleteEntries => matches!(self, Permission::Delete),
            Capability::Network => matches!(self, Permission::Network),
        }
    }

    /// The permissions an MCP server's annotations claim (untrusted hints: they set the
    /// risk level, the operator's policy still decides). Only hints set to `true` count,
    /// because the spec's defaults would make every unannotated tool destructive:
    /// `readOnlyHint` → Read, else `destructiveHint` → Delete; `openWorldHint` → Network.
    pub fn from_mcp_hints(
        read_only: Option<bool>,
        destructive: Option<bool>,
        open_world: Option<bool>,
    ) -> Vec<Permission> {
        let mut out = Vec::new();
        if read_only == Some(true) {
            out.push(Permission::Read);
        } else if destructive == Some(true) {
            out.push(Permission::Delete);
        }
        if open_world == Some(true) {
            out.push(Permission::Network);
        }
        out
    }
}

/// A sandbox capability a permission can unlock (`docs/design.md`, "Permissions"). The
/// WASM sandbox grants a capability only when a tool declared a permission that unlocks
/// it **and** the policy offers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// The `read` folders, as read-only preopens.
    ReadDirs,
    /// The `write` folders, as read-write preopens.
    WriteDirs,
    /// Unlinking, removing and renaming entries inside the `write` folders.
    DeleteEntries,
    /// The `network` allowlist (and raw sockets when the policy turns them on).
    Network,
}

impl Capability {
    /// Whether any of `declared` unlocks this capability.
    pub fn granted_by(self, declared: &[Permission]) -> bool {
        declared.iter().any(|p| p.unlocks(self))
    }
}

/// The MCP annotations a tool is served with, derived from its declared permissions:
/// `readOnlyHint` when none changes state, `destructiveHint` when one is destructive,
/// `openWorldHint` when one is Network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServedHints {
    /// `readOnlyHint`.
    pub read_only: bool,
    /// `destructiveHint`.
    pub destructive: bool,
    /// `openWorldHint`.
    pub open_world: bool,
}

impl ServedHints {
    /// The hints of a tool declaring `permissions`.
    pub fn of(permissions: &[Permission]) -> Self {
        Self::rated(permissions, RiskLevel::of(permissions))
    }

    /// The hints of a tool declaring `permissions` whose risk level is `risk` (raised
    /// above what the permissions say by the operator's rating, see
    /// `ToolMetadata::risk`): a tool rated `write` or `destructive` is never served as
    /// read-only.
    pub fn rated(permissions: &[Permission], risk: RiskLevel) -> Self {
        ServedHints {
            read_only: !permissions.iter().any(Permission::changes_state)
                && !matches!(risk, RiskLevel::Write | RiskLevel::Destructive),
            destructive: risk == RiskLevel::Destructive,
            open_world: Capability::Network.granted_by(permissions),
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Permission {
    type Err = std::convert::Infallible;

    /// Parses the names of [`Permission::as_str`] (case-insensitive, `file-system` and
    /// `file_system` accepted too); anything else becomes [`Permission::Custom`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "read" => Permission::Read,
            "write" => Permission::Write,
            "delete" => Permission::Delete,
            "network" => Permission::Network,
            "shell" => Permission::Shell,
            "filesystem" | "file-system" | "file_system" => Permission::FileSystem,
            _ => Permission::Custom(s.to_string()),
        })
    }
}

impl Serialize for Permission {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        // ok: from_str is infallible
        Ok(s.parse().unwrap_or(Permission::Custom(s)))
    }
}

/// The static permission policy (`docs/design.md`, "The pipeline", stage 3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionConfig {
    /// Allowed permissions. Non-empty means whitelist mode: anything not listed is denied.
    /// Empty means "decide by `allow_unspecified`".
    pub allowed: Vec<Permission>,
    /// Denied permissions. Takes precedence over `allowed`.
    pub denied: Vec<Permission>,
    /// Whether a tool that declares no permissions may run, and whether a permission is
    /// allowed when `allowed` is empty. Default `true`.
    pub allow_unspecified: bool,
}

impl Default for PermissionConfig {
    /// The default: allow Read and Network, deny Delete and Shell, allow tools that
    /// declare nothing.
    fn default() -> Self {
        Self {
            allowed: vec![Permission::Read, Permission::Network],
            denied: vec![Permission::Delete, Permission::Shell],
            allow_unspecified: true,
        }
    }
}

impl PermissionConfig {
    /// A config that allows everything not explicitly denied, and denies nothing.
    pub fn permissive() -> Self {
        Self {
            allowed: Vec::new(),
            denied: Vec::new(),
            allow_unspecified: true,
        }
    }
}

/// The static permission gate. Cheap to share behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct PermissionChecker {
    config: PermissionConfig,
}

impl PermissionChecker {
    /// Creates a checker for this configuration.
    pub fn new(config: PermissionConfig) -> Self {
        Self { config }
    }

    /// The configuration this checker enforces.
    pub fn config(&self) -> &PermissionConfig {
        &self.config
    }

    /// Decides whether a tool that declares `permissions` may run.
    ///
    /// Rules, applied to every declared permission, first match wins:
    /// 1. in `denied` → denied;
    /// 2. in `allowed` → allowed;
    /// 3. `allowed` non-empty and the permission not in it → denied (whitelist mode);
    /// 4. `allowed` empty → `allow_unspecified` decides.
    ///
    /// A tool that declares no permission at all runs only if `allow_unspecified` is true.
    /// The error says which permission failed and which setting would allow it.
    pub fn check(&self, tool_name: &str, permissions: &[Permission]) -> Result<(), ToolError> {
        let c = &self.config;
        if permissions.is_empty() {
            if c.allow_unspecified {
                return Ok(());
            }
            return Err(ToolError::PermissionDenied(
                tool_name.to_string(),
                "declares no permissions and the host policy has allow_unspecified = false \
                 (set allow_unspecified = true, or have the tool declare what it needs)"
                    .to_string(),
            ));
        }
        for p in permissions {
            if c.denied.contains(p) {
                return Err(ToolError::PermissionDenied(
                    tool_name.to_string(),
                    format!(
                        "requires the '{p}' permission, which the host policy denies \
                         (remove \"{p}\" from `denied` to allow it)"
                    ),
                ));
            }
            if c.allowed.contains(p) {
                continue;
            }
            if !c.allowed.is_empty() {
                return Err(ToolError::PermissionDenied(
                    tool_name.to_string(),
                    format!(
                        "requires the '{p}' permission, which is not in the host policy's \
                         allowed list [{}] (add \"{p}\" to `allowed` to allow it)",
                        c.allowed
                            .iter()
                            .map(Permission::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            if !c.allow_unspecified {
                return Err(ToolError::PermissionDenied(
                    tool_name.to_string(),
                    format!(
                        "requires the '{p}' permission; the allowed list is empty and \
                         allow_unspecified = false (add \"{p}\" to `allowed` to allow it)"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Risk level of a tool, derived from its permissions. Ordered from least to
/// most risky; a tool's level is the highest of its permissions'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RiskLevel {
    /// No side effects. Runs directly.
    ReadOnly,
    /// Persistent but reversible changes. Runs and is logged.
    Write,
    /// Data leaves the machine. Runs, with destination checks where the runtime has them.
    Network,
    /// Hard to undo or affects others (`Delete`, `Shell`). Needs an approval.
    Destructive,
}

impl RiskLevel {
    /// The risk level of a set of permissions: the maximum, `ReadOnly` for none.
    pub fn of(permissions: &[Permission]) -> RiskLevel {
        permissions
            .iter()
            .map(Permission::risk)
            .max()
            .unwrap_or(RiskLevel::ReadOnly)
    }

    /// The kebab-case name (`read-only`, `write`, `network`, `destructive`).
    pub fn as_str(&self) -> &'static str {
        match self {
            RiskLevel::ReadOnly => "read-only",
            RiskLevel::Write => "write",
            RiskLevel::Network => "network",
            RiskLevel::Destructive => "destructive",
        }
    }
}

impl fmt::Display for RiskLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checker(
        allowed: Vec<Permission>,
        denied: Vec<Permission>,
        unspec: bool,
    ) -> PermissionChecker {
        PermissionChecker::new(PermissionConfig {
            allowed,
            denied,
            allow_unspecified: unspec,
        })
    }

    fn denied(r: Result<(), ToolError>) -> String {
        match r {
            Err(ToolError::PermissionDenied(_, why)) => why,
            other => panic!("expected PermissionDenied, got {other:?}"),
        }
    }

    #[test]
    fn default_config_allows_read_and_network_and_denies_delete_and_shell() {
        let c = PermissionConfig::default();
        assert_eq!(c.allowed, vec![Permission::Read, Permission::Network]);
        assert_eq!(c.denied, vec![Permission::Delete, Permission::Shell]);
        assert!(c.allow_unspecified);
        let ck = PermissionChecker::default();
        assert!(ck.check("r", &[Permission::Read]).is_ok());
        assert!(
            ck.check("n", &[Permission::Network, Permission::Read])
                .is_ok()
        );
        assert!(ck.check("none", &[]).is_ok());
        // Write is not on the default whitelist.
        assert!(
            denied(ck.check("w", &[Permission::Write]))
                .contains("not in the host policy's allowed list")
        );
        assert!(denied(ck.check("d", &[Permission::Delete])).contains("denies"));
    }

    #[test]
    fn denied_wins_over_allowed() {
        let ck = checker(vec![Permission::Shell], vec![Permission::Shell], true);
        let why = denied(ck.check("sh", &[Permission::Shell]));
        assert!(why.contains("'shell'"), "{why}");
        assert!(why.contains("remove \"shell\" from `denied`"), "{why}");
    }

    #[test]
    fn whitelist_mode_denies_anything_unlisted() {
        let ck = checker(vec![Permission::Read], vec![], true);
        assert!(ck.check("r", &[Permission::Read]).is_ok());
        let why = denied(ck.check("rw", &[Permission::Read, Permission::Write]));
        assert!(why.contains("'write'") && why.contains("[read]"), "{why}");
    }

    #[test]
    fn empty_allowed_list_defers_to_allow_unspecified() {
        let open = checker(vec![], vec![], true);
        assert!(
            open.check("w", &[Permission::Write, Permission::FileSystem])
                .is_ok()
        );
        let closed = checker(vec![], vec![], false);
        assert!(
            denied(closed.check("w", &[Permission::Write])).contains("allow_unspecified = false")
        );
    }

    #[test]
    fn tools_declaring_nothing_follow_allow_unspecified() {
        assert!(
            checker(vec![Permission::Read], vec![], true)
                .check("t", &[])
                .is_ok()
        );
        assert!(
            denied(checker(vec![Permission::Read], vec![], false).check("t", &[]))
                .contains("declares no permissions")
        );
    }

    #[test]
    fn custom_permissions_match_by_exact_name() {
        let db = Permission::Custom("db.admin".into());
        let ck = checker(
            vec![db.clone()],
            vec![Permission::Custom("db.drop".into())],
            true,
        );
        assert!(ck.check("a", &[db]).is_ok());
        assert!(
            denied(ck.check("b", &[Permission::Custom("db.drop".into())])).contains("'db.drop'")
        );
        assert!(denied(ck.check("c", &[Permission::Custom("DB.ADMIN".into())])).contains("not in"));
    }

    #[test]
    fn one_denied_permission_among_many_denies_the_tool() {
        let ck = checker(vec![], vec![Permission::Delete], true);
        assert!(
            ck.check(
                "x",
                &[Permission::Read, Permission::Write, Permission::Delete]
            )
            .is_err()
        );
    }

    #[test]
    fn risk_levels_derive_from_permissions() {
        assert_eq!(RiskLevel::of(&[]), RiskLevel::ReadOnly);
        assert_eq!(RiskLevel::of(&[Permission::Read]), RiskLevel::ReadOnly);
        assert_eq!(
            RiskLevel::of(&[Permission::Read, Permission::Write]),
            RiskLevel::Write
        );
        assert_eq!(
            RiskLevel::of(&[Permission::Network, Permission::Write]),
            RiskLevel::Network
        );
        assert_eq!(
            RiskLevel::of(&[Permission::Network, Permission::Delete]),
            RiskLevel::Destructive
        );
        assert_eq!(RiskLevel::of(&[Permission::Shell]), RiskLevel::Destructive);
    }

    #[test]
    fn permissions_round_trip_through_strings() {
        for p in [
            Permission::Read,
            Permission::Write,
            Permission::Delete,
            Permission::Network,
            Permission::Shell,
            Permission::FileSystem,
            Permission::Custom("x.y".into()),
        ] {
            let s = serde_json::to_string(&p).unwrap();
            let back: Permission = serde_json::from_str(&s).unwrap();
            assert_eq!(back, p);
        }
        assert_eq!(
            "file-system".parse::<Permission>().unwrap(),
            Permission::FileSystem
        );
    }
}
