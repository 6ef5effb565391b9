//! `toolhost approve NAME [--yes] [--allow-downgrade]`: the operator grants what a plugin
//! (or an MCP server, `mcp:SERVER`) requests. Shows the request, the tools, their lint
//! findings, the release version and signer (verified from `NAME.wasm.minisig` and
//! `NAME.wasm.statement` beside it) and the diff against the lock, asks (or takes `--yes`),
//! then writes the lock atomically. Approving is the operator's word for a signer change;
//! a release that is not newer than the approved one (older, the same version with another
//! file, or unversioned after versioned) also needs `--allow-downgrade`. See
//! `docs/trust.md`, "Rollback and freeze".

use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use toolhost::trust::{Candidate, file_source};
use toolhost_trust::{DefStore, Lock};

/// Arguments of `toolhost approve`.
#[derive(Debug, Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The plugin (NAME of NAME.wasm in the plugins folder), or `mcp:SERVER` for the
    /// tools of a configured MCP server.
    pub name: String,
    /// Approve without asking (required when there is no terminal to ask on).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Accept a release that is not newer than the approved one: an older version (a
    /// rollback), the same version with another file, or an unversioned package after a
    /// versioned approval.
    #[arg(long)]
    pub allow_downgrade: bool,
}

/// Runs `toolhost approve`.
pub async fn run(args: ApproveArgs) -> anyhow::Result<ExitCode> {
    let config = super::common::load_config(&args.host)?;
    let dir = super::common::plugins_dir(&args.host, &config);
    if let Some(server) = args.name.strip_prefix("mcp:") {
        return super::mcp_trust::approve(&config, &dir, server, args.yes).await;
    }
    let name = super::common::plugin_name_arg(&args.name)?;
    let wasm = dir.join(format!("{name}.wasm"));
    if !wasm.is_file() {
        bail!(
            "no plugin {name} in {} (no {name}.wasm there)",
            dir.display()
        );
    }
    let lock_path = Lock::path_in(&dir);
    let mut lock = Lock::load(&lock_path)?;
    let store = DefStore::in_dir(&dir);
    let host = super::common::host(&args.host, &config, false)?;
    let cand = Candidate::load(&host, name, &wasm)
        .await
        .with_context(|| format!("loading {}", wasm.display()))?;
    print!("{}", cand.summary());
    super::lint::show_for_approval(
        &config,
        &super::lint::subjects(&format!("plugin:{name}"), &cand.tools),
    )
    .await;
    super::common::refuse_denied_folders(&config, name, &cand.request)?;
    let entry = lock.plugins.get(name);
    let request_bytes = match std::fs::read(toolhost::wasm::Policy::path_for(&wasm)) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).context("reading the request file"),
    };
    let signed = toolhost::trust::package_signature(
        name,
        &wasm,
        &cand.digest,
        request_bytes.as_deref(),
        &config.trust.keys,
    );
    let release = super::release::review(
        entry,
        &cand.digest,
        signed.as_ref().map(|s| s.signer.as_str()),
        signed.as_ref().and_then(|s| s.version.as_ref()),
    );
    print!("{}", release.text);
    if let Some(diff) = cand.diff(entry, &store) {
        if diff.is_empty() {
            println!("already approved as it is; nothing to do");
            return Ok(ExitCode::SUCCESS);
        }
        println!(
            "changes since the approval of {}:\n{diff}",
            entry.map(|e| e.approved_at.as_str()).unwrap_or("")
        );
    }
    if let Some(why) = release.refusal.filter(|_| !args.allow_downgrade) {
        bail!(
            "not approved: {why}; to accept this release deliberately: `toolhost approve {name} --allow-downgrade`"
        );
    }
    super::common::confirm(args.yes, &format!("approve plugin {name}?"))?;
    let source = match entry {
        Some(e) => e.source.clone(),
        None => file_source(&wasm),
    };
    let mut new_entry = match &signed {
        Some(s) => cand.entry(source, Some(s.signer.clone()), s.version.clone(), &store)?,
        None => cand.entry(source, None, None, &store)?,
    };
    // Without a signature over the package as it is now, a signature still covers what it
    // covered when the component is the signed one; a request that changed since is not
    // the signed request.
    if signed.is_none()
        && let Some(e) = entry
        && e.digest == cand.digest
        && e.signer.is_some()
    {
        new_entry.signer = e.signer.clone();
        new_entry.version = e.version.clone();
        new_entry.signature_covers = if e.grant == cand.request {
            e.signature_covers
        } else {
            Some(toolhost_trust::SignatureCovers::Component)
        };
    }
    lock.plugins.insert(name.to_string(), new_entry);
    lock.save(&lock_path)?;
    println!("approved {name}: {}", lock_path.display());
    Ok(ExitCode::SUCCESS)
}
