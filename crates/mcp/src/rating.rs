//! How risky an MCP server's tools are, decided by the operator, not by the server.
//!
//! A server's annotations (`readOnlyHint`, `destructiveHint`, `openWorldHint`) are its own
//! word about its tools: untrusted. The operator's configuration wins, in this order
//! (`docs/permissions.md`, "MCP tools"):
//!
//! 1. `[mcp.servers.NAME.tools.TOOL] permissions = [...]`: exactly these permissions;
//! 2. `[mcp.servers.NAME] permissions = [...]`: these, for every other tool of the server;
//! 3. the server's annotations, when it set at least one hint to `true`
//!    ([`Permission::from_mcp_hints`]);
//! 4. otherwise the tool is unrated: no permissions, and a risk floor of `default_risk`
//!    (`[mcp.servers.NAME] default_risk`, else `[mcp] default_risk`, else
//!    `destructive`: it needs an approval before it first runs). An unannotated
//!    `delete_everything` is never silently read-only.

use std::collections::BTreeMap;

use toolhost_core::tools::{Permission, RiskLevel};

use crate::info::McpToolInfo;

/// The risk floor of unrated tools when the configuration names none: an approval is
/// needed (the tool's own silence proves nothing).
pub const DEFAULT_UNRATED_RISK: RiskLevel = RiskLevel::Destructive;

/// The operator's rating of one server's tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolRules {
    /// Permissions of every tool of the server without a rule of its own (overrides the
    /// annotations).
    pub server: Option<Vec<Permission>>,
    /// Permissions by the server's tool name (override everything else).
    pub tools: BTreeMap<String, Vec<Permission>>,
    /// The risk floor of a tool with neither a rule nor a `true` hint.
    pub default_risk: RiskLevel,
}

impl Default for McpToolRules {
    fn default() -> Self {
        McpToolRules {
            server: None,
            tools: BTreeMap::new(),
            default_risk: DEFAULT_UNRATED_RISK,
        }
    }
}

/// Where a tool's rating came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatedBy {
    /// `[mcp.servers.NAME.tools.TOOL] permissions`.
    ToolRule,
    /// `[mcp.servers.NAME] permissions`.
    ServerRule,
    /// The server's own annotations.
    Annotations,
    /// Nothing: the default risk applies.
    Unrated,
}

/// A tool's permissions and risk floor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rating {
    /// The permissions the registry sees.
    pub permissions: Vec<Permission>,
    /// A floor on the risk level (`ToolMetadata::risk`), for unrated tools.
    pub risk_floor: Option<RiskLevel>,
    /// Which rule decided.
    pub by: RatedBy,
}

impl McpToolRules {
    /// Rates one tool as the server lists it.
    pub fn rate(&self, info: &McpToolInfo) -> Rating {
        if let Some(p) = self.tools.get(&info.name) {
            return rated(p.clone(), RatedBy::ToolRule);
        }
        if let Some(p) = &self.server {
            return rated(p.clone(), RatedBy::ServerRule);
        }
        let hinted = info
            .annotations
            .as_ref()
            .map(|a| a.permissions())
            .unwrap_or_default();
        if !hinted.is_empty() {
            return rated(hinted, RatedBy::Annotations);
        }
        Rating {
            permissions: Vec::new(),
            risk_floor: Some(self.default_risk),
            by: RatedBy::Unrated,
        }
    }
}

fn rated(permissions: Vec<Permission>, by: RatedBy) -> Rating {
    Rating {
        permissions,
        risk_floor: None,
        by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::info::McpToolAnnotations;

    fn tool(name: &str, annotations: Option<McpToolAnnotations>) -> McpToolInfo {
        McpToolInfo {
            name: name.into(),
            title: None,
            description: None,
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            icons: Vec::new(),
            annotations,
            meta: None,
        }
    }

    #[test]
    fn the_operator_outranks_the_server() {
        let destructive = McpToolAnnotations {
            destructive: Some(true),
            ..Default::default()
        };
        let read_only = McpToolAnnotations {
            read_only: Some(true),
            ..Default::default()
        };
        let rules = McpToolRules {
            server: Some(vec![Permission::Write]),
            tools: BTreeMap::from([("lister".to_string(), vec![Permission::Read])]),
            default_risk: RiskLevel::Destructive,
        };
        // A per-tool rule beats the server rule and the annotations.
        let r = rules.rate(&tool("lister", Some(destructive.clone())));
        assert_eq!(
            (r.permissions, r.by),
            (vec![Permission::Read], RatedBy::ToolRule)
        );
        // The server rule beats a tool's claim to be read-only.
        let r = rules.rate(&tool("delete_everything", Some(read_only.clone())));
        assert_eq!(
            (r.permissions, r.by),
            (vec![Permission::Write], RatedBy::ServerRule)
        );
        // Without rules: the hints, else the default risk floor.
        let none = McpToolRules::default();
        let r = none.rate(&tool("t", Some(read_only)));
        assert_eq!(
            (r.permissions, r.risk_floor),
            (vec![Permission::Read], None)
        );
        let r = none.rate(&tool("delete_everything", None));
        assert_eq!(
            (r.permissions.is_empty(), r.risk_floor, r.by),
            (true, Some(RiskLevel::Destructive), RatedBy::Unrated)
        );
        // Hints set to false say nothing: unrated.
        let quiet = McpToolAnnotations {
            read_only: Some(false),
            destructive: Some(false),
            ..Default::default()
        };
        assert_eq!(none.rate(&tool("t", Some(quiet))).by, RatedBy::Unrated);
    }
}
