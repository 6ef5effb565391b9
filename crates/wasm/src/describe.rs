//! A component's `describe()`: the caps on what it may return ([`describe_limits`]), the
//! check and conversion of its raw output into [`ToolSpec`]s ([`accept_described`], a pure
//! function of plain data, so a fuzz target can call it without wasmtime), and the
//! wall-clock budget of the guest's run ([`DESCRIBE_TIMEOUT`]). The run itself and what
//! the describe cache remembers about a component (its tools, or why it was refused) are
//! in `run`, built with the `runtime` feature.

use std::time::Duration;

use serde_json::Value;
use thiserror::Error;
use toolhost_core::tools::Permission;

/// Wall-clock budget of `describe()` at load time: the epoch deadline stops a guest
/// that spins, a timer around the call stops one blocked in host I/O (a sleep, a
/// pollable that never fires), where no wasm runs for the epoch check to see.
pub const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Caps on what `describe()` may return. A component over any of them is refused whole
/// ([`crate::error::PluginError::DescribeTooLarge`]), and the refusal is remembered by its digest.
/// The list is lifted out of the guest's memory before it can be counted, so its size is
/// bounded first by the policy's memory cap.
pub mod describe_limits {
    /// Tools one component may describe.
    pub const MAX_TOOLS: usize = 256;
    /// Bytes of a tool name (the registry allows 64 characters of `[a-zA-Z0-9_-]`).
    pub const MAX_NAME_BYTES: usize = 64;
    /// Bytes of a tool description.
    pub const MAX_DESCRIPTION_BYTES: usize = 4 * 1024;
    /// Bytes of a parameter schema (JSON text).
    pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
    /// Permissions one tool may declare.
    pub const MAX_PERMISSIONS: usize = 16;
    /// Tags one tool may carry.
    pub const MAX_TAGS: usize = 32;
    /// Bytes of one tag or one `custom` permission name.
    pub const MAX_TAG_BYTES: usize = 64;
}

/// A tool as the component describes it, checked against [`describe_limits`] and with
/// its parameter schema parsed.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolSpec {
    /// The name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The parameter JSON Schema.
    pub parameters: Value,
    /// Declared permissions.
    pub permissions: Vec<Permission>,
    /// Tags.
    pub tags: Vec<String>,
}

/// One tool exactly as `describe()` returned it (the WIT `tool-info`), unchecked: the
/// input of [`accept_described`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DescribedTool {
    /// The name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The parameter JSON Schema, as the JSON text the guest returned.
    pub parameters: String,
    /// Declared permissions.
    pub permissions: Vec<Permission>,
    /// Tags.
    pub tags: Vec<String>,
}

/// Why the output of `describe()` is refused. The host remembers either refusal by the
/// component's digest (it does not depend on the policy).
#[derive(Debug, Error)]
pub enum DescribeRefusal {
    /// Over one of the [`describe_limits`] caps (too many tools, a name, description,
    /// schema, tag or permission list too long).
    #[error("{message}")]
    TooLarge {
        /// Which cap, its value, and what the component returned.
        message: String,
    },
    /// A tool's `parameters` is not valid JSON.
    #[error(
        "tool {}: parameters is not valid JSON: {error}",
        quote(tool, describe_limits::MAX_NAME_BYTES)
    )]
    InvalidJson {
        /// The tool's name as described.
        tool: String,
        /// The parser's complaint.
        error: serde_json::Error,
    },
}

/// Checks the raw `describe()` output against every [`describe_limits`] cap, then parses
/// each tool's parameter schema. Pure: no engine, no guest, no I/O. The registration
/// checks (name syntax, description length, schema shape, duplicates) come later, when
/// the tools are registered.
pub fn accept_described(raw: Vec<DescribedTool>) -> Result<Vec<ToolSpec>, DescribeRefusal> {
    check_described(&raw).map_err(|message| DescribeRefusal::TooLarge { message })?;
    raw.into_iter()
        .map(|t| {
            let parameters: Value = match serde_json::from_str(&t.parameters) {
                Ok(v) => v,
                Err(error) => {
                    return Err(DescribeRefusal::InvalidJson {
                        tool: t.name,
                        error,
                    });
                }
            };
            Ok(ToolSpec {
                name: t.name,
                description: t.description,
                parameters,
                permissions: t.permissions,
                tags: t.tags,
            })
        })
        .collect()
}

/// At most `n` characters of untrusted text, escaped for a terminal (`{:?}`).
fn quote(text: &str, n: usize) -> String {
    let cut: String = text.chars().take(n).collect();
    if cut.len() < text.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

/// Checks the raw `describe()` output against [`describe_limits`].
fn check_described(tools: &[DescribedTool]) -> Result<(), String> {
    use describe_limits::*;
    if tools.len() > MAX_TOOLS {
        return Err(format!(
            "{} tools described, at most {MAX_TOOLS} allowed",
            tools.len()
        ));
    }
    for t in tools {
        let over = |what: &str, got: usize, max: usize| {
            format!(
                "tool {}: {what} is {got} bytes, at most {max} allowed",
                quote(&t.name, MAX_NAME_BYTES)
            )
        };
        if t.name.len() > MAX_NAME_BYTES {
            return Err(over("the name", t.name.len(), MAX_NAME_BYTES));
        }
        if t.description.len() > MAX_DESCRIPTION_BYTES {
            return Err(over(
                "the description",
                t.description.len(),
                MAX_DESCRIPTION_BYTES,
            ));
        }
        if t.parameters.len() > MAX_SCHEMA_BYTES {
            return Err(over(
                "the parameter schema",
                t.parameters.len(),
                MAX_SCHEMA_BYTES,
            ));
        }
        if t.permissions.len() > MAX_PERMISSIONS || t.tags.len() > MAX_TAGS {
            return Err(format!(
                "tool {}: {} permissions and {} tags, at most {MAX_PERMISSIONS} and {MAX_TAGS} allowed",
                quote(&t.name, MAX_NAME_BYTES),
                t.permissions.len(),
                t.tags.len()
            ));
        }
        let long_custom = t
            .permissions
            .iter()
            .any(|p| matches!(p, Permission::Custom(c) if c.len() > MAX_TAG_BYTES));
        if long_custom || t.tags.iter().any(|tag| tag.len() > MAX_TAG_BYTES) {
            return Err(format!(
                "tool {}: a tag or custom permission is over {MAX_TAG_BYTES} bytes",
                quote(&t.name, MAX_NAME_BYTES)
            ));
        }
    }
    Ok(())
}

#[cfg(feature = "runtime")]
mod run;
#[cfg(feature = "runtime")]
pub(crate) use run::{DescribeFailure, Described, run_describe};

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> DescribedTool {
        DescribedTool {
            name: name.into(),
            description: "adds two numbers".into(),
            parameters: r#"{"type":"object"}"#.into(),
            permissions: vec![Permission::Read],
            tags: vec!["math".into()],
        }
    }

    #[test]
    fn accepts_and_parses_the_schema() {
        let specs = accept_described(vec![tool("add")]).unwrap();
        assert_eq!(specs[0].name, "add");
        assert_eq!(specs[0].parameters, serde_json::json!({"type": "object"}));
        assert_eq!(specs[0].permissions, vec![Permission::Read]);
    }

    #[test]
    fn refusals_say_which_cap_or_which_tool() {
        let many = vec![tool("a"); describe_limits::MAX_TOOLS + 1];
        let e = accept_described(many).unwrap_err();
        assert!(matches!(e, DescribeRefusal::TooLarge { .. }), "{e}");
        assert_eq!(e.to_string(), "257 tools described, at most 256 allowed");

        let mut long = tool("x");
        long.tags = vec!["t".repeat(describe_limits::MAX_TAG_BYTES + 1)];
        let e = accept_described(vec![long]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "tool \"x\": a tag or custom permission is over 64 bytes"
        );

        let mut bad = tool("b\u{1b}");
        bad.parameters = "{".into();
        let e = accept_described(vec![bad]).unwrap_err();
        assert!(matches!(e, DescribeRefusal::InvalidJson { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("tool \"b\\u{1b}\": parameters is not valid JSON: "),
            "{e}"
        );
    }
}
