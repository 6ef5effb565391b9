//! Fuzzes how the MCP client reads a stdio server's stdout: arbitrary bytes, delivered in
//! arbitrary chunks, through `LineGuard` alone and through the full framing
//! (`framed_server_output`: the guard under rmcp's JSON-RPC line codec).
//!
//! Input layout: byte 0 picks the line limit (1..=256 bytes), byte 1 seeds the chunk
//! sizes, the rest is the stream. Checks beyond "no panic":
//! - the guard passes bytes through unchanged, and fails if and only if a line is longer
//!   than the limit, no later than the read that brings that line over it;
//! - the framing ends (no endless loop) and yields at most one message per line.
#![no_main]

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use toolhost_mcp::stdio::{LineGuard, framed_server_output};

/// An `AsyncRead` that hands out `data` in chunks of pseudo-random sizes (1..=64 bytes).
struct Chunked<'a> {
    data: &'a [u8],
    seed: u32,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        // A linear congruential step: deterministic per input, varied chunk sizes.
        self.seed = self.seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let want = 1 + (self.seed >> 16) as usize % 64;
        let n = want.min(self.data.len()).min(buf.remaining());
        let (head, tail) = self.data.split_at(n);
        buf.put_slice(head);
        self.data = tail;
        Poll::Ready(Ok(()))
    }
}

/// The length of the longest line (bytes between newlines, the last one unterminated).
fn longest_line(data: &[u8]) -> usize {
    data.split(|b| *b == b'\n')
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0)
}

fuzz_target!(|input: &[u8]| {
    let [limit, seed, stream @ ..] = input else {
        return;
    };
    let max = 1 + usize::from(*limit);
    let seed = u32::from(*seed);
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    let rt = RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    });
    rt.block_on(async {
        // The guard alone: transparent until the first overlong line, then closed.
        let mut guard = LineGuard::new(Chunked { data: stream, seed }, max);
        let mut passed = Vec::new();
        let mut buf = [0u8; 64];
        let failed = loop {
            match guard.read(&mut buf).await {
                Ok(0) => break false,
                Ok(n) => passed.extend_from_slice(&buf[..n]),
                Err(e) => {
                    assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
                    assert!(guard.broken().is_some(), "a failure records why");
                    assert!(guard.read(&mut buf).await.is_err(), "stays closed");
                    break true;
                }
            }
        };
        assert_eq!(passed, stream[..passed.len()], "bytes pass unchanged");
        let overlong = longest_line(stream) > max;
        assert_eq!(failed, overlong, "fails iff a line is over {max} bytes");
        if failed {
            // What passed holds no overlong line yet, and at most one 64-byte read
            // separates it from the line that broke the limit.
            assert!(longest_line(&passed) <= max);
            assert!(longest_line(&stream[..(passed.len() + 64).min(stream.len())]) > max);
        }

        // The full framing: terminates, at most one message per line.
        let lines = stream.iter().filter(|b| **b == b'\n').count() + 1;
        let mut framed = framed_server_output(Chunked { data: stream, seed }, max);
        let mut messages = 0usize;
        let mut items = 0usize;
        while let Some(item) = framed.next().await {
            items += 1;
            assert!(
                items <= lines + 1,
                "the framing yields more items than lines"
            );
            if item.is_ok() {
                messages += 1;
            } else {
                break;
            }
        }
        assert!(messages <= lines);
    });
});
