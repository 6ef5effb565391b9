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
