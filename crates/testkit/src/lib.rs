//! `toolhost-testkit`: what the tests and benches of several crates share, so each helper
//! exists once.
//!
//! - [`tools`]: small native tools (`add`, `mul`) for pipeline and loop tests.
//! - [`peers`]: locating the test peers that `cargo xtask peers` installs (server-everything,
//!   server-filesystem, the Python `mcp` package); a missing peer fails the test in CI
//!   (`CI=true`) and skips it, with a message, elsewhere.
//! - [`jsonrpc`]: a raw JSON-RPC line client over a child's stdio.
//! - [`http`]: raw HTTP/1.1 requests, and a raw MCP client over them.
//! - [`serve`]: a real `toolhost serve --http` on a free loopback port.
//! - [`registry`]: a real OCI registry (Debian `docker-registry`) on 127.0.0.1.
//! - [`minisign`]: key pairs and signatures made by the real `minisign` tool.
//! - [`plugins_dir`], [`built_plugins`]: the components `cargo xtask plugins` builds.
//! - [`show`]: a process output as one block, for assertion messages.
//! - [`temp_dir`], [`free_port`], [`wait_for_port`], [`port_listening`], [`workspace_root`].
//!
//! Dev-only: no published crate depends on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

pub mod http;
pub mod jsonrpc;
pub mod minisign;
pub mod peers;
pub mod registry;
pub mod serve;
pub mod tools;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    here.canonicalize().unwrap_or(here)
}

/// The folder of built plugins: `$TOOLHOST_TEST_PLUGINS`, else `target/plugins`.
pub fn plugins_dir() -> PathBuf {
    std::env::var_os("TOOLHOST_TEST_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/plugins"))
}

/// [`plugins_dir`] when every file of `needed` (paths relative to it) is there. Else a
/// message naming the command that builds them, and `None` (skip) locally or a panic in
/// CI (`CI=true`), where the build is a set-up step.
pub fn built_plugins(needed: &[&str]) -> Option<PathBuf> {
    let dir = plugins_dir();
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    let msg = format!(
        "built plugins missing under {} ({}); run `cargo xtask plugins`",
        dir.display(),
        missing.join(", ")
    );
    if peers::in_ci() {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// A finished process as one readable block (status, stdout, stderr), for assertion
/// messages.
pub fn show(out: &std::process::Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
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

/// Whether something listens on the loopback port within `within` (tried every 50 ms),
/// blocking; for tests that are not async.
pub fn port_listening(port: u16, within: std::time::Duration) -> bool {
    let t0 = std::time::Instant::now();
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if t0.elapsed() >= within {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
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

/// The compiled artifacts (`.cwasm`, optimized builds: baseline builds are never cached)
/// in `cache`, a wasm compile cache folder (`XDG_CACHE_HOME/toolhost/wasm` of a test's
/// work folder); 0 when it does not exist.
pub fn compiled_artifacts(cache: &Path) -> usize {
    std::fs::read_dir(cache)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cwasm"))
                .count()
        })
        .unwrap_or(0)
}
