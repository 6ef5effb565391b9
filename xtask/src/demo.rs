//! `cargo xtask demo`: builds everything and runs toolhost on its built-in examples.

/// Runs the demo.
pub fn run() -> crate::Result {
    let dir = crate::plugins::build_all()?;
    crate::step("toolhost list");
    crate::run(
        std::process::Command::new(crate::cargo())
            .current_dir(crate::root())
            .args([
                "run",
                "--quiet",
                "-p",
                "toolhost",
                "--",
                "list",
                "--plugins",
            ])
            .arg(&dir),
    )
}
