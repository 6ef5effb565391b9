//! The stdio side of [`McpServer`]: one client over a byte-stream pair, and this
//! process's own stdin/stdout (reopened privately as non-blocking pipes where possible).

use super::McpServer;
use crate::error::McpServeError;
use rmcp::ServiceExt;

impl McpServer {
    /// Serves one client over any byte stream pair (stdin/stdout, a pipe, a socket) until
    /// it disconnects.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), McpServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .serve((read, write))
            .await
            .map_err(|e| McpServeError::Session(crate::error::serve_init_error_text(&e)))?;
        running
            .waiting()
            .await
            .map_err(|e| McpServeError::Session(e.to_string()))?;
        Ok(())
    }

    /// Serves one client over this process's stdin/stdout until it disconnects. Nothing
    /// else may write to stdout meanwhile (logs go to stderr).
    ///
    /// When stdin and stdout are pipes (as when an MCP client spawns the server), they
    /// are reopened privately and driven directly by the tokio reactor in non-blocking
    /// mode (the shared stdio descriptors stay blocking, see `stdio_pipes`). tokio's own
    /// `stdin()`/`stdout()` (which rmcp's `stdio()` uses) hand every read and write to a
    /// blocking thread, two thread hops per message; on a 2-core machine that was a
    /// third of the latency of a small `tools/call`. Otherwise (a terminal, a file) the
    /// portable blocking-pool streams are used.
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        #[cfg(unix)]
        if let Some((read, write)) = stdio_pipes() {
            return self.serve_io(read, write).await;
        }
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_io(stdin, stdout).await
    }
}

/// Stdin and stdout as non-blocking tokio pipes, when both are pipes (FIFOs).
///
/// The non-blocking flag (`O_NONBLOCK`) belongs to the open file description, which a
/// duplicated descriptor shares: with the original fds, setting it would also make fd 2
/// non-blocking when stderr is the same pipe (`2>&1`), and logging would then fail with
/// `EAGAIN` (it aborted the process), and it would leak into the parent that handed us the
/// pipe. So each pipe is opened afresh through `/proc/self/fd/N`, which gives this process
/// a private file description of the same pipe; only that one is made non-blocking. Where
/// that is impossible (no `/proc`, not a pipe) the caller falls back to blocking streams.
#[cfg(target_os = "linux")]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let is_fifo = |fd: u8| {
        std::fs::metadata(format!("/proc/self/fd/{fd}")).is_ok_and(|m| m.file_type().is_fifo())
    };
    if !is_fifo(0) || !is_fifo(1) {
        return None;
    }
    // Opened non-blocking: opening a FIFO blocks until the other end is open, and if
    // the client already closed its end that would be forever (for writing it fails
    // with ENXIO instead, and we fall back).
    let open = |path: &str, write: bool| {
        std::fs::OpenOptions::new()
            .read(!write)
            .write(write)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .ok()
    };
    let stdin = open("/proc/self/fd/0", false)?;
    let stdout = open("/proc/self/fd/1", true)?;
    // `from_file` refuses anything that is not a FIFO and sets O_NONBLOCK on our private
    // descriptions only.
    let read = tokio::net::unix::pipe::Receiver::from_file(stdin).ok()?;
    let write = tokio::net::unix::pipe::Sender::from_file(stdout).ok()?;
    Some((read, write))
}

/// Elsewhere there is no private reopening of a pipe: use the blocking-pool streams.
#[cfg(all(unix, not(target_os = "linux")))]
fn stdio_pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    None
}
