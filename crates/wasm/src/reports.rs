//! What a guest reports to the host during a call (`host.log`, `host.progress`), bounded
//! and cleaned. Both come from untrusted code, so (docs/security.md,
//! "Log and progress floods"):
//!
//! - a log line is cut to [`MAX_LOG_BYTES`] and stripped of control characters (CR, LF,
//!   ESC, ...), so a guest cannot forge extra log lines or drive a terminal; at most
//!   [`MAX_LOG_LINES`] lines per call are kept;
//! - a progress message is cut to [`MAX_PROGRESS_BYTES`] and cleaned the same way;
//!   progress reports are forwarded at most once every [`PROGRESS_INTERVAL`] and at most
//!   [`MAX_PROGRESS_EVENTS`] per call; reports in between are coalesced (the newest one is
//!   kept and sent when the interval has passed or when the call ends);
//! - whatever was dropped is counted and reported in one log line when the call ends.
//!
//! The progress channel of `ToolContext` is unbounded, so the bound is applied here, at the
//! producer: nothing a guest does can queue more than [`MAX_PROGRESS_EVENTS`] events.

use std::time::{Duration, Instant};

use toolhost_core::tools::ToolContext;

/// Log lines one call may write; further lines are dropped and counted.
pub const MAX_LOG_LINES: u32 = 1000;
/// Longest log line kept, bytes.
pub const MAX_LOG_BYTES: usize = 4096;
/// Longest progress message kept, bytes.
pub const MAX_PROGRESS_BYTES: usize = 1024;
/// Progress events one call may forward.
pub const MAX_PROGRESS_EVENTS: u32 = 1000;
/// Shortest gap between two forwarded progress events.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// `text` cut to at most `max` bytes (on a character boundary, with a marker) and with
/// every control character replaced: CR/LF/TAB by a space, the rest by U+FFFD.
pub fn clean(text: &str, max: usize) -> String {
    let head = toolhost_core::tools::render::head(text, max);
    let cut = head.len();
    let mut out: String = head
        .chars()
        .map(|c| match c {
            '\r' | '\n' | '\t' => ' ',
            c if c.is_control() => '\u{fffd}',
            // Unicode line/paragraph separators and bidi overrides also forge or hide text.
            '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                '\u{fffd}'
            }
            c => c,
        })
        .collect();
    if cut < text.len() {
        out.push_str(" [truncated]");
    }
    out
}

/// One pending progress report.
#[derive(Debug, Clone)]
struct Progress {
    progress: f64,
    total: Option<f64>,
    message: Option<String>,
}

/// The log and progress accounting of one call.
#[derive(Debug, Default)]
pub struct Reports {
    log_lines: u32,
    logs_dropped: u64,
    progress_sent: u32,
    progress_dropped: u64,
    last_sent: Option<Instant>,
    pending: Option<Progress>,
}

impl Reports {
    /// Counts a log line; `None` if it must be dropped, else the cleaned line.
    pub fn log(&mut self, message: &str) -> Option<String> {
        self.log_lines = self.log_lines.saturating_add(1);
        if self.log_lines > MAX_LOG_LINES {
            self.logs_dropped += 1;
            return None;
        }
        Some(clean(message, MAX_LOG_BYTES))
    }

    /// Takes a progress report: forwards it to `ctx` now, keeps it as the pending one
    /// (replacing and counting an older pending one), or drops it once the call's budget
    /// is spent.
    pub fn progress(
        &mut self,
        ctx: Option<&ToolContext>,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let Some(ctx) = ctx else { return };
        let report = Progress {
            progress,
            total,
            message: message.map(|m| clean(&m, MAX_PROGRESS_BYTES)),
        };
        if self.progress_sent >= MAX_PROGRESS_EVENTS {
            self.progress_dropped += 1;
            return;
        }
        let due = self
            .last_sent
            .is_none_or(|t| t.elapsed() >= PROGRESS_INTERVAL);
        if due {
            // A pending report is superseded by this newer one.
            if self.pending.take().is_some() {
                self.progress_dropped += 1;
            }
            self.send(ctx, report);
        } else if self.pending.replace(report).is_some() {
            self.progress_dropped += 1;
        }
    }

    fn send(&mut self, ctx: &ToolContext, p: Progress) {
        self.progress_sent += 1;
        self.last_sent = Some(Instant::now());
        ctx.report_progress(p.progress, p.total, p.message);
    }

    /// Ends the call: sends the newest coalesced progress report (if the budget allows)
    /// and logs how many log lines and progress reports were dropped.
    pub fn finish(&mut self, ctx: Option<&ToolContext>, plugin: &str, tool: &str) {
        if let (Some(p), Some(ctx)) = (self.pending.take(), ctx) {
            if self.progress_sent < MAX_PROGRESS_EVENTS {
                self.send(ctx, p);
            } else {
                self.progress_dropped += 1;
            }
        }
        if self.logs_dropped > 0 || self.progress_dropped > 0 {
            tracing::warn!(
                target: "toolhost::guest",
                plugin, tool,
                logs_dropped = self.logs_dropped,
                progress_dropped = self.progress_dropped,
                progress_sent = self.progress_sent,
                "guest log/progress over the per-call limits was dropped or coalesced"
            );
        }
    }

    /// Log lines dropped so far in this call.
    pub fn logs_dropped(&self) -> u64 {
        self.logs_dropped
    }

    /// Progress reports dropped or coalesced away so far in this call.
    pub fn progress_dropped(&self) -> u64 {
        self.progress_dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_cannot_forge_lines() {
        let forged = "ok\r\n2026-01-01T00:00:00Z ERROR toolhost: forged\x1b[2J\x07";
        let c = clean(forged, 4096);
        assert!(!c.contains(['\r', '\n', '\x1b', '\x07']), "{c:?}");
        assert!(c.starts_with("ok  2026"));
        assert!(!clean("a\u{2028}b\u{202e}c", 100).contains(['\u{2028}', '\u{202e}']));
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary() {
        let c = clean(&"é".repeat(3000), 4097);
        assert!(c.ends_with(" [truncated]"));
        assert!(c.len() <= 4097 + " [truncated]".len());
    }

    #[test]
    fn a_progress_flood_is_bounded_and_counted() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let ctx = ToolContext::new("s", "t").with_progress(tx);
        let mut r = Reports::default();
        let big = "x".repeat(64 << 10);
        for i in 0..10_000 {
            r.progress(Some(&ctx), f64::from(i), None, Some(big.clone()));
        }
        r.finish(Some(&ctx), "p", "t");
        let mut got = 0u32;
        while let Ok(ev) = rx.try_recv() {
            got += 1;
            assert!(ev.message.map_or(0, |m| m.len()) <= MAX_PROGRESS_BYTES + 16);
        }
        assert!((1..=MAX_PROGRESS_EVENTS).contains(&got), "{got}");
        // Everything not forwarded was counted.
        assert_eq!(u64::from(got) + r.progress_dropped, 10_000);
    }

    #[test]
    fn log_lines_over_the_cap_are_counted() {
        let mut r = Reports::default();
        let kept = (0..MAX_LOG_LINES + 10).filter_map(|_| r.log("x")).count();
        assert_eq!(kept, MAX_LOG_LINES as usize);
        assert_eq!(r.logs_dropped(), 10);
    }
}
