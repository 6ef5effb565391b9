//! The operator console in a real browser: `cli/tests/browser/console.py` drives headless
//! Chromium (Debian) through ChromeDriver with the selenium client (PyPI) against a real
//! `serve --console` on the set-up of `console.rs`: log in, see the sources, approve the
//! held plugin and watch its state change, see a live call appear, filter the audit trail,
//! open a record; on every page the hostile component's markup and a hostile argument
//! are text and never run. Screenshots of each page go to `target/console-screenshots/`.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use super::console::Work;

#[test]
fn an_operator_reviews_approves_and_watches_in_chromium() {
    let Some(browser) = toolhost_testkit::peers::browser() else {
        return;
    };
    let work = Work::new();
    let (serve, admin) = work.serve(&[]);
    let root = toolhost_testkit::workspace_root();
    let shots = root.join("target").join("console-screenshots");
    let out = Command::new(&browser.python)
        .arg(root.join("cli/tests/browser/console.py"))
        .arg(format!("http://{admin}"))
        .arg(&work.token_file)
        .arg(&serve.url)
        .arg(&shots)
        .env("TOOLHOST_CHROMIUM", &browser.chromium)
        .env("TOOLHOST_CHROMEDRIVER", &browser.chromedriver)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().last() == Some("OK"),
        "the browser run failed ({}):\n{stdout}\n{}\n--- serve:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
    // Each step's time and each page's weight, for the log (docs/benchmarks.md, "Console").
    for line in stdout
        .lines()
        .filter(|l| l.starts_with("metric:") || l.starts_with("step:"))
    {
        eprintln!("{line}");
    }
    for page in [
        "login",
        "sources",
        "pending",
        "approved",
        "live",
        "audit",
        "audit-record",
        "clients",
    ] {
        let png = shots.join(format!("{page}.png"));
        let bytes = std::fs::read(&png).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 5_000,
            "{}",
            png.display()
        );
    }
}
