//! The run of a component's `describe()` inside the sandbox (no grants, under
//! [`DESCRIBE_TIMEOUT`]) and what the describe cache remembers of it: the part of
//! [`crate::describe`] that needs the wasm runtime (the `runtime` feature).

use std::sync::Arc;
use std::time::Duration;

use toolhost_core::tools::{Permission, ToolError};

use super::{DESCRIBE_TIMEOUT, DescribeRefusal, DescribedTool, ToolSpec, accept_described};
use crate::bindings;
use crate::component::PluginInner;
use crate::error::PluginError;
use crate::grant::Grant;
use crate::limits::map_trap;
use crate::store::{CallSpec, facts, new_store};

/// A permission as WIT carries it, as the tools API knows it.
fn permission_from_wit(p: bindings::Permission) -> Permission {
    use bindings::Permission as W;
    match p {
        W::Read => Permission::Read,
        W::Write => Permission::Write,
        W::Delete => Permission::Delete,
        W::Network => Permission::Network,
        W::Shell => Permission::Shell,
        W::FileSystem => Permission::FileSystem,
        W::Custom(s) => Permission::Custom(s),
    }
}

/// The bindings' `tool-info` as plain data.
fn from_wit(info: bindings::toolhost::tool::types::ToolInfo) -> DescribedTool {
    DescribedTool {
        name: info.name,
        description: info.description,
        parameters: info.parameters,
        permissions: info
            .permissions
            .into_iter()
            .map(permission_from_wit)
            .collect(),
        tags: info.tags,
    }
}

/// What the describe cache holds for a component digest: its tools, or why it was refused
/// (a refusal that does not depend on the policy: the time budget, the output caps, bad
/// JSON), so a later start refuses it at once instead of paying the budget again.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Described {
    /// `describe()` succeeded.
    Tools(Vec<ToolSpec>),
    /// `describe()` was refused.
    Rejected(Rejection),
    /// A plain WIT component: the tools derived from its type (no `describe()` ran).
    Plain(crate::plain::PlainDescribed),
}

/// A remembered `describe()` refusal.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Rejection {
    /// [`PluginError::DescribeTimeout`].
    Timeout {
        /// The budget, ms.
        ms: u64,
    },
    /// [`PluginError::DescribeTooLarge`].
    TooLarge {
        /// The message.
        message: String,
    },
    /// [`PluginError::Describe`] for output the host cannot use (bad JSON).
    Invalid {
        /// The message.
        message: String,
    },
}

impl Rejection {
    /// The error a load of the component at `path` fails with.
    pub(crate) fn into_error(self, path: &str) -> PluginError {
        let path = path.to_string();
        match self {
            Rejection::Timeout { ms } => PluginError::DescribeTimeout {
                path,
                timeout: Duration::from_millis(ms),
            },
            Rejection::TooLarge { message } => PluginError::DescribeTooLarge { path, message },
            Rejection::Invalid { message } => PluginError::Describe { path, message },
        }
    }
}

impl From<DescribeRefusal> for Rejection {
    fn from(r: DescribeRefusal) -> Self {
        let message = r.to_string();
        match r {
            DescribeRefusal::TooLarge { .. } => Rejection::TooLarge { message },
            DescribeRefusal::InvalidJson { .. } => Rejection::Invalid { message },
        }
    }
}

/// Why `describe()` failed: a refusal worth remembering, or a failure that may depend on
/// the policy (a memory cap) or the moment.
pub(crate) enum DescribeFailure {
    /// Remembered by the component's digest.
    Remembered(Rejection),
    /// Not remembered: the message of a [`PluginError::Describe`].
    Other(String),
}

/// Runs the component's `describe()` with no grants, under [`DESCRIBE_TIMEOUT`], and
/// accepts its output ([`accept_described`]).
pub(crate) async fn run_describe(
    inner: &Arc<PluginInner>,
) -> Result<Vec<ToolSpec>, DescribeFailure> {
    let (engine, pre) = inner
        .runnable()
        .map_err(|e| DescribeFailure::Other(e.to_string()))?;
    let grant = Grant::nothing(&inner.policy);
    let mut store = new_store(
        inner,
        engine,
        CallSpec {
            grant: &grant,
            declared_network: false,
            ctx: None,
            tool: "describe",
            timeout: DESCRIBE_TIMEOUT,
            fuel: None,
        },
    )
    .map_err(|e| DescribeFailure::Other(e.to_string()))?;
    let run = async { pre.describe(&mut store).await };
    // The epoch callback stops a guest that spins; the timer stops one blocked in host
    // I/O (a WASI sleep or poll), where no wasm runs for the epoch check to see.
    let outcome = tokio::select! {
        r = run => Some(r),
        () = tokio::time::sleep(DESCRIBE_TIMEOUT) => None,
    };
    store.data().flush_output();
    let timeout = Rejection::Timeout {
        ms: DESCRIBE_TIMEOUT.as_millis() as u64,
    };
    let Some(res) = outcome else {
        return Err(DescribeFailure::Remembered(timeout));
    };
    let infos = res.map_err(|e| {
        let err = map_trap(
            "describe",
            &e,
            facts(
                &store,
                DESCRIBE_TIMEOUT,
                None,
                inner.engine.options().max_wasm_stack,
            ),
        );
        match err {
            ToolError::Timeout(..) => DescribeFailure::Remembered(timeout.clone()),
            other => DescribeFailure::Other(other.to_string()),
        }
    })?;
    accept_described(infos.into_iter().map(from_wit).collect())
        .map_err(|r| DescribeFailure::Remembered(r.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_for_bad_json_is_remembered_as_invalid() {
        let bad = DescribedTool {
            name: "b".into(),
            description: String::new(),
            parameters: "{".into(),
            permissions: Vec::new(),
            tags: Vec::new(),
        };
        let e = accept_described(vec![bad]).unwrap_err();
        assert!(matches!(Rejection::from(e), Rejection::Invalid { .. }));
    }
}
