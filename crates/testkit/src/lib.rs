//! `toolhost-testkit`: what the tests and benches of several crates share, so each helper
//! exists once.
//!
//! - [`tools`]: small native tools (`add`, `mul`) for pipeline and loop tests.
//! - [`peers`]: locating the test peers that `cargo xtask peers` installs (server-everything,
//!   server-filesystem, the Python `mcp` package); a missing peer fails the test in CI
//!   (`CI=true`) and skips it, with a message, elsewhere.
//! - [`temp_dir`], [`free_port`], [`wait_for_port`], [`workspace_root`].
//!
//! Dev-only: no published crate depends on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub mod peers;
pub mod tools;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    here.canonicalize().unwrap_or(here)
}

/// A fresh, empty temp folder whose name carries `tag`, the process id, the time and a
/// counter (unique across the tests of one run and across runs).
pub fn temp_dir(tag: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "toolhost-test-{tag}-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local addr").port()
}

/// Waits (bounded, about 20 s) until something listens on the loopback port; panics
/// otherwise.
pub async fn wait_for_port(port: u16) {
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("nothing listens on 127.0.0.1:{port}");
}
