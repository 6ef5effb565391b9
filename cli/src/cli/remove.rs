//! `toolhost remove NAME`: deletes `NAME.wasm`, `NAME.toml` and the lock entry of a
//! plugin (the lock first, atomically, so a half-done removal never leaves a file
//! approved that the operator meant to drop).

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use toolhost_trust::Lock;

/// Arguments of `toolhost remove`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The plugin (NAME of NAME.wasm in the plugins folder).
    pub name: String,
}

/// Runs `toolhost remove`.
pub async fn run(args: RemoveArgs) -> anyhow::Result<ExitCode> {
    let config = super::common::load_config(&args.host)?;
    let dir = super::common::plugins_dir(&args.host, &config);
    let name = super::common::plugin_name_arg(&args.name)?;
    let lock_path = Lock::path_in(&dir);
    let mut lock = Lock::load(&lock_path)?;
    let mut removed = Vec::new();
    if lock.plugins.remove(name).is_some() {
        lock.save(&lock_path)?;
        removed.push(format!("the lock entry in {}", lock_path.display()));
    }
    for ext in ["wasm", "toml"] {
        let file = dir.join(format!("{name}.{ext}"));
        match std::fs::remove_file(&file) {
            Ok(()) => removed.push(file.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => bail!("cannot remove {}: {e}", file.display()),
        }
    }
    if removed.is_empty() {
        bail!("no plugin {name} in {}", dir.display());
    }
    println!("removed {name}: {}", removed.join(", "));
    Ok(ExitCode::SUCCESS)
}
