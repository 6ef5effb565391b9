//! Filesystem escapes: every attempt is denied, the data outside is untouched, and a good
//! call works right after.

use serde_json::json;

use crate::support::{call, err_text, still_works, with_policy};

struct Layout {
    _tmp: tempfile::TempDir,
    allowed: std::path::PathBuf,
    secret: std::path::PathBuf,
}

/// `root/allowed/inside.txt` (granted) and `root/secret.txt` (not granted).
fn layout() -> Layout {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let allowed = tmp.path().join("allowed");
    std::fs::create_dir(&allowed).ok();
    std::fs::write(allowed.join("inside.txt"), "inside").ok();
    let secret = tmp.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET").ok();
    Layout {
        allowed,
        secret,
        _tmp: tmp,
    }
}

fn policy(l: &Layout) -> String {
    format!("read = [{:?}]\n", l.allowed.display().to_string())
}

#[tokio::test]
async fn reads_outside_the_preopen_are_denied() {
    let l = layout();
    let (reg, _d) = with_policy("hostile", &policy(&l)).await;
    let inside = l.allowed.join("inside.txt");
    let ok = call(&reg, "read_path", json!({"path": inside})).await;
    assert_eq!(ok.output.map(|o| o.canonical).ok(), Some(json!("inside")));

    // 1. A plain path outside every preopen.
    let inv = call(&reg, "read_path", json!({"path": l.secret})).await;
    let e = err_text(&inv);
    assert!(!e.contains("TOP SECRET"), "{e}");
    still_works(&reg).await;

    // 2. `..` traversal out of the preopen.
    let dotdot = format!("{}/../secret.txt", l.allowed.display());
    let inv = call(&reg, "read_path", json!({"path": dotdot})).await;
    let e = err_text(&inv);
    assert!(!e.contains("TOP SECRET"), "{e}");
    still_works(&reg).await;

    // 3. A symlink inside the preopen pointing out of it (absolute and relative).
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&l.secret, l.allowed.join("abs_link")).ok();
        std::os::unix::fs::symlink("../secret.txt", l.allowed.join("rel_link")).ok();
        std::os::unix::fs::symlink("/etc", l.allowed.join("etc_link")).ok();
        for link in ["abs_link", "rel_link", "etc_link/hostname"] {
            let inv = call(&reg, "read_path", json!({"path": l.allowed.join(link)})).await;
            let e = err_text(&inv);
            assert!(!e.contains("TOP SECRET"), "{link}: {e}");
            still_works(&reg).await;
        }
    }
}

#[tokio::test]
async fn writes_and_truncates_under_a_read_only_grant_are_denied() {
    let l = layout();
    // The tools declare Write, but the policy only offers the folder read-only.
    let (reg, _d) = with_policy("hostile", &policy(&l)).await;
    let target = l.allowed.join("inside.txt");

    let inv = call(
        &reg,
        "write_path",
        json!({"path": target, "content": "pwned"}),
    )
    .await;
    err_text(&inv);
    assert_eq!(
        std::fs::read_to_string(&target).ok().as_deref(),
        Some("inside")
    );
    still_works(&reg).await;

    let inv = call(&reg, "truncate_path", json!({"path": target})).await;
    err_text(&inv);
    assert_eq!(
        std::fs::read_to_string(&target).ok().as_deref(),
        Some("inside")
    );
    still_works(&reg).await;

    // A new file cannot be created either.
    let fresh = l.allowed.join("new.txt");
    let inv = call(&reg, "write_path", json!({"path": fresh, "content": "x"})).await;
    err_text(&inv);
    assert!(!fresh.exists());
    still_works(&reg).await;
}

#[tokio::test]
async fn write_grant_needs_a_declared_write_and_then_works() {
    let l = layout();
    let policy = format!(
        "read = [{p:?}]\nwrite = [{p:?}]\n",
        p = l.allowed.display().to_string()
    );
    let (reg, _d) = with_policy("files", &policy).await;
    let target = l.allowed.join("out.txt");
    let inv = call(
        &reg,
        "write_file",
        json!({"path": target, "content": "hello"}),
    )
    .await;
    assert!(inv.is_ok(), "{}", inv.model_text());
    assert_eq!(
        std::fs::read_to_string(&target).ok().as_deref(),
        Some("hello")
    );
    let inv = call(&reg, "list_dir", json!({"path": l.allowed})).await;
    assert_eq!(
        inv.output.map(|o| o.canonical).ok(),
        Some(json!(["inside.txt", "out.txt"]))
    );
    // read_file declared only Read: its grant holds the folder read-only...
    let entry = reg
        .entry("read_file")
        .unwrap_or_else(|| panic!("no read_file"));
    assert_eq!(
        entry.permissions(),
        [toolhost_core::tools::Permission::Read]
    );
    // ...and the write outside the grant is still denied.
    let inv = call(
        &reg,
        "write_file",
        json!({"path": l.secret, "content": "x"}),
    )
    .await;
    err_text(&inv);
    assert_eq!(
        std::fs::read_to_string(&l.secret).ok().as_deref(),
        Some("TOP SECRET")
    );
}
