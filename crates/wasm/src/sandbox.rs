//! The per-call sandbox: [`HostState`], the data of one call's `Store`, built from a
//! [`Grant`] and the policy: a WASI context with the granted preopens (from the handles
//! held since load, [`crate::dirs`]), raw sockets (off unless granted, checked on resolved
//! IPs), the named environment variables, the granted `wasi:config/store` values
//! ([`crate::config_store`]), captured output ([`crate::capture`]), the
//! wasi:http gate ([`crate::http_gate`]), the memory limiter and the call's reports.
//! Deleting and renaming are checked in [`crate::guard`].

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use toolhost_core::tools::ToolContext;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use toolhost_core::secrets::Redactor;

use crate::capture::CappedPipe;
use crate::config::ConfigValues;
use crate::dirs::HeldDirs;
use crate::error::StoreError;
use crate::grant::Grant;
use crate::http_gate::HttpGate;
use crate::limits::{MemoryLimiter, StopReason};
use crate::net::NetAllow;
use crate::reports::Reports;

pub use crate::denials::Denials;
use crate::denials::record_denial;

/// The data of one call's `Store`.
pub struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    pub(crate) gate: HttpGate,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) stopped: Option<StopReason>,
    /// When the epoch callback stops the running wasm (the call's wall-clock deadline).
    pub(crate) deadline: Instant,
    pub(crate) plugin: Arc<str>,
    pub(crate) tool: Arc<str>,
    pub(crate) ctx: Option<ToolContext>,
    pub(crate) reports: Mutex<Reports>,
    pub(crate) may_delete: bool,
    pub(crate) allow: NetAllow,
    pub(crate) denials: Denials,
    pub(crate) stdout: CappedPipe,
    pub(crate) stderr: CappedPipe,
    /// The `wasi:config/store` values this call may read.
    pub(crate) config: ConfigValues,
    /// Replaces those values in what the call logs and returns.
    pub(crate) redactor: Redactor,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for HostState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.gate,
        }
    }
}

/// Everything needed to build the state of one call.
pub(crate) struct StateSpec<'a> {
    pub plugin: Arc<str>,
    pub tool: Arc<str>,
    pub grant: &'a Grant,
    pub declared_network: bool,
    pub ctx: Option<ToolContext>,
}

impl HostState {
    /// Builds the sandbox of one call. Fails if a granted folder could not be opened at
    /// load or was replaced since (see [`crate::dirs`]).
    pub(crate) fn new(spec: StateSpec<'_>) -> Result<Self, StoreError> {
        let g = spec.grant;
        let denials: Denials = Arc::new(Mutex::new(Vec::new()));
        let stdout = CappedPipe::new(g.output_bytes());
        let stderr = CappedPipe::new(g.output_bytes());
        let mut b = WasiCtxBuilder::new();
        b.stdout(stdout.clone()).stderr(stderr.clone());
        for name in &g.caps.env {
            if let Ok(v) = std::env::var(name) {
                b.env(name, v);
            }
        }
        // The preopens come from the handles opened at load (a Grant built by hand,
        // without them, gets handles opened now, for this call).
        let fresh;
        let held = if g.held.holds(&g.caps.read, &g.caps.write) {
            &g.held
        } else {
            fresh = HeldDirs::open(&g.caps.read, &g.caps.write, &g.caps.write);
            &fresh
        };
        for (dirs, perms, what) in [
            (&held.read, FsPerms::ReadOnly, "read"),
            (&held.write, FsPerms::ReadWrite, "write"),
        ] {
            for dir in dirs {
                let guest = dir.path().to_string_lossy().into_owned();
                let host = dir
                    .preopen_path()
                    .map_err(|message| StoreError::DirUnavailable { what, message })?;
                b.preopened_dir(&host, guest, perms)
                    .map_err(|e| StoreError::OpenDir {
                        what,
                        dir: dir.path().to_path_buf(),
                        message: e.to_string(),
                    })?;
            }
        }
        let allow = NetAllow::new(g.caps.network.clone());
        let allow_copy = allow.clone();
        if g.caps.sockets {
            b.allow_tcp(true)
                .allow_udp(false)
                .allow_ip_name_lookup(true);
            let allow = allow.clone();
            let denials = denials.clone();
            let file = g.file_name.clone();
            b.socket_addr_check(move |addr: SocketAddr, use_: SocketAddrUse| {
                let allow = allow.clone();
                let denials = denials.clone();
                let file = file.clone();
                Box::pin(async move {
                    match use_ {
                        // wasmtime asks for an implicit bind to 0.0.0.0:0 before a connect.
                        SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
                        SocketAddrUse::TcpConnect => {
                            let ok = allow.allows_addr(addr).await;
                            if !ok {
                                record_denial(
                                    &denials,
                                    format!("socket connect to {addr} denied: no `network` entry in {file} matches this IP and port"),
                                );
                            }
                            ok
                        }
                        _ => false,
                    }
                })
            });
        } else {
            b.allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false);
        }
        Ok(HostState {
            wasi: b.build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            gate: HttpGate {
                allow,
                declared_network: spec.declared_network,
                policy_file: g.file_name.clone(),
                denials: denials.clone(),
            },
            limiter: MemoryLimiter::new(g.memory_bytes()),
            stopped: None,
            deadline: Instant::now(),
            plugin: spec.plugin,
            tool: spec.tool,
            ctx: spec.ctx,
            reports: Mutex::new(Reports::default()),
            may_delete: g.delete,
            allow: allow_copy,
            denials,
            stdout,
            stderr,
            config: g.config.clone(),
            redactor: g.redactor.clone(),
        })
    }

    /// Ends the call's reporting: sends the newest coalesced progress report, logs what
    /// was dropped, and sends the captured stdout/stderr to `tracing` (never to the
    /// terminal; control characters escaped).
    pub(crate) fn flush_output(&self) {
        self.reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .finish(self.ctx.as_ref(), &self.plugin, &self.tool);
        for (stream, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let (text, dropped) = pipe.take();
            if !text.is_empty() {
                let text = self
                    .redactor
                    .text(text.trim_end())
                    .escape_debug()
                    .to_string();
                tracing::info!(target: "toolhost::guest", plugin = %self.plugin, tool = %self.tool, stream, "{text}");
            }
            if dropped > 0 {
                tracing::warn!(target: "toolhost::guest", plugin = %self.plugin, tool = %self.tool, stream, dropped, "guest output over the cap was dropped");
            }
        }
    }

    /// The denials recorded so far.
    pub(crate) fn denials(&self) -> Vec<String> {
        self.denials
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
