//! `serve --admin ADDR --console`: the flags of the operator console
//! ([`toolhost::console`], docs/console.md) and the checks made before anything loads:
//! an operator token is required (`--admin-token-file`, else `[admin] token_file`; the
//! same rules as serve's bearer tokens: private file, at least 32 characters), and a
//! non-loopback admin address is refused unless TLS is terminated in front
//! (`--console-behind-tls`, `[admin] behind_tls`).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use toolhost::config::HostConfig;
use toolhost::mcp::server::BearerTokens;

/// The console's flags of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ConsoleArgs {
    /// With --admin: serve the operator console at http://ADDR/console (docs/console.md):
    /// sources and trust, pending approvals, the audit trail, live calls. Needs an
    /// operator token (--admin-token-file). Also `[admin] console = true`.
    #[arg(long, requires = "admin")]
    pub console: bool,
    /// The operator token of the console: the lines of FILE (`#` comment lines; at least
    /// 32 characters each; the file must not be accessible by group or others).
    /// Repeatable. Without it, `[admin] token_file` of the config is used.
    #[arg(long, value_name = "FILE", requires = "admin")]
    pub admin_token_file: Vec<PathBuf>,
    /// TLS is terminated in front of the admin listener (a reverse proxy): the console
    /// may then listen on a non-loopback --admin address, and its cookie is `Secure`.
    /// Also `[admin] behind_tls = true`.
    #[arg(long, requires = "admin")]
    pub console_behind_tls: bool,
    /// A console session with no request for this long ends (at most 12 h after its
    /// login in any case). Same format as --header-timeout.
    #[arg(long, value_name = "TIME", default_value = "30m", value_parser = super::serve::parse_duration, requires = "admin")]
    pub console_session_idle: std::time::Duration,
}

/// What the console was set up with, checked.
pub struct ConsoleSetup {
    /// The operator tokens.
    pub tokens: BearerTokens,
    /// TLS in front.
    pub behind_tls: bool,
}

/// The console's setup, if it is asked for (flag or config); `admin` is the admin
/// address. Errors: no operator token, a bad token file, or a non-loopback address
/// without TLS in front.
pub fn setup(
    args: &ConsoleArgs,
    config: &HostConfig,
    admin: Option<SocketAddr>,
) -> anyhow::Result<Option<ConsoleSetup>> {
    if !(args.console || config.admin.console) {
        return Ok(None);
    }
    let Some(addr) = admin else {
        bail!(
            "the console is served on the admin listener: add --admin ADDR (e.g. 127.0.0.1:9090)"
        );
    };
    let behind_tls = args.console_behind_tls || config.admin.behind_tls;
    if !addr.ip().is_loopback() && !behind_tls {
        bail!(
            "refusing to serve the console on {addr}, which is not a loopback address: the \
             operator token and the session cookie would travel in clear. Terminate TLS in \
             front of it and pass --console-behind-tls (docs/deploy.md, \"The console\"), or \
             use 127.0.0.1"
        );
    }
    let files: Vec<PathBuf> = if args.admin_token_file.is_empty() {
        config.admin.token_file.iter().cloned().collect()
    } else {
        args.admin_token_file.clone()
    };
    if files.is_empty() {
        bail!(
            "the console needs an operator token: --admin-token-file FILE or [admin] \
             token_file (one token of at least 32 characters, e.g. `openssl rand -hex 32`, \
             in a file of mode 0600)"
        );
    }
    let mut tokens = BearerTokens::new();
    for f in &files {
        tokens
            .add_file(f)
            .with_context(|| format!("the console's operator token file {}", f.display()))?;
    }
    if tokens.is_empty() {
        bail!("the console's operator token files hold no token");
    }
    Ok(Some(ConsoleSetup { tokens, behind_tls }))
}

/// `[serve.clients]` as the clients page lists them: (name, what it may use).
pub fn configured_clients(config: &HostConfig) -> Vec<(String, String)> {
    config
        .serve
        .clients
        .iter()
        .map(|(name, c)| {
            let tools = c
                .tools
                .as_ref()
                .map_or("every tool".to_string(), |t| t.join(", "));
            let share = c
                .max_concurrent_calls
                .map_or("the server's limit".to_string(), |n| {
                    format!("{n} calls at once")
                });
            (name.clone(), format!("tools: {tools}; {share}"))
        })
        .collect()
}
