//! `toolhost:tool/host`: log lines and progress, bounded and cleaned by
//! [`crate::reports`].

use crate::bindings::toolhost::tool::{host, types};
use crate::sandbox::HostState;

impl types::Host for HostState {}

impl host::Host for HostState {
    async fn log(&mut self, level: types::LogLevel, message: String) {
        let reports = self.reports.get_mut().unwrap_or_else(|e| e.into_inner());
        let Some(message) = reports.log(&message) else {
            return;
        };
        let (plugin, tool) = (&*self.plugin, &*self.tool);
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
        let reports = self.reports.get_mut().unwrap_or_else(|e| e.into_inner());
        reports.progress(self.ctx.as_ref(), progress, total, message);
    }
}
