//! The child-process side of the stdio transport: spawning with a cleared environment,
//! a line-length guard on stdout, and stderr forwarded to `tracing` with caps (each line
//! escaped for the terminal).
//!
//! Above the guard, [`DeepLines`] keeps JSON nested too deep for the parser from costing
//! a server its whole answer (a tool nested too deep is refused by name).
//!
//! [`LineGuard`], [`DeepLines`] and [`framed_server_output`] are public so the reading
//! path of a server's stdout can be driven from outside the crate (the `mcp_line_reader`
//! fuzz target feeds it arbitrary bytes in arbitrary chunks); the transport itself uses
//! them.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};

use rmcp::RoleClient;
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::async_rw::JsonRpcMessageCodec;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{Child, ChildStderr};
use tokio_util::codec::FramedRead;

mod deep;
pub use deep::{DeepLines, MAX_PARSED_DEPTH, MAX_TOOL_DEPTH};
#[cfg(feature = "runtime")]
pub(crate) use deep::{shown, warn_too_deep};

/// Limits of the stdio transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StdioLimits {
    /// The longest line (one JSON-RPC message) accepted from the server, in bytes. A longer
    /// line closes the connection with an error naming the limit. Default 4 MiB.
    pub max_line_bytes: usize,
    /// Each stderr line is cut to this many bytes before it is logged. Default 2 KiB.
    pub max_stderr_line_bytes: usize,
    /// At most this many stderr bytes are logged per connection; the rest is read and
    /// dropped (counted). Default 256 KiB.
    pub max_stderr_total_bytes: usize,
    /// How many of the last stderr lines are kept for error messages. Default 20.
    pub stderr_tail_lines: usize,
}

impl Default for StdioLimits {
    fn default() -> Self {
        Self {
            max_line_bytes: 4 * 1024 * 1024,
            max_stderr_line_bytes: 2 * 1024,
            max_stderr_total_bytes: 256 * 1024,
            stderr_tail_lines: 20,
        }
    }
}

/// Shared state of one child: its last stderr lines and, if the framing broke, why.
#[derive(Debug, Default)]
pub(crate) struct ChildState {
    pub(crate) tail: Mutex<VecDeque<String>>,
    pub(crate) broken: OnceLock<String>,
    pub(crate) stderr_done: std::sync::atomic::AtomicBool,
}

impl ChildState {
    /// Waits (briefly) for the stderr pump to reach the end of a dead child's output, so
    /// error messages quote its last words.
    pub(crate) async fn settle(&self) {
        for _ in 0..30 {
            if self.stderr_done.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    pub(crate) fn tail_text(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join(" | ")
    }
}

/// An `AsyncRead` over the child's stdout that fails (and records why) as soon as a line
/// grows past the limit, so a server can never make the host buffer an unbounded line.
///
/// Bytes pass through unchanged; the read that brings a line past `max` bytes (not
/// counting its `\n`) fails with [`std::io::ErrorKind::InvalidData`], and so does every
/// later read.
pub struct LineGuard<R> {
    inner: R,
    current: usize,
    max: usize,
    /// Set by the first overlong line: the stream stays closed after it.
    failed: bool,
    state: Arc<ChildState>,
}

impl<R> LineGuard<R> {
    /// A guard over `inner` that refuses lines longer than `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        Self::with_state(inner, max, Arc::default())
    }

    /// A guard that records why the framing broke in the child's shared state.
    pub(crate) fn with_state(inner: R, max: usize, state: Arc<ChildState>) -> Self {
        Self {
            inner,
            current: 0,
            max,
            failed: false,
            state,
        }
    }

    /// Why the guard closed the stream, once a line went over the limit.
    pub fn broken(&self) -> Option<&str> {
        self.state.broken.get().map(String::as_str)
    }
}

/// The longest line rmcp's codec accepts behind a [`LineGuard`] of `max_line_bytes`: a
/// little more than the guard's limit, so an overlong line is always reported by the
/// guard (with the limit in its message) and never by the codec first.
pub fn codec_max_line(max_line_bytes: usize) -> usize {
    max_line_bytes.saturating_add(64)
}

/// A server's stdout framed into JSON-RPC messages exactly as the stdio transport reads
/// it: [`LineGuard`], then [`DeepLines`], under rmcp's newline-delimited codec.
pub fn framed_server_output<R: AsyncRead + Unpin>(
    inner: R,
    max_line_bytes: usize,
) -> FramedRead<DeepLines<LineGuard<R>>, JsonRpcMessageCodec<RxJsonRpcMessage<RoleClient>>> {
    FramedRead::new(
        DeepLines::new(LineGuard::new(inner, max_line_bytes), "(stdout)"),
        JsonRpcMessageCodec::new_with_max_length(codec_max_line(max_line_bytes)),
    )
}

impl<R> LineGuard<R> {
    fn overlong(&self) -> std::io::Error {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the server sent a line longer than {} bytes (the stdio message limit); \
                 the connection was closed",
                self.max
            ),
        )
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineGuard<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(Err(this.overlong()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let mut current = this.current;
                for &b in &buf.filled()[before..] {
                    if b == b'\n' {
                        current = 0;
                    } else {
                        current += 1;
                        if current > this.max {
                            this.failed = true;
                            let err = this.overlong();
                            let _ = this.state.broken.set(err.to_string());
                            return Poll::Ready(Err(err));
                        }
                    }
                }
                this.current = current;
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

/// Reads the child's stderr to the end, logging each line (cut to the limit) under the
/// `toolhost_mcp::stderr` target until the byte budget is spent, and keeping a short tail.
pub(crate) async fn pump_stderr(
    server: String,
    mut stderr: ChildStderr,
    limits: StdioLimits,
    state: Arc<ChildState>,
) {
    let mut buf = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    let mut line_cut = false;
    let mut logged = 0usize;
    let mut dropped = 0usize;
    let emit = |line: &[u8], cut: bool, logged: &mut usize, dropped: &mut usize| {
        let text = String::from_utf8_lossy(line);
        // The server is not trusted: its words may reach a terminal through the log,
        // so control characters (ESC, CR, ...) and bidi overrides are shown escaped.
        let text = toolhost_core::tools::escape::escape_line(text.trim_end_matches('\r'));
        let text = if cut {
            format!("{text} [...cut]")
        } else {
            text.to_string()
        };
        {
            let mut tail = state.tail.lock().unwrap_or_else(|e| e.into_inner());
            if tail.len() >= limits.stderr_tail_lines.max(1) {
                tail.pop_front();
            }
            tail.push_back(text.chars().take(300).collect());
        }
        if *logged + text.len() <= limits.max_stderr_total_bytes {
            *logged += text.len();
            tracing::info!(target: "toolhost_mcp::stderr", server = %server, "{text}");
        } else {
            if *dropped == 0 {
                tracing::warn!(
                    target: "toolhost_mcp::stderr",
                    server = %server,
                    "stderr log budget of {} bytes spent; further stderr output is dropped",
                    limits.max_stderr_total_bytes
                );
            }
            *dropped += text.len();
        }
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                emit(&line, line_cut, &mut logged, &mut dropped);
                line.clear();
                line_cut = false;
            } else if line.len() < limits.max_stderr_line_bytes {
                line.push(b);
            } else {
                line_cut = true;
            }
        }
    }
    if !line.is_empty() {
        emit(&line, line_cut, &mut logged, &mut dropped);
    }
    state
        .stderr_done
        .store(true, std::sync::atomic::Ordering::Release);
    if dropped > 0 {
        tracing::warn!(target: "toolhost_mcp::stderr", server = %server, dropped_bytes = dropped, "stderr output dropped over the budget");
    }
}

/// Resolves `command` against the host's `PATH` (the child's environment is cleared, so the
/// lookup cannot rely on it). A command with a path separator is used as is.
pub(crate) fn resolve_command(command: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(command);
    if p.components().count() > 1 || p.is_absolute() {
        return p.to_path_buf();
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join(command);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    p.to_path_buf()
}

/// Describes how the child ended, waiting briefly for it to be reaped.
pub(crate) async fn exit_note(child: &tokio::sync::Mutex<Child>) -> Option<String> {
    let mut child = child.lock().await;
    match tokio::time::timeout(std::time::Duration::from_millis(500), child.wait()).await {
        Ok(Ok(status)) => Some(format!("the server process exited ({status})")),
        _ => None,
    }
}
