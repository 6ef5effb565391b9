//! [`CappedPipe`]: the guest's stdout and stderr, captured per call and capped, so a
//! chatty guest can neither grow the host nor reach the terminal (the captured text goes to
//! `tracing`, escaped, when the call ends).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// A byte sink that keeps the first `cap` bytes and counts the rest. The guest's writes
/// always succeed, so a chatty guest is never broken by the cap.
#[derive(Debug, Clone)]
pub struct CappedPipe {
    inner: Arc<Mutex<CapBuf>>,
}

#[derive(Debug)]
struct CapBuf {
    data: Vec<u8>,
    cap: usize,
    dropped: u64,
}

impl CappedPipe {
    /// A pipe keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        CappedPipe {
            inner: Arc::new(Mutex::new(CapBuf {
                data: Vec::new(),
                cap,
                dropped: 0,
            })),
        }
    }

    /// The kept bytes (lossy UTF-8) and the number of bytes dropped.
    pub fn take(&self) -> (String, u64) {
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&b.data).into_owned();
        b.data.clear();
        (text, std::mem::take(&mut b.dropped))
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let room = b.cap.saturating_sub(b.data.len());
        let keep = room.min(buf.len());
        b.data.extend_from_slice(&buf[..keep]);
        b.dropped += (buf.len() - keep) as u64;
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
