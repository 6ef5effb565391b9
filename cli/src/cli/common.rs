//! Shared wiring of the commands: find the plugins folder, read the config, build the
//! registry.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use toolhost::Host;
use toolhost::config::HostConfig;
use toolhost::host::Loaded;
use toolhost::loader::{LoadProblem, LoadProgress};
use toolhost::tools::ToolRegistry;
use toolhost::trust::{approve_hint, clean};
use toolhost_trust::McpToolState;

use super::HostArgs;

/// The plugins folder: `--plugins`, else `TOOLHOST_PLUGINS` (both through clap), else the
/// config file's `plugins`, else `<data dir>/toolhost/plugins`.
pub fn plugins_dir(args: &HostArgs, config: &HostConfig) -> PathBuf {
    if let Some(p) = &args.plugins {
        return p.clone();
    }
    if let Some(p) = &config.plugins.folder {
        return p.clone();
    }
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("toolhost")
        .join("plugins")
}

/// The skills folder: `--skills`, else `[serve] skills`; `None`: no skills.
pub fn skills_dir(args: &HostArgs, config: &HostConfig) -> Option<PathBuf> {
    args.skills.clone().or_else(|| config.serve.skills.clone())
}

/// An empty registry with the operator's `[permissions]` in force (policy and hooks,
/// toolhost's own files protected) and the remembered approvals of the data folder.
pub fn new_registry(args: &HostArgs, config: &HostConfig) -> anyhow::Result<ToolRegistry> {
    let approvals = toolhost::approvals::default_path();
    let data = approvals
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let registry = ToolRegistry::new()
        .with_approval_store(Arc::new(toolhost::approvals::FileApprovals::new(approvals)));
    let protected =
        toolhost::permissions::protected(&args.config, &plugins_dir(args, config), &data);
    config
        .permissions
        .install(&registry, &protected)
        .with_context(|| format!("in {}", args.config.display()))?;
    Ok(registry)
}

/// Reads the config (a missing default file is fine; a missing explicit one is an error).
pub fn load_config(args: &HostArgs) -> anyhow::Result<HostConfig> {
    let explicit = args.config.as_path() != std::path::Path::new("toolhost.toml");
    // A toolhost started (as a wrapped server) by a toolhost reading the same config
    // would start itself again without end: refused before anything starts.
    toolhost_mcp::nesting::enter(&args.config)?;
    HostConfig::load(&args.config, explicit).context("loading the host config")
}

/// The [`Host`] of a command that read `config` from `args.config`: toolhost's own state,
/// the config file and every credential file it names are ungrantable to plugin policies
/// ([`Host::protect_config`]). `long_lived` for `serve` ([`Host::long_lived`]).
pub fn host(args: &HostArgs, config: &HostConfig, long_lived: bool) -> anyhow::Result<Host> {
    let host = if long_lived {
        let spares = config
            .serve
            .spare_sandboxes
            .unwrap_or(toolhost::config::DEFAULT_SPARE_SANDBOXES);
        if spares > toolhost::config::MAX_SPARE_SANDBOXES {
            anyhow::bail!(
                "[serve] spare_sandboxes = {spares} in {}: at most {} (each holds one of the engine's instance slots)",
                args.config.display(),
                toolhost::config::MAX_SPARE_SANDBOXES
            );
        }
        Host::long_lived(spares)
    } else {
        Host::new()
    }
    .context("creating the wasm engine")?;
    host.protect_config(&args.config, config);
    Ok(host)
}

/// Builds the registry from the plugins folder and the config's MCP servers. Problems with
/// single plugins or servers are printed as warnings; the rest loads.
pub async fn build_registry(args: &HostArgs) -> anyhow::Result<(ToolRegistry, Vec<LoadProblem>)> {
    let (registry, problems, _) = build_registry_with_trust(args).await?;
    Ok((registry, problems))
}

/// [`build_registry`], also returning the trust decisions. Held plugins and withheld
/// tools are warned about with the command that approves them. Loads everything before
/// it returns, with a progress bar on a terminal when compiling takes a while.
pub async fn build_registry_with_trust(
    args: &HostArgs,
) -> anyhow::Result<(ToolRegistry, Vec<LoadProblem>, Loaded)> {
    let config = load_config(args)?;
    let host = host(args, &config, false)?;
    let registry = new_registry(args, &config)?;
    let progress = super::progress::Bar::for_stderr();
    let mut loaded = load_all(&host, &registry, args, &config, &progress).await;
    let problems = std::mem::take(&mut loaded.problems);
    Ok((registry, problems, loaded))
}

/// Loads the plugins folder and the config's MCP servers into `registry`
/// ([`Host::load`]) and prints the warnings: problems with single plugins or servers,
/// held plugins, withheld tools (with the command that approves them).
pub async fn load_all(
    host: &Host,
    registry: &ToolRegistry,
    args: &HostArgs,
    config: &HostConfig,
    progress: &dyn LoadProgress,
) -> Loaded {
    let dir = plugins_dir(args, config);
    let loaded = host.load(registry, &dir, config, progress).await;
    for p in &loaded.problems {
        eprintln!(
            "warning: {}: {}",
            super::term::cell(&p.source),
            super::term::text(&p.message)
        );
    }
    for w in loaded.plugins.iter().filter_map(|t| t.warning(&dir)) {
        eprintln!("warning: {w}");
    }
    for w in &loaded.mcp_withheld {
        let why = match w.state {
            McpToolState::Changed => "its definition changed since approval",
            _ => "it is not approved (require_approval = \"all\")",
        };
        eprintln!(
            "warning: mcp server {}: tool {} withheld: {why}; `{}`",
            w.server,
            clean(&w.tool),
            approve_hint(&format!("mcp:{}", w.server), &dir)
        );
    }
    loaded
}

/// Checks a plugin name given on the command line: a file stem, no path.
pub fn plugin_name_arg(name: &str) -> anyhow::Result<&str> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.ends_with(".wasm");
    if !ok {
        anyhow::bail!(
            "invalid plugin name {name:?}: give the NAME of NAME.wasm in the plugins folder"
        );
    }
    Ok(name)
}

/// Asks the operator to confirm on the terminal, unless `yes`. Without a terminal and
/// without `--yes`, refuses: an approval is never given by default.
pub fn confirm(yes: bool, question: &str) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "not approved: there is no terminal to ask on; review the above and pass --yes to approve"
        );
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => anyhow::bail!("not approved; nothing written"),
    }
}

/// Refuses to approve a plugin whose request names a folder the `deny_paths` rules forbid
/// (`~/.ssh`, `~/.aws`, ...), printing each refused entry with its rule. The argument
/// hook cannot see a path a plugin builds inside the guest, so such a folder is never
/// granted.
pub fn refuse_denied_folders(
    config: &HostConfig,
    name: &str,
    request: &toolhost_trust::Capabilities,
) -> anyhow::Result<()> {
    let refused = config
        .permissions
        .denied_folders(&request.read, &request.write)?;
    if refused.is_empty() {
        return Ok(());
    }
    for r in &refused {
        eprintln!("refused: {}", super::term::text(r));
    }
    anyhow::bail!(
        "not approved: the request of plugin {} names {} folder(s) that may never be granted (above); remove them from {}.toml",
        clean(name),
        refused.len(),
        clean(name)
    )
}
