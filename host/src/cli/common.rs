//! Shared wiring of the commands: find the plugins folder, read the config, build the
//! registry.

use std::path::PathBuf;

use anyhow::Context;
use toolhost::config::HostConfig;
use toolhost::loader::{LoadProblem, connect_mcp, load_plugins};
use toolhost::tools::ToolRegistry;

use super::HostArgs;

/// The plugins folder: `--plugins`, else `TOOLHOST_PLUGINS` (both through clap), else the
/// config file's `plugins`, else `<data dir>/toolhost/plugins`.
pub fn plugins_dir(args: &HostArgs, config: &HostConfig) -> PathBuf {
    if let Some(p) = &args.plugins {
        return p.clone();
    }
    if let Some(p) = &config.plugins {
        return p.clone();
    }
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("toolhost")
        .join("plugins")
}

/// Reads the config (a missing default file is fine; a missing explicit one is an error).
pub fn load_config(args: &HostArgs) -> anyhow::Result<HostConfig> {
    let explicit = args.config.as_path() != std::path::Path::new("toolhost.toml");
    HostConfig::load(&args.config, explicit).context("loading the host config")
}

/// Builds the registry from the plugins folder and the config's MCP servers. Problems with
/// single plugins or servers are printed as warnings; the rest loads.
pub async fn build_registry(args: &HostArgs) -> anyhow::Result<(ToolRegistry, Vec<LoadProblem>)> {
    let config = load_config(args)?;
    let registry = ToolRegistry::new();
    let dir = plugins_dir(args, &config);
    let mut problems = load_plugins(&registry, &dir).await;
    problems.extend(connect_mcp(&registry, &config).await);
    for p in &problems {
        eprintln!(
            "warning: {}: {}",
            super::term::cell(&p.source),
            super::term::text(&p.message)
        );
    }
    Ok((registry, problems))
}
