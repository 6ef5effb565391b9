//! `toolhost mcp login NAME` and `toolhost mcp logout NAME`: the OAuth 2.1 login to a
//! configured `url` server that asks for it, and forgetting that login (see docs/mcp.md,
//! "Servers that log in with OAuth"). The flow itself is `toolhost_mcp::oauth`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use toolhost::mcp::oauth::{LoginOptions, OAuthStore, login};

/// Arguments of `toolhost mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Log in to an MCP server that asks for OAuth: opens the authorization page and
    /// stores the credentials (mode 0600) under the data dir.
    Login(LoginArgs),
    /// Forget the stored OAuth credentials of an MCP server.
    Logout(LogoutArgs),
}

/// Arguments of `toolhost mcp login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The server, as in `[mcp.servers.NAME]` (it needs a `url`).
    pub name: String,
    /// Only print the authorization URL; do not open a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// For tests and automation: fetch the authorization URL with an HTTP GET and follow
    /// its redirects instead of asking a person (works only with authorization servers
    /// that approve without interaction).
    #[arg(long)]
    pub headless: bool,
    /// How long to wait for the login to finish, in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// A scope to ask for (repeatable); default: `scopes` of `[mcp.servers.NAME.oauth]`,
    /// else what the server names.
    #[arg(long = "scope")]
    pub scopes: Vec<String>,
}

/// Arguments of `toolhost mcp logout`.
#[derive(Debug, Args)]
pub struct LogoutArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The server, as in `[mcp.servers.NAME]`.
    pub name: String,
}

/// Runs `toolhost mcp ...`.
pub async fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        McpCommand::Login(a) => run_login(a).await,
        McpCommand::Logout(a) => run_logout(a),
    }
}

async fn run_login(args: LoginArgs) -> anyhow::Result<ExitCode> {
    let how = LoginHow {
        headless: args.headless,
        no_browser: args.no_browser,
        timeout: Duration::from_secs(args.timeout.max(1)),
        scopes: args.scopes.clone(),
    };
    log_in(&args.host, &args.name, &how).await?;
    Ok(ExitCode::SUCCESS)
}

/// How [`log_in`] gets the person (or nobody) through the login.
#[derive(Debug, Clone)]
pub(super) struct LoginHow {
    /// Follow the authorization URL's redirects instead of asking a person.
    pub headless: bool,
    /// Only print the authorization URL.
    pub no_browser: bool,
    /// How long to wait for the login to finish.
    pub timeout: Duration,
    /// Scopes to ask for; empty: the config's, else what the server names.
    pub scopes: Vec<String>,
}

/// Logs in to the MCP server `name` of the config (`toolhost mcp login`, and `toolhost
/// call` when a server refuses its stored login): the server's authorization server is
/// found again from what the server says now, and toolhost registers there anew when
/// it registers dynamically, so a server that moved to another authorization server is
/// never sent the old one's client or credentials.
pub(super) async fn log_in(
    host: &super::HostArgs,
    name: &str,
    how: &LoginHow,
) -> anyhow::Result<()> {
    let config = super::common::load_config(host)?;
    let Some(server) = config.mcp.servers.get(name) else {
        bail!("no MCP server {name:?} in the config ([mcp.servers.{name}])");
    };
    let Some(url) = server.url.as_deref() else {
        bail!(
            "MCP server {name} has no `url`: OAuth login is only for Streamable HTTP servers \
             ([mcp.servers.{name}] url = \"https://...\")"
        );
    };
    let client = server
        .oauth_client()
        .map_err(anyhow::Error::msg)
        .with_context(|| format!("mcp server {name}"))?;
    if client.grant == toolhost::mcp::oauth::OAuthGrant::ClientCredentials {
        bail!(
            "MCP server {name} is a machine client (`grant = \"client_credentials\"`): \
             toolhost gets its tokens itself, there is nothing to log in to"
        );
    }
    let scopes = if how.scopes.is_empty() {
        client.scopes.clone()
    } else {
        how.scopes.clone()
    };
    let store = OAuthStore::default_location()?;
    let options = LoginOptions {
        headless: how.headless,
        timeout: how.timeout,
        scopes,
        client,
    };
    let open = !how.headless && !how.no_browser && std::io::stderr().is_terminal();
    login(name, url, &store, &options, |auth_url| {
        eprintln!(
            "To log in to MCP server {name}, open this URL in a browser:\n\n  {}\n",
            super::term::text(auth_url)
        );
        if open {
            open_browser(auth_url);
        }
        if !how.headless {
            eprintln!(
                "Waiting for the authorization (up to {} s)...",
                how.timeout.as_secs()
            );
        }
    })
    .await?;
    let path = store.path(name)?;
    eprintln!(
        "Logged in to MCP server {name}; credentials stored in {}",
        path.display()
    );
    Ok(())
}

/// Whether the MCP server `name` of `config` authenticates with a login stored by
/// `toolhost mcp login` (a `url` server, not a machine client, with no bearer token or
/// `Authorization` header of the operator's, and a login on file).
pub(super) fn uses_stored_login(config: &toolhost::config::HostConfig, name: &str) -> bool {
    let Some(server) = config.mcp.servers.get(name) else {
        return false;
    };
    let operator_token = server.bearer_token_env.is_some()
        || server.bearer_token_file.is_some()
        || server
            .headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"));
    let machine = server
        .oauth_client()
        .is_ok_and(|c| c.grant == toolhost::mcp::oauth::OAuthGrant::ClientCredentials);
    let stored = OAuthStore::default_location()
        .and_then(|s| s.path(name))
        .is_ok_and(|p| p.exists());
    server.url.is_some() && !operator_token && !machine && stored
}

fn run_logout(args: LogoutArgs) -> anyhow::Result<ExitCode> {
    let store = OAuthStore::default_location()?;
    let name = args.name.as_str();
    let removed = store
        .remove(name)
        .with_context(|| format!("logging out of MCP server {name}"))?;
    if removed {
        eprintln!("Logged out of MCP server {name} (its stored OAuth credentials are deleted)");
    } else {
        eprintln!("No OAuth login stored for MCP server {name}; nothing to do");
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` with the platform's opener, if it is an http(s) URL (it comes from the
/// authorization server: nothing else, such as `file:` or an option, is passed on).
/// Failing to open is fine: the URL is printed.
pub(super) fn open_browser(url: &str) {
    let web = url.starts_with("https://") || url.starts_with("http://");
    if !web || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let _ = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
