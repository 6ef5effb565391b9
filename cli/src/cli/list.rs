//! `toolhost list [--json]`: the tools of the plugins folder and configured MCP servers.
//!
//! The exit status is 1 when an enabled MCP server did not connect (the tools that did
//! load are still listed, and the reason is among the warnings), so scripts notice.

use std::process::ExitCode;

use clap::Args;

/// Arguments of `toolhost list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// Print JSON (name, description, parameters, permissions, risk, source) instead of a
    /// table.
    #[arg(long)]
    pub json: bool,
}

/// Runs `toolhost list`.
pub async fn run(args: ListArgs) -> anyhow::Result<ExitCode> {
    let (registry, problems, trust) = super::common::build_registry_with_trust(&args.host).await?;
    let entries = registry.entries();
    let needs_approval = |name: &str| {
        trust
            .plugins
            .iter()
            .any(|t| t.needs_approval.iter().any(|n| n == name))
    };
    if args.json {
        let tools: Vec<_> = entries
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name(),
                    "description": e.description(),
                    "parameters": e.parameters(),
                    "permissions": e.permissions().iter().map(|p| p.as_str().to_string()).collect::<Vec<_>>(),
                    "risk": format!("{:?}", e.risk()),
                    "source": e.source(),
                    "tags": e.tags(),
                    "needs_approval": needs_approval(e.name()),
                })
            })
            .collect();
        let problems: Vec<_> = problems
            .iter()
            .map(|p| serde_json::json!({"source": p.source, "message": p.message}))
            .collect();
        let plugins: Vec<_> = trust
            .plugins
            .iter()
            .map(|t| {
                let held = match &t.state {
                    toolhost::trust::TrustState::Held { reason, cause } => serde_json::json!({
                        "reason": reason, "cause": format!("{cause:?}").to_lowercase()}),
                    _ => serde_json::Value::Null,
                };
                serde_json::json!({"name": t.name, "state": t.state.label(),
                    "version": t.version.as_ref().map(ToString::to_string), "held": held,
                    "needs_approval": t.needs_approval, "withheld": t.withheld,
                    "needs_folder": t.missing_folder.iter().map(|(tool, why)| serde_json::json!({"tool": tool, "why": why})).collect::<Vec<_>>()})
            })
            .collect();
        let mcp: Vec<_> = trust
            .mcp_withheld
            .iter()
            .map(|w| {
                serde_json::json!({"server": w.server, "tool": w.tool,
                    "state": format!("{:?}", w.state).to_lowercase()})
            })
            .collect();
        println!(
            "{}",
            super::term::json(serde_json::to_string_pretty(
                &serde_json::json!({"tools": tools, "plugins": plugins, "mcp_withheld": mcp, "problems": problems})
            )?)
        );
        return Ok(exit_code(&trust));
    }
    if entries.is_empty() {
        println!("no tools (plugins folder and MCP servers gave none)");
        print_trust(&trust);
        return Ok(exit_code(&trust));
    }
    let width = entries
        .iter()
        .map(|e| e.name().len())
        .max()
        .unwrap_or(4)
        .max(4);
    let rows: Vec<_> = entries
        .iter()
        .map(|e| {
            let source = match e.source() {
                toolhost::tools::ToolSource::Wasm { path } => std::path::Path::new(path)
                    .file_name()
                    .map(|f| super::term::cell(&f.to_string_lossy()).into_owned())
                    .unwrap_or_else(|| "wasm".into()),
                toolhost::tools::ToolSource::Mcp { server } => {
                    format!("mcp:{}", super::term::cell(server))
                }
                other => other.kind().to_string(),
            };
            (e, source)
        })
        .collect();
    let swidth = rows.iter().map(|(_, s)| s.len()).max().unwrap_or(6).max(6);
    println!(
        "{:width$}  {:swidth$}  {:11}  DESCRIPTION",
        "TOOL", "SOURCE", "PERMISSIONS"
    );
    for (e, source) in &rows {
        let perms = e
            .permissions()
            .iter()
            .map(|p| p.as_str().to_string())
            .collect::<Vec<_>>()
            .join(",");
        println!(
            "{:width$}  {:swidth$}  {:11}  {}",
            super::term::cell(e.name()),
            source,
            if perms.is_empty() { "-".into() } else { perms },
            if needs_approval(e.name()) {
                format!("[needs approval] {}", super::term::cell(e.description()))
            } else {
                super::term::cell(e.description()).to_string()
            }
        );
    }
    print_trust(&trust);
    Ok(exit_code(&trust))
}

/// Failure when an enabled MCP server did not connect, after saying which.
fn exit_code(trust: &toolhost::host::Loaded) -> ExitCode {
    if trust.mcp_down.is_empty() {
        return ExitCode::SUCCESS;
    }
    let names: Vec<String> = trust
        .mcp_down
        .iter()
        .map(|s| super::term::cell(s).into_owned())
        .collect();
    eprintln!(
        "error: {} MCP server(s) did not connect: {} (see the warnings above)",
        names.len(),
        names.join(", ")
    );
    ExitCode::FAILURE
}

/// The trust state of each plugin, with its tools that need approval or are withheld.
fn print_trust(report: &toolhost::host::Loaded) {
    use toolhost::trust::clean;
    for w in &report.mcp_withheld {
        println!(
            "mcp:{}  tool {} withheld ({:?}): approve with `toolhost approve mcp:{}`",
            w.server,
            clean(&w.tool),
            w.state,
            w.server
        );
    }
    let trust = &report.plugins;
    if trust.is_empty() {
        return;
    }
    let width = trust.iter().map(|t| t.name.len()).max().unwrap_or(6).max(6);
    let versions: Vec<String> = trust
        .iter()
        .map(|t| toolhost_trust::version::shown(t.version.as_ref()))
        .collect();
    let vwidth = versions.iter().map(String::len).max().unwrap_or(7).max(7);
    println!(
        "\n{:width$}  {:10}  {:vwidth$}  NOTE",
        "PLUGIN", "TRUST", "VERSION"
    );
    for (t, version) in trust.iter().zip(&versions) {
        let mut notes = Vec::new();
        if !t.needs_approval.is_empty() {
            notes.push(format!(
                "needs approval: {}",
                clean(&t.needs_approval.join(", "))
            ));
        }
        if !t.withheld.is_empty() {
            notes.push(format!("withheld: {}", clean(&t.withheld.join(", "))));
        }
        if !t.missing_folder.is_empty() {
            let tools: Vec<&str> = t.missing_folder.iter().map(|(n, _)| n.as_str()).collect();
            notes.push(format!(
                "needs a folder that does not exist: {} (see the warning)",
                clean(&tools.join(", "))
            ));
        }
        if let toolhost::trust::TrustState::Held { reason, .. } = &t.state {
            notes.push(clean(reason));
        }
        if !t.loaded
            && t.withheld.is_empty()
            && t.needs_approval.is_empty()
            && t.state.label() == "unapproved"
        {
            notes.push("not loaded (require_approval = \"all\")".into());
        }
        let line = format!(
            "{:width$}  {:10}  {version:vwidth$}  {}",
            clean(&t.name),
            t.state.label(),
            notes.join("; ")
        );
        println!("{}", line.trim_end());
    }
}
