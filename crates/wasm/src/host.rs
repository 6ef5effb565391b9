//! `toolhost:tool/host` (0.1.0 and 0.2.0, the same functions): log lines and progress,
//! bounded and cleaned by [`crate::reports`]. Log lines go to `tracing` and to the
//! caller's log sink (`ToolContext::log`).

use crate::bindings::toolhost::tool::{host, types};
use crate::sandbox::HostState;
use toolhost_core::tools::ToolLogLevel;

impl types::Host for HostState {}

impl host::Host for HostState {
    async fn log(&mut self, level: types::LogLevel, message: String) {
        let reports = self.reports.get_mut().unwrap_or_else(|e| e.into_inner());
        let Some(message) = reports.log(&self.redactor.text(&message)) else {
            return;
        };
        let (plugin, tool) = (&*self.plugin, &*self.tool);
        // The caller's sink too (an MCP client of `serve`, as `notifications/message`).
        if let Some(ctx) = &self.ctx {
            let lvl = match level {
                types::LogLevel::Trace => ToolLogLevel::Trace,
                types::LogLevel::Debug => ToolLogLevel::Debug,
                types::LogLevel::Info => ToolLogLevel::Info,
                types::LogLevel::Warn => ToolLogLevel::Warn,
                types::LogLevel::Error => ToolLogLevel::Error,
            };
            ctx.log(lvl, &format!("{plugin}/{tool}"), &message);
        }
        match level {
            types::LogLevel::Trace => {
                tracing::trace!(target: "toolhost::guest", plugin, tool, "{message}")
            }
            types::LogLevel::Debug => {
                tracing::debug!(target: "toolhost::guest", plugin, tool, "{message}")
            }
            types::LogLevel::Info => {
                tracing::info!(target: "toolhost::guest", plugin, tool, "{message}")
            }
            types::LogLevel::Warn => {
                tracing::warn!(target: "toolhost::guest", plugin, tool, "{message}")
            }
            types::LogLevel::Error => {
                tracing::error!(target: "toolhost::guest", plugin, tool, "{message}")
            }
        }
    }

    async fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        let message = message.map(|m| self.redactor.text(&m).into_owned());
        let reports = self.reports.get_mut().unwrap_or_else(|e| e.into_inner());
        reports.progress(self.ctx.as_ref(), progress, total, message);
    }
}

/// The 0.2.0 host interface: the same functions, delegated to the 0.1.0 implementation.
mod v2 {
    use crate::bindings::toolhost::tool::{host as host1, types as types1};
    use crate::bindings_v2::toolhost::tool::{host, types};
    use crate::sandbox::HostState;

    impl types::Host for HostState {}

    impl host::Host for HostState {
        async fn log(&mut self, level: types::LogLevel, message: String) {
            let level = match level {
                types::LogLevel::Trace => types1::LogLevel::Trace,
                types::LogLevel::Debug => types1::LogLevel::Debug,
                types::LogLevel::Info => types1::LogLevel::Info,
                types::LogLevel::Warn => types1::LogLevel::Warn,
                types::LogLevel::Error => types1::LogLevel::Error,
            };
            host1::Host::log(self, level, message).await;
        }

        async fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
            host1::Host::progress(self, progress, total, message).await;
        }
    }
}
