//! `cargo xtask demo`: builds everything and shows toolhost at work on its examples:
//! lists the tools, calls them, and shows escape attempts denied with their errors.

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

/// Runs the demo.
pub fn run() -> crate::Result {
    let dir = crate::plugins::build_all()?;
    let d = dir.as_path();
    crate::run(
        Command::new(crate::cargo())
            .current_dir(crate::root())
            .args(["build", "--quiet", "-p", "toolhost"]),
    )?;

    crate::step("toolhost list");
    crate::run(&mut toolhost(d, &["list"]))?;

    crate::step("toolhost inspect files.wasm (declared permissions ∩ files.toml)");
    let files = dir.join("files.wasm");
    crate::run(&mut toolhost(d, &["inspect", &files.to_string_lossy()]))?;

    crate::step("toolhost call add '{\"x\": 1, \"y\": 2}'");
    crate::run(&mut toolhost(d, &["call", "add", r#"{"x": 1, "y": 2}"#]))?;

    crate::step("toolhost call mean '{\"values\": [1, 2, 3, 4]}'");
    crate::run(&mut toolhost(
        d,
        &["call", "mean", r#"{"values": [1, 2, 3, 4]}"#],
    ))?;

    let inside = dir.join("data").join("files").join("hello.txt");
    let args = format!(r#"{{"path": {:?}}}"#, inside.to_string_lossy());
    crate::step(&format!(
        "toolhost call read_file '{args}'  (inside the granted folder)"
    ));
    crate::run(&mut toolhost(d, &["call", "read_file", &args]))?;

    crate::step("toolhost call read_file '{\"path\": \"/etc/passwd\"}'  (escape attempt)");
    expect_denied(&mut toolhost(
        d,
        &["call", "read_file", r#"{"path": "/etc/passwd"}"#],
    ))?;

    let dotdot = format!(
        r#"{{"path": "{}/../../Cargo.toml"}}"#,
        dir.to_string_lossy()
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
        r#"{{"path": "{}/calc.toml", "content": "pwned"}}"#,
        dir.to_string_lossy()
    );
    crate::step("toolhost call write_file ...  (the policy grants no write folder)");
    expect_denied(&mut toolhost(d, &["call", "write_file", &write]))?;

    crate::step(
        "toolhost call http_get '{\"url\": \"http://169.254.169.254/latest/meta-data\"}'  (not on the allowlist)",
    );
    expect_denied(&mut toolhost(
        d,
        &[
            "call",
            "http_get",
            r#"{"url": "http://169.254.169.254/latest/meta-data"}"#,
        ],
    ))?;
    Ok(())
}
