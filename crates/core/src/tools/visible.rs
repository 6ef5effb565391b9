//! [`Visible`]: which tools the asker of a call may see, carried in its [`ToolContext`]
//! (`ToolContext::with`) so a tool that calls other tools on the asker's behalf (code
//! mode's `run_code`) reaches only those: a served client's `tools` globs travel with
//! its calls.
//!
//! [`ToolContext`]: super::ToolContext

use std::sync::Arc;

/// A predicate on tool names: whether the asker of a call may see (and call) a tool. A
/// context without one sees every tool.
#[derive(Clone)]
pub struct Visible(Arc<dyn Fn(&str) -> bool + Send + Sync>);

impl Visible {
    /// The predicate `sees`.
    pub fn new(sees: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(sees))
    }

    /// Whether the asker may see the tool `name`.
    pub fn sees(&self, name: &str) -> bool {
        (self.0)(name)
    }
}

impl std::fmt::Debug for Visible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Visible(..)")
    }
}
