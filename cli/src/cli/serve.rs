//! `toolhost serve`: every registry tool (WASM, native, wrapped MCP) as an MCP server.
//!
//! - `toolhost serve` / `toolhost serve --stdio`: one client over stdin/stdout. Stdout
//!   carries the protocol only; logs go to stderr.
//! - `toolhost serve --http 127.0.0.1:8080`: Streamable HTTP at `/mcp`. Loopback only unless
//!   `--allow-remote`, which requires bearer tokens; Host and Origin are validated. Bounded
//!   by `--header-timeout`, `--max-connections`, `--max-sessions`, `--max-sessions-per-client` and `--session-idle`
//!   (defaults in docs/mcp.md and `--help`).
//! - Bearer tokens (docs/mcp.md, "Authentication"): `--auth-token-file FILE` (else
//!   `[serve] auth_token_file` of toolhost.toml) and `TOOLHOST_SERVE_TOKEN`. Once any is
//!   configured, every HTTP request must carry one, on loopback too.
//!
//! **Instant start.** The server answers `initialize` at once, whatever the state of the
//! compile cache: the plugins folder is loaded (components compiled in parallel) and the
//! MCP servers connected in the background, and each tool is offered as soon as it is
//! registered. `tools/list` returns the tools that are ready, `notifications/tools/
//! list_changed` announces the others, and a call of a tool that is still loading waits
//! for it (see `docs/design.md`, "Start-up"). Trust decisions are those of every other
//! command ([`toolhost::Host::load_folder`]).
//!
//! **Live plugins folder.** Unless `--no-watch`, the plugins folder is watched once the
//! start-up load is done: a plugin dropped in, replaced or deleted is loaded, replaced or
//! dropped under the same trust rules, and clients are told with `list_changed`
//! ([`toolhost::reload`]; `docs/design.md`, "Live reload").

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use std::sync::Arc;
use toolhost::loader::NoProgress;
use toolhost::mcp::McpServeError;
use toolhost::mcp::McpServer;
use toolhost::mcp::server::{
    BearerTokens, Discovery, HttpLimits, HttpServeOptions, ServedClient, StopToken,
};

/// The environment variable holding one bearer token for `serve --http`.
const TOKEN_ENV: &str = "TOOLHOST_SERVE_TOKEN";

/// Arguments of `toolhost serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// Serve one client over stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve Streamable HTTP on this address, at `/mcp` (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Allow a non-loopback `--http` address. Requires bearer tokens (--auth-token-file,
    /// `[serve] auth_token_file` or TOOLHOST_SERVE_TOKEN); without one, serve refuses to
    /// start. Use TLS in front (a reverse proxy): the token travels in clear over HTTP.
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// With --http: accept only requests with `Authorization: Bearer TOKEN`, TOKEN one of
    /// the lines of FILE (`#` comment lines; at least 32 characters each; the file must
    /// not be accessible by group or others). Repeatable. Without it, `[serve]
    /// auth_token_file` of the config is used. The environment variable
    /// TOOLHOST_SERVE_TOKEN adds one more token.
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_token_file: Vec<std::path::PathBuf>,
    /// With --http: a `Host` header value (`name` or `name:port`) to accept besides the
    /// loopback names and the bound address, e.g. the DNS name remote clients use.
    /// Repeatable. `*` accepts any Host (only with a bearer token).
    #[arg(long, value_name = "NAME", requires = "http")]
    allowed_host: Vec<String>,
    /// With --http: time a connection has to send its request headers, and the longest a
    /// keep-alive connection may idle between requests; then it is closed. A number of
    /// seconds, or with a unit: 500ms, 10s, 2m.
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = parse_duration)]
    header_timeout: Duration,
    /// With --http: connections served at once; further ones wait to be accepted.
    #[arg(long, value_name = "N", default_value_t = HttpLimits::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// With --http: MCP sessions alive at once. At the cap, a new `initialize` closes the
    /// least recently used session that has no request in flight (its client gets 404 and
    /// initializes again); it gets HTTP 503 only when every session is busy.
    #[arg(long, value_name = "N", default_value_t = HttpLimits::DEFAULT_MAX_SESSIONS)]
    max_sessions: usize,
    /// With --http: the most sessions one client may hold (a client is its bearer token,
    /// else its IP address: without tokens all local clients are one client). Beyond it,
    /// the client's own least recently used idle session is closed. Default: half of
    /// --max-sessions, rounded up.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_sessions_per_client: Option<u64>,
    /// With --http: a session with no request for this long is closed (the client must
    /// initialize again). Same format as --header-timeout.
    #[arg(long, value_name = "TIME", default_value = "300s", value_parser = parse_duration)]
    session_idle: Duration,
    /// How long a `tools/list` sent while the tools are still loading waits for the load
    /// before it answers with what is ready (`list_changed` announces the rest). A warm
    /// start loads in tens of milliseconds; `0s` answers at once. Same format as
    /// --header-timeout.
    #[arg(long, value_name = "TIME", default_value = "5s", value_parser = parse_wait)]
    list_wait: Duration,
    /// Worker threads of the async runtime. Default: 1 for stdio, one per CPU for HTTP.
    ///
    /// One thread serves a single stdio client with the lowest and steadiest latency: on
    /// a 2-CPU machine a second worker competes with the client process for the CPUs and
    /// every hand-over between workers costs a wake-up (measured: p99 of a small
    /// `tools/call` 105–160 µs with one worker, 145–650 µs with two). Calls sent
    /// concurrently still run concurrently (tools are async and WASM tools yield every
    /// epoch tick), but CPU-bound tools then share one CPU; raise this to run them in
    /// parallel.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Do not watch the plugins folder: read it once at start, as the other commands do
    /// (an approval given in the console still applies at once). By default a plugin added, replaced or deleted while serving is picked up after a
    /// quiet period of 300 ms, under the same trust rules as at start.
    #[arg(long)]
    no_watch: bool,
    /// Serve the admin endpoints on ADDR (e.g. 127.0.0.1:9090), unauthenticated:
    /// `/healthz` (the process is up), `/readyz` (plugins loaded and MCP servers
    /// connected; 503 with the reason otherwise, and from the start of a shutdown) and
    /// `/metrics` (Prometheus). Keep it on loopback or a cluster-internal address. With
    /// --console, also the operator console at `/console` (behind an operator token).
    #[arg(long, value_name = "ADDR", requires = "http")]
    admin: Option<SocketAddr>,
    #[command(flatten)]
    console: super::console::ConsoleArgs,
    /// On SIGTERM or Ctrl-C with --http: how long calls in flight may take to finish
    /// after the listener stops accepting, before toolhost exits anyway.
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = parse_duration)]
    drain_timeout: Duration,
    /// What `tools/list` shows: `all` tools the client may see, or `search`: only
    /// `search_tools` and `call_tool` (plus `[serve] pinned`), the rest found by search.
    /// Default: `[serve] discovery` of the config, else `all`.
    #[arg(long, value_name = "MODE")]
    discovery: Option<DiscoveryArg>,
    /// Serve `run_code`: the model writes JavaScript that calls tools, run in a fresh
    /// WebAssembly sandbox, each inner call through the whole pipeline as the client's
    /// own (docs/code-mode.md). Also `[serve] code_mode = true`.
    #[arg(long)]
    code_mode: bool,
    #[command(flatten)]
    audit: super::audit::AuditArgs,
}

/// `--discovery`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DiscoveryArg {
    /// Every tool the client may see.
    All,
    /// `search_tools`, `call_tool` and the pinned tools.
    Search,
}

/// The skills `serve` offers: those of the skills folder the lock approves as they are
/// (docs/trust.md, "Skills"); one warning per skill withheld or refused.
fn served_skills(
    host: &super::HostArgs,
    config: &toolhost::config::HostConfig,
) -> toolhost::skills::SkillSet {
    let Some(folder) = super::common::skills_dir(host, config) else {
        return toolhost::skills::SkillSet::default();
    };
    let dir = super::common::plugins_dir(host, config);
    let lock =
        toolhost_trust::Lock::load(&toolhost_trust::Lock::path_in(&dir)).unwrap_or_else(|e| {
            tracing::warn!("{e}: no skill is offered");
            toolhost_trust::Lock::default()
        });
    let (set, warnings) = toolhost::skills::offered(&folder, &lock, &dir);
    for w in warnings {
        tracing::warn!("{w}");
    }
    tracing::info!(skills = set.skills().len(), folder = %folder.display(), "skills offered");
    set
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM ({e}): only Ctrl-C stops the server");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Parses `10`, `10s`, `500ms` or `2m` into a positive duration.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 500ms, 10s, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("unknown unit in `{text}`: use ms, s or m")),
    };
    if !(secs > 0.0 && secs.is_finite()) {
        return Err(format!("`{text}`: the duration must be positive"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("`{text}`: {e}"))
}

/// Like [`parse_duration`], but zero (`0s`, `0`) is allowed: no wait at all.
fn parse_wait(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let unit_at = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(unit_at);
    if matches!(unit, "" | "ms" | "s" | "m") && num.parse::<f64>().is_ok_and(|n| n == 0.0) {
        return Ok(Duration::ZERO);
    }
    parse_duration(text)
}

/// The bearer tokens of `serve --http`: the `--auth-token-file` files (else the config's
/// `[serve] auth_token_file`), each `[serve.clients.NAME] token_file` (those tokens carry
/// their client), plus `TOOLHOST_SERVE_TOKEN`. Empty when none is configured.
fn bearer_tokens(
    args: &ServeArgs,
    config: &toolhost::config::HostConfig,
) -> anyhow::Result<BearerTokens> {
    let mut tokens = BearerTokens::new();
    let files: Vec<&std::path::Path> = if args.auth_token_file.is_empty() {
        config
            .serve
            .auth_token_file
            .iter()
            .map(|p| p.as_path())
            .collect()
    } else {
        args.auth_token_file.iter().map(|p| p.as_path()).collect()
    };
    for file in files {
        tokens.add_file(file)?;
    }
    for (name, c) in &config.serve.clients {
        let client = ServedClient::new(
            name,
            c.tools.as_deref(),
            c.allowed.clone(),
            c.max_concurrent_calls,
        )
        .with_context(|| format!("[serve.clients.{name}]"))?;
        tokens
            .add_client_file(&c.token_file, Arc::new(client))
            .with_context(|| format!("[serve.clients.{name}] token_file"))?;
    }
    match std::env::var(TOKEN_ENV) {
        Ok(token) => tokens.add(&token, &format!("the {TOKEN_ENV} environment variable"))?,
        Err(std::env::VarError::NotPresent) => {}
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("the {TOKEN_ENV} environment variable is not valid UTF-8")
        }
    }
    Ok(tokens)
}

impl ServeArgs {
    /// The worker threads this invocation wants (see `--threads`).
    pub fn worker_threads(&self) -> Option<usize> {
        match (self.threads, &self.http) {
            (Some(n), _) => Some(usize::from(n)),
            (None, None) => Some(1),
            (None, Some(_)) => None,
        }
    }
}

/// Runs `toolhost serve`: serves at once and loads the tools in the background (see the
/// module docs).
pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // A broken config is an error before anything is served; plugins and servers that
    // fail to load are warnings, as in the other commands.
    let config = super::common::load_config(&args.host)?;
    // A long-lived host: components missing from the compile cache start on baseline
    // code and are swapped to optimized code in the background (docs/design.md,
    // "Compile tiers").
    let th = super::common::host(&args.host, &config, true)?;
    // The token files given on the command line are credentials like those the config
    // names: no plugin policy may grant them or a folder above them.
    th.protect_paths(args.auth_token_file.iter().cloned());
    th.protect_paths(args.console.admin_token_file.iter().cloned());
    let console = super::console::setup(&args.console, &config, args.admin)?;
    let skills = served_skills(&args.host, &config);
    // Tokens are checked before anything loads: a bad token file or an unauthenticated
    // --allow-remote stops here.
    let tokens = match args.http {
        Some(addr) => {
            let tokens = bearer_tokens(&args, &config)?;
            if args.allow_remote && tokens.is_empty() {
                return Err(McpServeError::RemoteWithoutAuth(addr.to_string()).into());
            }
            Some(tokens)
        }
        None => None,
    };
    let state_key = match &config.serve.request_state_key_file {
        Some(file) => Some(
            read_secret_file(file)
                .with_context(|| format!("[serve] request_state_key_file {}", file.display()))?,
        ),
        None => None,
    };
    let mut registry = super::common::new_registry(&args.host, &config)?;
    if let Some(n) = config.serve.max_concurrent_calls {
        registry = registry.with_max_concurrent(n);
    }
    // A call that needs an approval is put to the MCP client's user when the client
    // takes elicitations; otherwise it is denied with the command that approves it ahead.
    registry.set_approver(Some(Arc::new(toolhost::mcp::ClientApprover::new(
        Arc::new(super::approver::NobodyToAsk {
            what: "`toolhost serve` cannot ask this MCP client to approve it (it takes no elicitations)",
        }),
    ))));
    // The audit trail, on by default (docs/permissions.md, "Audit trail").
    let audit = super::audit::attach_default(&registry, &args.audit, &config.audit)?;
    // The admin endpoints (docs/deploy.md): not ready until everything is loaded.
    let readiness = toolhost::admin::Readiness::not_ready("loading the plugins and MCP servers");
    let admin_stop = StopToken::new();
    let session_counters = Arc::new(toolhost::mcp::server::SessionCounters::default());
    // The MCP server's tasks, which the console's clients page counts by client.
    let task_board = toolhost::mcp::server::TaskBoard::default();
    let board = toolhost::trust::TrustBoard::new();
    // Watch before loading, so a change made while the start-up load runs is not missed;
    // the changes are applied once it is done. A folder that cannot be watched is a
    // warning: the host serves what it loaded. Either way the reload runs, so that an
    // approval given in the console applies at once (`toolhost::reload::Reloads`).
    let watch = {
        let dir = super::common::plugins_dir(&args.host, &config);
        if args.no_watch {
            toolhost::reload::unwatched(&dir)
        } else {
            toolhost::reload::watch(&dir).unwrap_or_else(|e| {
                tracing::warn!("{e}");
                toolhost::reload::unwatched(&dir)
            })
        }
    };
    // The wrapped servers, for the console's review of their withheld tools.
    let mcp_board = toolhost::trust::McpBoard::default();
    if let Some(addr) = args.admin {
        let metrics = toolhost::admin::Metrics::install()?
            .with_sessions(session_counters.clone())
            .with_engine(th.engine().clone());
        registry.add_listener(Arc::new(toolhost::admin::MetricsListener));
        let console = console.map(|setup| {
            let live = Arc::new(toolhost::console::LiveCalls::new());
            registry.add_listener(live.clone());
            let opts = toolhost::console::ConsoleOptions {
                tokens: setup.tokens,
                host: th.clone(),
                registry: registry.clone(),
                plugins_dir: super::common::plugins_dir(&args.host, &config),
                trust_keys: config.trust.keys.clone(),
                permissions: config.permissions.clone(),
                board: board.clone(),
                reloads: Some(watch.reloads()),
                judge: config
                    .lint
                    .judge
                    .then(|| super::lint::console_judge(&config)),
                mcp: Some(mcp_board.clone()),
                audit: audit
                    .as_ref()
                    .map(|(path, log)| toolhost::console::AuditTrail {
                        path: path.clone(),
                        keep: config.audit.keep,
                        log: log.clone(),
                    }),
                live,
                session_counters: Some(session_counters.clone()),
                tasks: Some(task_board.clone()),
                clients: super::console::configured_clients(&config),
                secure_cookie: setup.behind_tls,
                stop: admin_stop.clone(),
                session_idle: args.console.console_session_idle,
            };
            move |port| toolhost::console::router(toolhost::console::Console::new(opts, port))
        });
        let with_console = console.is_some();
        let (r, stop) = (readiness.clone(), admin_stop.clone());
        let bound = tokio::sync::oneshot::channel();
        let (tx, rx) = bound;
        tokio::spawn(async move {
            let served = toolhost::admin::serve_admin(addr, r, metrics, console, stop, |b| {
                let _ = tx.send(b);
            })
            .await;
            if let Err(e) = served {
                tracing::error!("{e}");
            }
        });
        match rx.await {
            Ok(b) if with_console => eprintln!(
                "toolhost: admin endpoints at http://{b} (/healthz, /readyz, /metrics); console at http://{b}/console"
            ),
            Ok(b) => {
                eprintln!("toolhost: admin endpoints at http://{b} (/healthz, /readyz, /metrics)")
            }
            Err(_) => anyhow::bail!("cannot listen on {addr} for the admin endpoints"),
        }
    }
    let loading = registry.begin_loading();
    let background = registry.clone();
    // Resources, prompts, completions and logs of the wrapped MCP servers pass through.
    let gateway = toolhost::mcp::Gateway::new();
    let upstreams = gateway.clone();
    let host = args.host.clone();
    let ready = readiness.clone();
    let task_support = config.serve.task_support.clone();
    let search = match args.discovery {
        Some(DiscoveryArg::Search) => true,
        Some(DiscoveryArg::All) => false,
        None => config.serve.discovery == Some(toolhost::config::DiscoveryMode::Search),
    };
    let code_mode = args.code_mode || config.serve.code_mode;
    let discovery = search.then(|| Discovery::Search {
        pinned: config
            .serve
            .pinned
            .iter()
            .cloned()
            .chain(code_mode.then(|| toolhost::code::RUN_CODE.to_string()))
            .collect(),
    });
    let wraps_servers = config.mcp.servers.values().any(|s| !s.disabled);
    tokio::spawn(async move {
        let t0 = std::time::Instant::now();
        if code_mode {
            add_run_code(&th, &background).await;
        }
        tracing::info!("loading the plugins and MCP servers in the background");
        let progress = toolhost::admin::LoadMetrics { next: &NoProgress };
        let report = super::common::load_all(&th, &background, &host, &config, &progress).await;
        let problems = &report.problems;
        let enabled = config.mcp.servers.values().filter(|s| !s.disabled).count();
        toolhost::admin::record_upstreams(
            enabled.saturating_sub(report.mcp_down.len()),
            report.mcp_down.len(),
        );
        if report.mcp_down.is_empty() {
            // Plugins that started on baseline code (compile tiers) serve calls, but a
            // replica takes traffic only once their optimized builds are in: a load
            // balancer has other replicas to send it to meanwhile.
            let engine = th.engine().clone();
            let ready = ready.clone();
            tokio::spawn(async move {
                while !ready.is_stopping() {
                    let n = engine.optimizing();
                    if n == 0 {
                        ready.set_ready();
                        break;
                    }
                    ready.set_not_ready(format!(
                        "{n} plugin(s) still compiling their optimized code (calls run on baseline code until then)"
                    ));
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            });
        } else {
            ready.set_not_ready(format!(
                "MCP servers not connected: {}",
                report.mcp_down.join(", ")
            ));
        }
        tracing::info!(
            tools = background.len(),
            problems = problems.len(),
            "all tools loaded in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
        // A name in `[serve] task_support` or `pinned` that no tool has is most likely a
        // typo: the setting then does nothing (a tool of that name may still come by live
        // reload).
        let named = config
            .serve
            .task_support
            .keys()
            .map(|n| ("task_support", n));
        for (key, name) in named.chain(config.serve.pinned.iter().map(|n| ("pinned", n))) {
            if !background.contains(name) {
                tracing::warn!(
                    "[serve] {key} names `{name}`, which no loaded tool has; it applies \
                     if such a tool appears"
                );
            }
        }
        // The wrapped servers join the gateway before the load ends: lists of resources
        // and prompts sent meanwhile waited for it, and must then see them.
        mcp_board.publish(
            report.mcp_pins.clone(),
            report.mcp_clients.clone(),
            config.trust.options(),
            &super::common::plugins_dir(&args.host, &config),
        );
        for client in report.mcp_clients {
            upstreams.add(client).await;
        }
        board.publish(&report.plugins, &report.folder);
        // Calls of tools not loaded yet, and first lists, waited until here.
        drop(loading);
        watch
            .with_board(board)
            .run(
                th,
                background,
                config.load_rules(),
                report.plugins,
                report.folder,
            )
            .await;
    });
    // The cache hints of tools/list, from what can change the list while this runs.
    let hints = toolhost::mcp::server::ListHints {
        // An approval in the console changes the list under --no-watch too.
        changes_live: !args.no_watch || wraps_servers || args.console.console,
        // stdio has one client, the process that started toolhost: nothing is shared.
        authenticated: tokens.as_ref().is_some_and(|t| !t.is_empty()),
    };
    let mut server = McpServer::new(registry)
        .with_skills(skills)
        .with_gateway(gateway)
        .with_initialize_wait(wraps_servers)
        .with_list_wait(args.list_wait)
        .with_list_hints(hints)
        .with_task_support(task_support)
        .with_task_board(task_board);
    if let Some(key) = &state_key {
        server = server.with_request_state_key(key)?;
    }
    if let Some(discovery) = discovery {
        server = server.with_discovery(discovery);
    }
    match args.http {
        Some(addr) => {
            let stop = StopToken::new();
            // SIGTERM (an orchestrator's stop) or Ctrl-C: not ready at once, so the load
            // balancer sends nothing new; the listener stops accepting; the calls in
            // flight finish (at most --drain-timeout); then toolhost exits.
            let (s, r) = (stop.clone(), readiness.clone());
            tokio::spawn(async move {
                shutdown_signal().await;
                tracing::info!("shutting down: not ready; finishing the calls in flight");
                r.set_stopping("shutting down");
                s.cancel();
            });
            let limits = HttpLimits {
                header_read_timeout: args.header_timeout,
                max_connections: args.max_connections.max(1),
                max_sessions: args.max_sessions.max(1),
                max_sessions_per_client: args
                    .max_sessions_per_client
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                session_idle: args.session_idle,
            };
            let auth = tokens.filter(|t| !t.is_empty());
            let authenticated = auth.as_ref().map(BearerTokens::len);
            if addr.ip().is_unspecified() && args.allowed_host.is_empty() {
                eprintln!(
                    "toolhost: note: listening on {addr}, but only the Host names localhost \
                     and 127.0.0.1 are accepted; add --allowed-host NAME for each name or \
                     address remote clients use"
                );
            }
            let options = HttpServeOptions {
                allow_remote: args.allow_remote,
                limits,
                auth,
                allowed_hosts: args.allowed_host.clone(),
                session_counters: session_counters.clone(),
            };
            let serving =
                server.serve_http_opts(addr, options, stop.clone(), |bound| match authenticated {
                    Some(n) => eprintln!(
                        "toolhost: serving MCP at http://{bound}/mcp (bearer token \
                             required; {n} accepted)"
                    ),
                    None => eprintln!("toolhost: serving MCP at http://{bound}/mcp"),
                });
            let deadline = async {
                stop.cancelled().await;
                tokio::time::sleep(args.drain_timeout).await;
            };
            tokio::select! {
                served = serving => served.context("serving MCP over HTTP")?,
                () = deadline => tracing::warn!(
                    "calls still in flight after the drain timeout ({} s): exiting",
                    args.drain_timeout.as_secs_f64()
                ),
            }
            admin_stop.cancel();
            tracing::info!("stopped");
        }
        None => {
            let _ = args.stdio;
            server
                .serve_stdio()
                .await
                .context("serving MCP over stdio")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Compiles the code-mode runner (through the compile cache) and registers `run_code`;
/// a failure is logged and serve goes on without it.
async fn add_run_code(th: &toolhost::Host, registry: &toolhost::tools::ToolRegistry) {
    let engine = th.engine().clone();
    let compiled =
        tokio::task::spawn_blocking(move || toolhost::code::CodeRunner::new(&engine)).await;
    match compiled {
        Ok(Ok(runner)) => {
            let tool = toolhost::code::RunCodeTool::new(
                runner,
                registry.clone(),
                toolhost::code::RunLimits::default(),
            );
            if let Err(e) = registry.register(std::sync::Arc::new(tool)) {
                tracing::error!("cannot serve run_code: {e}");
            }
        }
        Ok(Err(e)) => tracing::error!("cannot serve run_code: {e}"),
        Err(e) => tracing::error!("cannot serve run_code: {e}"),
    }
}

/// The bytes of a secret file: refused when group or others may read it (Unix).
fn read_secret_file(file: &std::path::Path) -> anyhow::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(file)
            .with_context(|| format!("cannot read {}", file.display()))?
            .permissions()
            .mode();
        anyhow::ensure!(
            mode & 0o077 == 0,
            "{} may be read by group or others (mode {:o}); chmod 600 it",
            file.display(),
            mode & 0o777
        );
    }
    let key = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    // A trailing newline (an editor's, `echo`'s) is not part of the key.
    Ok(key.trim_ascii_end().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_may_be_zero_a_timeout_may_not() {
        for zero in ["0", "0s", "0ms", "0.0s", " 0m "] {
            assert_eq!(parse_wait(zero), Ok(Duration::ZERO), "{zero}");
            assert!(parse_duration(zero).is_err(), "{zero}");
        }
        assert_eq!(parse_wait("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_wait("0x").is_err());
        assert!(parse_wait("-1s").is_err());
    }
}
