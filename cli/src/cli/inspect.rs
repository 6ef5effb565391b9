//! `toolhost inspect FILE.wasm`: the plugin world version it implements (the one its SDK
//! was built against), tools, schemas, declared permissions, imports and the effective
//! policy of one component (declared ∩ its `NAME.toml`). For a plain WIT component (its
//! tools derived from its exported functions) it also says so, and lists each exported
//! function that is not a tool, with why. The `wasi:config/store` keys its request asks
//! for are shown with whether the operator gave each (`[plugins.NAME.config]`) and from
//! which source, never a value.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

/// Arguments of `toolhost inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The component file.
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `toolhost inspect`.
pub async fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let engine = toolhost::Host::new()?.engine().clone();
    let progress = super::progress::Bar::for_stderr();
    let file = args.file.clone();
    let plugin = super::progress::load_one(&progress, &args.file, async move {
        toolhost::wasm::Plugin::load(&engine, &file).await
    })
    .await?
    .with_context(|| format!("cannot load {}", args.file.display()))?;
    drop(progress);
    let config = super::common::load_config(&args.host)?;
    let sources = config
        .plugins
        .sources(&toolhost::trust::plugin_name(&args.file));
    let policy = plugin.policy();
    // Requested keys, then keys given but not asked for (which the plugin never sees).
    let config_json: Vec<serde_json::Value> = policy
        .caps
        .config
        .iter()
        .map(|k| (k, true))
        .chain(
            sources
                .keys()
                .filter(|k| !policy.caps.config.contains(k))
                .map(|k| (k, false)),
        )
        .map(|(key, requested)| {
            serde_json::json!({
                "key": key, "requested": requested,
                "given": sources.contains_key(key),
                "source": sources.get(key).map(toolhost_core::secrets::SecretSource::describe),
            })
        })
        .collect();
    let policy_json = serde_json::json!({
        "file": policy.file.as_ref().map(|f| f.display().to_string()),
        "read": policy.caps.read, "write": policy.caps.write,
        "network": policy.caps.network,
        "sockets": policy.caps.sockets, "env": policy.caps.env, "config": policy.caps.config,
        "timeout_ms": policy.caps.timeout_ms, "fuel": policy.caps.fuel,
        "memory_mb": policy.caps.memory_mb, "output_kb": policy.caps.output_kb,
    });
    let tools: Vec<_> = plugin
        .tools()
        .iter()
        .map(|t| {
            let s = t.spec();
            let g = t.grant();
            serde_json::json!({
                "name": s.name, "description": s.description, "parameters": s.parameters,
                "permissions": s.permissions.iter().map(|p| p.as_str().to_string()).collect::<Vec<_>>(),
                "tags": s.tags,
                "grant": {
                    "read": g.caps.read, "write": g.caps.write, "network": g.caps.network,
                    "sockets": g.caps.sockets, "env": g.caps.env, "withheld": g.withheld,
                },
            })
        })
        .collect();
    let imports = plugin
        .imports()
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    let world = if plugin.is_plain_wit() {
        "none (plain WIT exports)".to_string()
    } else {
        plugin
            .world_version()
            .map(|v| format!("toolhost:tool@{v}"))
            .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?
    };
    // The release as the files claim it (unverified here: `approve` and `list` verify the
    // signature against the trusted keys): the component's own `version` metadata, and
    // the package statement beside it.
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let metadata_version = toolhost_dist::component_version(&bytes)
        .map(|v| v.map(|v| v.to_string()))
        .unwrap_or_else(|e| Some(format!("(unreadable: {e})")));
    let statement_path = toolhost_dist::statement_path(&args.file);
    let statement = match std::fs::read_to_string(&statement_path) {
        Ok(text) => Some(
            toolhost_dist::Statement::parse(&text)
                .map(|s| toolhost_trust::version::shown(s.version.as_ref()))
                .unwrap_or_else(|e| format!("(malformed: {e})")),
        ),
        Err(_) => None,
    };
    if args.json {
        let doc = serde_json::json!({
            "file": args.file.display().to_string(),
            "metadata_version": metadata_version,
            "statement_version": statement,
            "world": world,
            "kind": if plugin.is_plain_wit() { "plain-wit" } else { "tool-world" },
            "not_tools": plugin.refused_exports(),
            "imports": imports,
            "policy": policy_json,
            "config": config_json,
            "tools": tools,
        });
        println!("{}", super::term::json(serde_json::to_string_pretty(&doc)?));
        return Ok(ExitCode::SUCCESS);
    }
    println!("component: {}", args.file.display());
    println!("world: {world}");
    println!(
        "version: {} (component metadata); {} (package statement {}, unverified here)",
        super::term::cell(metadata_version.as_deref().unwrap_or("none")),
        super::term::cell(statement.as_deref().unwrap_or("none")),
        statement_path.display()
    );
    if plugin.is_plain_wit() {
        println!(
            "kind: plain WIT component (each exported function is a tool; see docs/writing-plugins.md)"
        );
        if !plugin.refused_exports().is_empty() {
            println!("not tools:");
            for why in plugin.refused_exports() {
                println!("  {}", super::term::cell(why));
            }
        }
    }
    println!("imports:");
    for i in imports {
        println!("  {}", super::term::cell(&i.to_string()));
    }
    println!(
        "policy: {}",
        super::term::json(serde_json::to_string(&policy_json)?)
    );
    if !config_json.is_empty() {
        println!("config (wasi:config/store; values never shown):");
        for c in &config_json {
            let key = c["key"].as_str().unwrap_or_default();
            let state = match (c["requested"].as_bool(), c["source"].as_str()) {
                (Some(true), Some(src)) => format!("requested, given from {src}"),
                (Some(true), None) => {
                    "requested, not given (the plugin reads it as absent)".to_string()
                }
                (_, src) => format!(
                    "given from {}, not requested (the plugin never sees it)",
                    src.unwrap_or("?")
                ),
            };
            println!(
                "  {}: {}",
                super::term::cell(key),
                super::term::cell(&state)
            );
        }
    }
    for t in &tools {
        println!(
            "\ntool {}",
            super::term::cell(t["name"].as_str().unwrap_or_default())
        );
        println!(
            "  description: {}",
            super::term::cell(t["description"].as_str().unwrap_or_default())
        );
        println!(
            "  permissions: {}",
            super::term::json(t["permissions"].to_string())
        );
        println!(
            "  parameters:  {}",
            super::term::json(t["parameters"].to_string())
        );
        println!(
            "  grant:       {}",
            super::term::json(t["grant"].to_string())
        );
    }
    Ok(ExitCode::SUCCESS)
}
