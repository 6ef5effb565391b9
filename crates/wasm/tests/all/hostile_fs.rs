//! Filesystem attacks by the `hostile_fs` fixture: a write grant turned into access to
//! anywhere on disk by swapping a granted folder for a symlink, deleting and renaming
//! without the Delete permission, hard links out of a read-only grant, FIFOs, and log and
//! progress floods. Each attack is followed by a good call that must still answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use toolhost_core::tools::{ApprovalDecision, StaticApprover, ToolCall, ToolContext, ToolRegistry};

use crate::support::{call, err_text, install, registry};

/// `root/work/input/data.txt`, `root/work/out/`, and `root/outside/secret.txt`.
struct Layout {
    tmp: tempfile::TempDir,
    work: PathBuf,
    input: PathBuf,
    out: PathBuf,
    outside: PathBuf,
}

fn layout() -> Layout {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let work = tmp.path().join("work");
    let input = work.join("input");
    let out = work.join("out");
    let outside = tmp.path().join("outside");
    for d in [&input, &out, &outside] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(input.join("data.txt"), "input data").unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(outside.join("secret.txt"), "TOP SECRET").unwrap_or_else(|e| panic!("{e}"));
    Layout {
        work,
        input,
        out,
        outside,
        tmp,
    }
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `hostile_fs` in a plugins folder under the layout, with this policy, approving every
/// destructive call (so a tool that declared Delete may run).
async fn load(l: &Layout, policy: &str) -> ToolRegistry {
    let plugins = l.tmp.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap_or_else(|e| panic!("{e}"));
    install(&plugins, "hostile_fs", Some(policy));
    registry(&plugins)
        .await
        .with_approver(Arc::new(StaticApprover(ApprovalDecision::AllowOnce)))
}

async fn ping(reg: &ToolRegistry) {
    let inv = call(reg, "ping", json!({})).await;
    assert_eq!(
        inv.output.as_ref().map(|o| o.canonical.clone()).ok(),
        Some(json!("pong")),
        "a good call failed after a hostile one: {}",
        inv.model_text()
    );
}

fn text(inv: &toolhost_core::tools::ToolInvocation) -> String {
    match &inv.output {
        Ok(o) => o.canonical.to_string(),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn a_read_grant_swapped_for_a_symlink_is_not_followed() {
    let l = layout();
    let policy = format!("write = [{:?}]\nread = [{:?}]\n", s(&l.work), s(&l.input));
    let reg = load(&l, &policy).await;
    let read = |p: PathBuf| call_read(&reg, p);

    assert!(text(&read(l.input.join("data.txt")).await).contains("input data"));

    // The attack: move work/input away and put a link to the outside folder in its place.
    let inv = call(
        &reg,
        "swap_for_symlink",
        json!({"dir": s(&l.work), "name": "input", "link": "../outside"}),
    )
    .await;
    assert!(
        inv.is_ok(),
        "the swap itself is allowed: {}",
        inv.model_text()
    );
    assert!(l.input.is_symlink());

    // The next call's read preopen is the folder held at load, not the link.
    let inv = read(l.input.join("secret.txt")).await;
    assert!(!text(&inv).contains("TOP SECRET"), "{}", text(&inv));
    let inv = read(l.input.join("data.txt")).await;
    assert!(text(&inv).contains("input data"), "{}", text(&inv));
    ping(&reg).await;

    // A fresh load (a restarted host) refuses the planted link instead of following it.
    let reg2 = load(&l, &policy).await;
    let inv = call_read(&reg2, l.input.join("secret.txt")).await;
    let e = err_text(&inv);
    assert!(!e.contains("TOP SECRET"), "{e}");
    assert!(e.contains("not a plain directory"), "{e}");
    ping(&reg2).await;
}

async fn call_read(reg: &ToolRegistry, p: PathBuf) -> toolhost_core::tools::ToolInvocation {
    call(reg, "read_path", json!({"path": s(&p)})).await
}

#[tokio::test]
async fn a_nested_write_grant_swapped_for_a_symlink_does_not_write_outside() {
    let l = layout();
    let policy = format!("write = [{:?}, {:?}]\n", s(&l.work), s(&l.out));
    let reg = load(&l, &policy).await;

    let inv = call(
        &reg,
        "swap_for_symlink",
        json!({"dir": s(&l.work), "name": "out", "link": "../outside"}),
    )
    .await;
    assert!(inv.is_ok(), "{}", inv.model_text());

    let target = l.out.join("pwned.txt");
    let inv = call(
        &reg,
        "write_path",
        json!({"path": s(&target), "content": "pwned"}),
    )
    .await;
    // Whatever the guest got, nothing was written outside the grant.
    assert!(
        !l.outside.join("pwned.txt").exists(),
        "wrote outside the grant: {}",
        text(&inv)
    );
    ping(&reg).await;

    let reg2 = load(&l, &policy).await;
    let inv = call(
        &reg2,
        "write_path",
        json!({"path": s(&target), "content": "pwned"}),
    )
    .await;
    assert!(!l.outside.join("pwned.txt").exists(), "{}", text(&inv));
    ping(&reg2).await;
}

#[tokio::test]
async fn write_without_delete_cannot_delete_or_rename() {
    let l = layout();
    let policy = format!("write = [{:?}]\n", s(&l.work));
    let reg = load(&l, &policy).await;
    let file = l.out.join("keep.txt");
    std::fs::write(&file, "keep").unwrap_or_else(|e| panic!("{e}"));
    let empty = l.work.join("empty");
    std::fs::create_dir(&empty).unwrap_or_else(|e| panic!("{e}"));

    let inv = call(&reg, "remove_file", json!({"path": s(&file)})).await;
    let e = err_text(&inv);
    assert!(e.contains("Delete"), "{e}");
    assert!(file.exists());
    ping(&reg).await;

    let inv = call(&reg, "remove_dir", json!({"path": s(&empty)})).await;
    assert!(err_text(&inv).contains("Delete"));
    assert!(empty.is_dir());
    ping(&reg).await;

    let moved = l.out.join("moved.txt");
    let inv = call(
        &reg,
        "rename_path",
        json!({"from": s(&file), "to": s(&moved)}),
    )
    .await;
    assert!(err_text(&inv).contains("Delete"));
    assert!(file.exists() && !moved.exists());
    ping(&reg).await;

    // Writing still works with Write alone...
    let inv = call(
        &reg,
        "write_path",
        json!({"path": s(&file), "content": "new"}),
    )
    .await;
    assert!(inv.is_ok(), "{}", inv.model_text());
    // ...and a tool that declared Delete (approved) may delete.
    let inv = call(&reg, "delete_file", json!({"path": s(&file)})).await;
    assert!(inv.is_ok(), "{}", inv.model_text());
    assert!(!file.exists());
}

#[tokio::test]
async fn a_hard_link_cannot_make_a_read_only_file_writable() {
    let l = layout();
    let policy = format!("read = [{:?}]\nwrite = [{:?}]\n", s(&l.outside), s(&l.out));
    let reg = load(&l, &policy).await;
    let link = l.out.join("link.txt");
    let inv = call(
        &reg,
        "hard_link",
        json!({"from": s(&l.outside.join("secret.txt")), "to": s(&link)}),
    )
    .await;
    err_text(&inv);
    assert!(!link.exists());
    assert_eq!(
        std::fs::read_to_string(l.outside.join("secret.txt"))
            .ok()
            .as_deref(),
        Some("TOP SECRET")
    );
    ping(&reg).await;
}

#[cfg(unix)]
#[tokio::test]
async fn a_fifo_in_a_read_grant_is_refused_instead_of_blocking() {
    let l = layout();
    let fifo = l.input.join("pipe");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(st.success());
    let policy = format!("read = [{:?}]\ntimeout_ms = 60000\n", s(&l.input));
    let reg = load(&l, &policy).await;
    // Without the guard this call would block a host thread until the deadline (and the
    // thread past it); with it, the open is refused at once.
    let inv = call_read(&reg, fifo).await;
    let e = err_text(&inv);
    assert!(e.contains("regular files"), "{e}");
    ping(&reg).await;
}

#[tokio::test]
async fn a_progress_flood_is_bounded() {
    let l = layout();
    let reg = load(&l, "").await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ctx = ToolContext::new("test", "test").with_progress(tx);
    let count = 5_000u32;
    let inv = reg
        .invoke_call(
            ToolCall::new("progress_flood", json!({"count": count, "size": 65536})),
            &ctx,
        )
        .await;
    assert!(inv.is_ok(), "{}", inv.model_text());
    let mut got = 0u32;
    let mut biggest = 0usize;
    while let Ok(ev) = rx.try_recv() {
        got += 1;
        biggest = biggest.max(ev.message.map_or(0, |m| m.len()));
    }
    assert!(got >= 1, "no progress at all");
    assert!(
        got <= toolhost_wasm::reports::MAX_PROGRESS_EVENTS,
        "{got} events"
    );
    assert!(
        biggest <= toolhost_wasm::reports::MAX_PROGRESS_BYTES + 16,
        "{biggest} bytes"
    );
    ping(&reg).await;
}

/// Everything `tracing` writes on this thread, as text.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

#[tokio::test]
async fn a_log_flood_is_capped_and_cannot_forge_lines() {
    let l = layout();
    let reg = load(&l, "").await;
    let cap = Captured::default();
    let sub = tracing_subscriber::fmt()
        .with_writer(cap.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // The test runtime is single-threaded, so the guest's host calls log on this thread.
    let guard = tracing::subscriber::set_default(sub);
    tracing::callsite::rebuild_interest_cache();
    let inv = call(&reg, "log_flood", json!({"count": 5000, "size": 65536})).await;
    drop(guard);
    assert!(inv.is_ok(), "{}", inv.model_text());
    let out =
        String::from_utf8_lossy(&cap.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    let forged_lines = out.lines().filter(|l| l.contains("forged line")).count();
    assert_eq!(forged_lines, toolhost_wasm::reports::MAX_LOG_LINES as usize);
    assert!(
        !out.lines().any(|l| l.starts_with("2026-01-01T00:00:00Z")),
        "a guest forged a log line"
    );
    assert!(!out.contains('\x1b'), "an escape sequence reached the log");
    assert!(
        out.lines()
            .all(|l| l.len() <= toolhost_wasm::reports::MAX_LOG_BYTES + 512),
        "a log line over the cap"
    );
    // (The count of dropped lines, logged at the end of the call, is checked by the unit
    // test `reports::tests::log_lines_over_the_cap_are_counted`: tracing's per-callsite
    // interest cache is shared with tests running on other threads without a subscriber.)
    ping(&reg).await;
}
