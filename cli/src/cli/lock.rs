//! `toolhost lock --check`: compares the plugins folder with its lock and prints each
//! disagreement: a plugin without lock entry (unapproved), a file whose digest differs
//! from the approved one, a request that asks for more than was approved, and a lock
//! entry without its file. Exits non-zero when there is any (for CI and deploy checks).

use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use toolhost::trust::{plugin_name, request_of};
use toolhost_trust::Lock;

/// Arguments of `toolhost lock`.
#[derive(Debug, Args)]
pub struct LockArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// Check that the folder and the lock agree; exit 1 if they do not.
    #[arg(long)]
    pub check: bool,
}

/// Runs `toolhost lock`.
pub async fn run(args: LockArgs) -> anyhow::Result<ExitCode> {
    if !args.check {
        bail!("nothing to do: use `toolhost lock --check`");
    }
    let config = super::common::load_config(&args.host)?;
    let host = super::common::host(&args.host, &config, false)?;
    let dir = super::common::plugins_dir(&args.host, &config);
    let lock = Lock::load(&Lock::path_in(&dir))?;
    let files = toolhost::wasm::folder::plugin_files(&dir)?;
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    for path in &files {
        let name = plugin_name(path);
        seen.push(name.clone());
        let Some(entry) = lock.plugins.get(&name) else {
            problems.push(format!(
                "unapproved: {} has no lock entry (`toolhost approve {name}`)",
                path.display()
            ));
            continue;
        };
        let bytes = std::fs::read(path)?;
        let digest = toolhost_trust::canon::sha256(&bytes);
        if digest != entry.digest {
            problems.push(format!(
                "digest differs: {} is {digest}, the lock approved {} (version {}, signer {})",
                path.display(),
                entry.digest,
                toolhost_trust::version::shown(entry.version.as_ref()),
                entry.signer.as_deref().unwrap_or("none")
            ));
        }
        let protected = host.engine().protected_paths();
        match toolhost::wasm::Policy::for_component_protected(path, &protected) {
            Ok(policy) => {
                let excess = request_of(&policy).excess(&entry.grant);
                if !excess.is_empty() {
                    problems.push(format!(
                        "request exceeds approval: {name} asks for {} (not granted until approved)",
                        toolhost::trust::clean(&excess.join(", "))
                    ));
                }
            }
            Err(e) => problems.push(format!("invalid request: {e}")),
        }
    }
    for name in lock.plugins.keys() {
        if !seen.contains(name) {
            problems.push(format!(
                "missing file: the lock approves {name} but {} does not exist",
                dir.join(format!("{name}.wasm")).display()
            ));
        }
    }
    for p in &problems {
        println!("{p}");
    }
    if problems.is_empty() {
        println!(
            "ok: {} plugin(s) in {} agree with the lock",
            files.len(),
            dir.display()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}
