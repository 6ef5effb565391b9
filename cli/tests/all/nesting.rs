//! toolhost started by toolhost: a wrapped server whose command is `toolhost serve
//! --stdio` with the same config as the toolhost that starts it would start itself again
//! without end. It refuses (the chain of configs in `TOOLHOST_SERVE_CHAIN`), the outer
//! toolhost reports that server failed and serves the rest, including another wrapped
//! toolhost with a config of its own, whose tool answers.
//!
//! The self-wrapping server is started through a script that counts its starts and gives
//! up after five, so a broken guard fails this test instead of filling the machine.

use std::process::Command;

use toolhost_testkit::{built_plugins, show, temp_dir};

#[test]
fn a_toolhost_that_would_wrap_itself_refuses_and_the_outer_one_serves_on() {
    let Some(built) = built_plugins(&["calc.wasm"]) else {
        return;
    };
    let bin = env!("CARGO_BIN_EXE_toolhost");
    let dir = temp_dir("nesting");
    let (empty, calc) = (dir.join("empty"), dir.join("calc"));
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::create_dir_all(&calc).unwrap();
    std::fs::copy(built.join("calc.wasm"), calc.join("calc.wasm")).unwrap();
    let config = dir.join("toolhost.toml");
    let other = dir.join("other.toml");
    std::fs::write(&other, "").unwrap();
    let starts = dir.join("starts");
    let script = dir.join("again.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho start >> '{starts}'\n\
             [ \"$(wc -l < '{starts}')\" -gt 5 ] && exit 1\n\
             exec '{bin}' serve --stdio --no-audit --plugins '{empty}' --config '{config}'\n",
            starts = starts.display(),
            empty = empty.display(),
            config = config.display(),
        ),
    )
    .unwrap();
    std::fs::write(
        &config,
        format!(
            "[mcp.servers.again]\ncommand = \"sh\"\nargs = [{script:?}]\n\n\
             [mcp.servers.other]\ncommand = {bin:?}\n\
             args = [\"serve\", \"--stdio\", \"--no-audit\", \"--plugins\", {calc:?}, \"--config\", {other:?}]\n\
             default_risk = \"read-only\"\n",
            script = script.display().to_string(),
            calc = calc.display().to_string(),
            other = other.display().to_string(),
        ),
    )
    .unwrap();
    let out = Command::new(bin)
        .current_dir(&dir)
        .args(["call", "--config"])
        .arg(&config)
        .arg("--plugins")
        .arg(&empty)
        .args(["add", r#"{"x": 2, "y": 3}"#])
        .env_remove("TOOLHOST_SERVE_CHAIN")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // The toolhost with a config of its own is served and its tool answers.
    assert!(out.status.success(), "{}", show(&out));
    assert!(stdout.contains('5'), "{stdout}");
    // The self-wrapping one was started once and refused, saying why.
    let started = std::fs::read_to_string(&starts).unwrap_or_default();
    assert_eq!(started.lines().count(), 1, "started {started:?}\n{stderr}");
    assert!(
        stderr.contains("would start itself again without end"),
        "{stderr}"
    );
}
