//! The wall time of every step of a long task (`cargo xtask test`, `cargo xtask demo`),
//! printed as a table when the task ends, whether it passed or failed, so that the cost of
//! each addition to CI is visible in its log.
//!
//! A step starts at each [`crate::step`] header and ends where the next one starts. For
//! `cargo test`, [`run_cargo_test`] also starts a step at each test binary cargo runs
//! (its `Running …` and `Doc-tests …` lines), so the table has a row per test binary.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Step names and when each started, in order.
static MARKS: Mutex<Vec<(String, Instant)>> = Mutex::new(Vec::new());

/// Work done on another thread while the steps ran: name and duration, listed apart
/// (their time is inside the steps' own).
static OVERLAPPED: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());

/// Records work that ran in the background of the steps for `took`.
pub fn overlapped(name: &str, took: Duration) {
    if let Ok(mut o) = OVERLAPPED.lock() {
        o.push((name.to_string(), took));
    }
}

/// Starts a new step (ending the one before).
pub fn mark(name: &str) {
    if let Ok(mut m) = MARKS.lock() {
        m.push((name.to_string(), Instant::now()));
    }
}

/// Each step with its duration, in order; the last one ends now.
pub fn durations() -> Vec<(String, Duration)> {
    let now = Instant::now();
    let Ok(m) = MARKS.lock() else {
        return Vec::new();
    };
    m.iter()
        .enumerate()
        .map(|(i, (name, start))| {
            let end = m.get(i + 1).map(|(_, t)| *t).unwrap_or(now);
            (name.clone(), end.saturating_duration_since(*start))
        })
        .collect()
}

/// `12m 03s`, `41.2s`, `0.3s`.
fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 60.0 {
        let whole = d.as_secs();
        format!("{}m {:02}s", whole / 60, whole % 60)
    } else {
        format!("{s:.1}s")
    }
}

/// The table of [`durations`] with a total, as printed at the end of a task.
pub fn table(title: &str) -> String {
    let rows = durations();
    let total: Duration = rows.iter().map(|(_, d)| *d).sum();
    let width = 72;
    let mut out = format!("\n==> {title}: wall time of each step\n");
    for (name, d) in &rows {
        let mut name: String = name.chars().take(width).collect();
        if name.chars().count() == width {
            name.push('…');
        }
        out.push_str(&format!("  {:>9}  {name}\n", human(*d)));
    }
    out.push_str(&format!("  {:>9}  total\n", human(total)));
    if let Ok(o) = OVERLAPPED.lock() {
        for (name, d) in o.iter() {
            out.push_str(&format!("  {:>9}  (overlapped) {name}\n", human(*d)));
        }
    }
    out
}

/// Runs `cmd` (a `cargo test` command) with its stderr read line by line: each line is
/// passed on to our stderr, and each `Running …` / `Doc-tests …` line cargo prints
/// before a test binary starts a step named after that binary. Stdout is passed through
/// untouched.
pub fn run_cargo_test(cmd: &mut Command) -> crate::Result {
    let desc = format!("{cmd:?}");
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {desc}: {e}"))?;
    if let Some(stderr) = child.stderr.take() {
        let mut err = std::io::stderr();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let t = line.trim_start();
            if let Some(rest) = t.strip_prefix("Running ") {
                mark(&format!("test {}", binary_name(rest)));
            } else if let Some(rest) = t.strip_prefix("Doc-tests ") {
                mark(&format!("doc-tests {rest}"));
            }
            let _ = writeln!(err, "{line}");
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("{desc} could not be waited for: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{desc} failed with {status}"))
    }
}

/// `unittests src/lib.rs (target/debug/deps/toolhost_core-0123abcd)` →
/// `toolhost_core (unittests src/lib.rs)`; `tests/all/main.rs (target/debug/deps/all-…)`
/// → `all (tests/all/main.rs)`.
fn binary_name(running: &str) -> String {
    let (what, path) = match running.rsplit_once(" (") {
        Some((what, path)) => (what, path.trim_end_matches(')')),
        None => return running.to_string(),
    };
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = match file.rsplit_once('-') {
        Some((stem, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => stem,
        _ => file,
    };
    format!("{stem} ({what})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_names_drop_the_hash_and_keep_the_source() {
        assert_eq!(
            binary_name("unittests src/lib.rs (target/debug/deps/toolhost_core-0123abcd)"),
            "toolhost_core (unittests src/lib.rs)"
        );
        assert_eq!(
            binary_name("tests/serve.rs (target/debug/deps/serve-fe01)"),
            "serve (tests/serve.rs)"
        );
        assert_eq!(binary_name("odd line"), "odd line");
    }

    #[test]
    fn durations_follow_the_marks_in_order() {
        mark("a");
        std::thread::sleep(Duration::from_millis(20));
        mark("b");
        let d = durations();
        let a = d.iter().position(|(n, _)| n == "a");
        let b = d.iter().position(|(n, _)| n == "b");
        assert!(a < b, "{d:?}");
        let a_time = a.map(|i| d[i].1).unwrap_or_default();
        assert!(a_time >= Duration::from_millis(20), "{d:?}");
        assert!(table("t").contains("total"));
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(300)), "0.3s");
        assert_eq!(human(Duration::from_secs(723)), "12m 03s");
    }
}
