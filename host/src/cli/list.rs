//! `toolhost list [--json]`: the tools of the plugins folder and configured MCP servers.

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
    let (registry, problems) = super::common::build_registry(&args.host).await?;
    let entries = registry.entries();
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
                })
            })
            .collect();
        let problems: Vec<_> = problems
            .iter()
            .map(|p| serde_json::json!({"source": p.source, "message": p.message}))
            .collect();
        println!(
            "{}",
            super::term::json(serde_json::to_string_pretty(
                &serde_json::json!({"tools": tools, "problems": problems})
            )?)
        );
        return Ok(ExitCode::SUCCESS);
    }
    if entries.is_empty() {
        println!("no tools (plugins folder and MCP servers gave none)");
        return Ok(ExitCode::SUCCESS);
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
            super::term::cell(e.description())
        );
    }
    Ok(ExitCode::SUCCESS)
}
