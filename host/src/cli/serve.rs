//! `toolhost serve`: every registry tool (WASM, native, wrapped MCP) as an MCP server.
//!
//! - `toolhost serve` / `toolhost serve --stdio`: one client over stdin/stdout. Stdout
//!   carries the protocol only; logs go to stderr.
//! - `toolhost serve --http 127.0.0.1:8080`: Streamable HTTP at `/mcp`. Loopback only unless
//!   `--allow-remote`; Host and Origin are validated.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolhost::mcp::McpServer;
use toolhost::mcp::server::StopToken;

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
    /// Allow a non-loopback `--http` address. There is no authentication: only do this
    /// behind something that adds it.
    #[arg(long, requires = "http")]
    allow_remote: bool,
}

/// Runs `toolhost serve`.
pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let (registry, _problems) = super::common::build_registry(&args.host).await?;
    let server = McpServer::new(registry);
    match args.http {
        Some(addr) => {
            let stop = StopToken::new();
            let s = stop.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                s.cancel();
            });
            server
                .serve_http(addr, args.allow_remote, stop, |bound| {
                    eprintln!("toolhost: serving MCP at http://{bound}/mcp");
                })
                .await
                .context("serving MCP over HTTP")?;
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
