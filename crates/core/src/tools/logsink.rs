//! [`ToolLogSink`]: where a tool's log lines go besides `tracing`, chosen by whoever made
//! the call. The MCP server puts one into each call's [`ToolContext`] (a typed inbound
//! value) that passes the lines to its client as `notifications/message`, at the level the
//! client asked for and rate-limited; a WASM plugin's `host.log` goes through
//! [`ToolContext::log`].

use std::sync::Arc;

use crate::tools::base::ToolContext;

/// A log line's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolLogLevel {
    /// Finest detail.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal information.
    Info,
    /// Something unexpected, the call goes on.
    Warn,
    /// Something failed.
    Error,
}

/// The function that takes a call's log lines: `(level, logger, message)`.
pub type LogFn = dyn Fn(ToolLogLevel, &str, &str) + Send + Sync;

/// Where a call's log lines go. Cheap to clone.
#[derive(Clone)]
pub struct ToolLogSink(pub Arc<LogFn>);

impl std::fmt::Debug for ToolLogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolLogSink")
    }
}

impl ToolContext {
    /// Passes a log line to the caller's [`ToolLogSink`], if it set one (nothing
    /// otherwise). The sink bounds and filters; callers still clean what they pass.
    pub fn log(&self, level: ToolLogLevel, logger: &str, message: &str) {
        if let Some(sink) = self.get::<ToolLogSink>() {
            (sink.0)(level, logger, message);
        }
    }
}
