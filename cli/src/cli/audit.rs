//! The audit trail of the commands (`docs/permissions.md`, "Audit trail"): the
//! `--audit FILE` / `--no-audit` flags and attaching an [`AuditLog`] on a rotating file to
//! the registry. `serve` and `chat` write the trail by default (calls made by models and
//! MCP clients); `call` only with `--audit FILE` (the operator at the terminal sees the
//! result). Nothing is printed to stdout: `serve --stdio`'s stdout is protocol only.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use toolhost::config::AuditConfig;
use toolhost::tools::ToolRegistry;
use toolhost::tools::audit::{AuditLog, RotatingFile};

/// The audit flags of `serve` and `chat`.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// Write the audit trail (one JSON line per tool call) to FILE instead of
    /// <data dir>/toolhost/audit.jsonl ($XDG_DATA_HOME/toolhost/audit.jsonl).
    #[arg(long, value_name = "FILE", conflicts_with = "no_audit")]
    pub audit: Option<PathBuf>,
    /// Write no audit trail.
    #[arg(long)]
    pub no_audit: bool,
}

/// The default file: `<data dir>/toolhost/audit.jsonl`.
pub fn default_path() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("toolhost").join("audit.jsonl"))
}

/// Attaches the audit trail of a command that writes one by default (`serve`, `chat`):
/// `--no-audit` or `[audit] enabled = false` (without `--audit`) turn it off; `--audit
/// FILE`, else `[audit] path`, else [`default_path`]. Returns the file written to.
///
/// A file the operator named (flag or config) that cannot be opened is an error; the
/// default file is a warning on stderr, and the command runs without a trail. The
/// writer is returned too (the console writes its actions with it).
pub fn attach_default(
    registry: &ToolRegistry,
    args: &AuditArgs,
    config: &AuditConfig,
) -> anyhow::Result<Option<(PathBuf, Arc<AuditLog>)>> {
    if args.no_audit || (args.audit.is_none() && !config.enabled) {
        return Ok(None);
    }
    let named = args.audit.clone().or_else(|| config.path.clone());
    if let Some(path) = named {
        return attach(registry, path, config).map(Some);
    }
    let Some(path) = default_path() else {
        tracing::warn!("no data folder on this system: no audit trail (pass --audit FILE)");
        return Ok(None);
    };
    match attach(registry, path, config) {
        Ok(p) => Ok(Some(p)),
        Err(e) => {
            eprintln!(
                "warning: no audit trail: {}",
                super::term::text(&format!("{e:#}"))
            );
            Ok(None)
        }
    }
}

/// Attaches the audit trail writing to `path` (rotated at `config.max_bytes`, keeping
/// `config.keep` old files).
pub fn attach(
    registry: &ToolRegistry,
    path: PathBuf,
    config: &AuditConfig,
) -> anyhow::Result<(PathBuf, Arc<AuditLog>)> {
    let file = RotatingFile::open(&path, config.max_bytes, config.keep).with_context(|| {
        format!(
            "cannot open the audit file {}; pass --audit FILE for another place or --no-audit",
            path.display()
        )
    })?;
    let log = Arc::new(AuditLog::new(file));
    registry.add_listener(log.clone());
    tracing::info!(path = %path.display(), "audit trail: one record per tool call");
    Ok((path, log))
}
