//! Subcommands, one module each.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub mod approvals;
pub mod approve;
pub mod approver;
pub mod audit;
pub mod call;
pub mod chat;
pub mod common;
pub mod completions;
pub mod console;
pub mod elicit;
pub mod eval;
pub mod inspect;
pub mod install;
pub mod judge;
pub mod lint;
pub mod list;
pub mod lock;
pub mod mcp;
pub mod mcp_trust;
pub mod new;
pub mod plugin_config;
pub mod progress;
pub mod publish;
pub use toolhost::trust::release;
pub mod remove;
pub mod serve;
pub mod servers;
pub mod skill_trust;
pub mod term;

/// toolhost: run sandboxed WebAssembly tools, MCP tools and native tools for LLMs.
#[derive(Debug, Parser)]
#[command(name = "toolhost", version = version_text(), about, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace). RUST_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// Where tools come from; shared by every command that builds a registry.
#[derive(Debug, Clone, Args)]
pub struct HostArgs {
    /// The plugins folder (default: $TOOLHOST_PLUGINS, else the platform data dir).
    #[arg(long, global = true, env = "TOOLHOST_PLUGINS")]
    pub plugins: Option<PathBuf>,
    /// The host config file (MCP servers, defaults).
    #[arg(long, global = true, default_value = "toolhost.toml")]
    pub config: PathBuf,
    /// The skills folder `serve` offers and `approve skill:NAME` reads (default:
    /// `[serve] skills` of the config; without either, no skills).
    #[arg(long, global = true, env = "TOOLHOST_SKILLS")]
    pub skills: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the tools of the plugins folder and configured MCP servers.
    List(list::ListArgs),
    /// Review every tool definition (descriptions, hidden text, poisoning, names,
    /// schemas); exits 1 on errors.
    Lint(lint::LintArgs),
    /// Call one tool with JSON arguments and print its result.
    Call(call::CallArgs),
    /// Show what a .wasm component provides, imports and would be granted.
    Inspect(inspect::InspectArgs),
    /// Serve every tool as an MCP server (stdio or Streamable HTTP).
    Serve(serve::ServeArgs),
    /// Chat with a model (OpenAI-compatible or Anthropic) that can call the tools.
    Chat(chat::ChatArgs),
    /// Replay tool-selection cases (CASES.toml) against a model; exit 1 on a failure.
    Eval(eval::EvalArgs),
    /// Scaffold a new plugin from a template.
    New(new::NewArgs),
    /// Approve what a plugin (or `mcp:SERVER`) requests: writes the lock.
    Approve(approve::ApproveArgs),
    /// Fetch, verify, show and approve a plugin, then write it into the plugins folder.
    Install(install::InstallArgs),
    /// Fetch the recorded source of installed plugins again, show the diff, approve.
    Update(install::UpdateArgs),
    /// Delete a plugin: NAME.wasm, NAME.toml and its lock entry.
    Remove(remove::RemoveArgs),
    /// Check that the plugins folder and its lock agree (`--check`).
    Lock(lock::LockArgs),
    /// Push a component (with its request file and signature) to an OCI registry.
    /// (`publish --version` is the release version; `toolhost --version` is toolhost's.)
    #[command(disable_version_flag = true)]
    Publish(publish::PublishArgs),
    /// Log in to (or out of) an MCP server that asks for OAuth: `mcp login NAME`.
    Mcp(mcp::McpArgs),
    /// List, add or revoke the remembered "allow always" decisions of destructive tools.
    Approvals(approvals::ApprovalsArgs),
    /// Give plugins their `wasi:config/store` values: `config set|unset|list`.
    Config(plugin_config::ConfigArgs),
    /// Print a shell completion script: `toolhost completions bash > ~/.local/share/bash-completion/completions/toolhost`.
    Completions(completions::CompletionsArgs),
}

/// What `toolhost --version` prints after the name: the host's version, the versions of
/// the plugin world it links, and the wasmtime release that runs them.
fn version_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let worlds: Vec<String> = toolhost_wasm::WORLD_VERSIONS
            .iter()
            .map(|v| format!("toolhost:tool@{v}"))
            .collect();
        format!(
            "{}\nWIT worlds: {}\nwasmtime {}",
            env!("CARGO_PKG_VERSION"),
            worlds.join(", "),
            toolhost_wasm::WASMTIME_VERSION
        )
    })
}

impl Cli {
    /// How many tokio worker threads the command wants: `Some(1)` means a current-thread
    /// runtime; `None` the default (one per CPU).
    pub fn worker_threads(&self) -> Option<usize> {
        match &self.command {
            Command::Serve(a) => a.worker_threads(),
            _ => None,
        }
    }

    /// Runs the chosen command.
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self.command {
            Command::List(a) => list::run(a).await,
            Command::Lint(a) => lint::run(a).await,
            Command::Call(a) => call::run(a).await,
            Command::Inspect(a) => inspect::run(a).await,
            Command::Serve(a) => serve::run(a).await,
            Command::Chat(a) => chat::run(a).await,
            Command::Eval(a) => eval::run(a).await,
            Command::New(a) => new::run(a).await,
            Command::Approve(a) => approve::run(a).await,
            Command::Install(a) => install::run_install(a).await,
            Command::Update(a) => install::run_update(a).await,
            Command::Remove(a) => remove::run(a).await,
            Command::Lock(a) => lock::run(a).await,
            Command::Publish(a) => publish::run(a).await,
            Command::Approvals(a) => approvals::run(a).await,
            Command::Mcp(a) => mcp::run(a).await,
            Command::Config(a) => plugin_config::run(a).await,
            Command::Completions(a) => completions::run(a),
        }
    }
}

/// Logs go to stderr, always: stdout belongs to command output (and to the protocol in
/// `serve --stdio`). Colours only on a terminal; a log line that cannot be written is
/// dropped, never a panic (see [`term::LogWriter`]). When the environment asks for
/// OpenTelemetry traces (`toolhost::telemetry`), they are set up too; the returned
/// pipeline must be shut down before the process exits.
pub fn init_tracing(verbose: u8, quiet: bool) -> Option<toolhost::telemetry::Traces> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // What a guest hands the WASI host is logged by wasmtime-wasi before toolhost
    // replaces the plugin's config values in it: every byte written to stdout or stderr
    // (debug) and the string arguments of each WASI call, a URL path for one (trace).
    // Those loggers are capped whatever the level asked for, so a secret never reaches
    // the log; the guest's output is logged, redacted, under `toolhost::guest`
    // (docs/secrets.md). A cap is a second filter both must pass, never a directive of
    // the level filter: a directive would also *raise* them to `debug` under the default
    // `warn`, and every WASI call of every tool call would then build a span nobody
    // prints.
    let caps = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::level_filters::LevelFilter::TRACE)
        .with_target("wasmtime_wasi", tracing::Level::DEBUG)
        .with_target("wasmtime_wasi_http", tracing::Level::DEBUG)
        .with_target("wasmtime_wasi::p2::write_stream", tracing::Level::INFO);
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(term::LogWriter)
        .with_ansi(term::stderr_colours())
        .with_filter(tracing_subscriber::filter::FilterExt::and(filter, caps));
    let traces = match toolhost::telemetry::Traces::from_env() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("toolhost: warning: {e}; no traces are exported");
            None
        }
    };
    let otel = traces.as_ref().map(|t| t.layer());
    let _ = tracing_subscriber::registry()
        .with(logs)
        .with(otel)
        .try_init();
    traces
}
