//! `cargo xtask demo`: builds everything and shows toolhost at work on its examples:
//! lists the tools, shows an unapproved plugin refused until the operator approves it,
//! calls the tools, and shows escape attempts denied with their errors.

use std::path::Path;
use std::process::Command;

fn toolhost(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(crate::cargo());
    cmd.current_dir(crate::root())
        .args(["run", "--quiet", "-p", "toolhost", "--"])
        .args(args)
        .arg("--plugins")
        .arg(dir);
    cmd
}

/// Runs a command that is expected to fail (a denied call); fails if it succeeds.
fn expect_denied(cmd: &mut Command) -> crate::Result {
    let desc = format!("{cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {desc}: {e}"))?;
    if status.success() {
        Err(format!(
            "{desc} succeeded, but the sandbox should have denied it"
        ))
    } else {
        eprintln!(
            "    (exit code {}: denied as expected)",
            status.code().unwrap_or(-1)
        );
        Ok(())
    }
}

/// A fresh demo plugins folder (no lock yet) with the example plugins and their requests
/// copied from the build, and a file to read in `data/files/` (the folder files.toml requests).
fn demo_folder(built: &Path) -> Result<std::path::PathBuf, String> {
    let dir = crate::root().join("target").join("demo-plugins");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("data/files"))
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for name in ["calc", "files", "fetch"] {
        for ext in ["wasm", "toml"] {
            let from = built.join(format!("{name}.{ext}"));
            if from.is_file() {
                std::fs::copy(&from, dir.join(format!("{name}.{ext}")))
                    .map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
            }
        }
    }
    std::fs::write(
        dir.join("data/files/hello.txt"),
        "hello from the granted folder\n",
    )
    .map_err(|e| format!("cannot write the demo file: {e}"))?;
    Ok(dir)
}

/// Runs the demo.
pub fn run() -> crate::Result {
    let built = crate::plugins::build_all()?;
    let dir = demo_folder(&built)?;
    let d = dir.as_path();
    crate::run(
        Command::new(crate::cargo())
            .current_dir(crate::root())
            .args(["build", "--quiet", "-p", "toolhost"]),
    )?;

    crate::step("toolhost list  (nothing approved yet: every plugin is `unapproved`)");
    crate::run(&mut toolhost(d, &["list"]))?;

    crate::step("toolhost inspect files.wasm (declared permissions ∩ files.toml)");
    let files = dir.join("files.wasm");
    crate::run(&mut toolhost(d, &["inspect", &files.to_string_lossy()]))?;

    crate::step("toolhost call add '{\"x\": 1, \"y\": 2}'  (pure compute works unapproved)");
    crate::run(&mut toolhost(d, &["call", "add", r#"{"x": 1, "y": 2}"#]))?;

    let inside = dir.join("data/files/hello.txt");
    let args = format!(r#"{{"path": {:?}}}"#, inside.to_string_lossy());
    crate::step(&format!(
        "toolhost call read_file '{args}'  (files is unapproved: refused, with the approve command)"
    ));
    expect_denied(&mut toolhost(d, &["call", "read_file", &args]))?;

    crate::step("toolhost approve files --yes  (the operator grants what files.toml requests)");
    crate::run(&mut toolhost(d, &["approve", "files", "--yes"]))?;

    crate::step("toolhost call mean '{\"values\": [1, 2, 3, 4]}'");
    crate::run(&mut toolhost(
        d,
        &["call", "mean", r#"{"values": [1, 2, 3, 4]}"#],
    ))?;

    crate::step(&format!(
        "toolhost call read_file '{args}'  (inside the approved folder)"
    ));
    crate::run(&mut toolhost(d, &["call", "read_file", &args]))?;

    crate::step("toolhost list  (files is `approved`)");
    crate::run(&mut toolhost(d, &["list"]))?;

    crate::step("toolhost call read_file '{\"path\": \"/etc/passwd\"}'  (escape attempt)");
    expect_denied(&mut toolhost(
        d,
        &["call", "read_file", r#"{"path": "/etc/passwd"}"#],
    ))?;

    let dotdot = format!(
        r#"{{"path": "{}/../../Cargo.toml"}}"#,
        dir.join("data/files").to_string_lossy()
    );
    crate::step(&format!(
        "toolhost call read_file '{dotdot}'  (.. traversal)"
    ));
    expect_denied(&mut toolhost(d, &["call", "read_file", &dotdot]))?;

    let plugin_file = dir.join("calc.toml");
    let args = format!(r#"{{"path": {:?}}}"#, plugin_file.to_string_lossy());
    crate::step(&format!(
        "toolhost call read_file '{args}'  (the plugins folder is never grantable)"
    ));
    expect_denied(&mut toolhost(d, &["call", "read_file", &args]))?;

    let write = format!(
        r#"{{"path": "{}/data/files/hello.txt", "content": "pwned"}}"#,
        dir.to_string_lossy()
    );
    crate::step(
        "toolhost call write_file ...  (the default [permissions] policy allows read and network only; nor does the grant have a write folder)",
    );
    expect_denied(&mut toolhost(d, &["call", "write_file", &write]))?;

    crate::step("toolhost approve fetch --yes");
    crate::run(&mut toolhost(d, &["approve", "fetch", "--yes"]))?;
    crate::step(
        "toolhost call http_get '{\"url\": \"http://169.254.169.254/latest/meta-data\"}'  (a cloud metadata address: the default deny_hosts hook stops it, and it is not on the allowlist either)",
    );
    expect_denied(&mut toolhost(
        d,
        &[
            "call",
            "http_get",
            r#"{"url": "http://169.254.169.254/latest/meta-data"}"#,
        ],
    ))?;
    crate::step(
        "toolhost call http_get '{\"url\": \"http://127.0.0.1:9/\"}'  (not on the plugin's network allowlist: the sandbox refuses)",
    );
    expect_denied(&mut toolhost(
        d,
        &["call", "http_get", r#"{"url": "http://127.0.0.1:9/"}"#],
    ))?;

    crate::step(
        "toolhost approve calc --yes  (pure compute, approved so the lock covers the folder)",
    );
    crate::run(&mut toolhost(d, &["approve", "calc", "--yes"]))?;

    crate::step("toolhost lock --check  (the folder and its lock agree)");
    crate::run(&mut toolhost(d, &["lock", "--check"]))?;
    Ok(())
}
