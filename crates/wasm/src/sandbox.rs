//! Grants → a per-call WASI context: filesystem preopens, the wasi:http allowlist
//! (enforced in [`WasiHttpHooks::send_request`]), raw sockets (off unless granted, checked
//! on resolved IPs), environment variables, and captured, size-capped stdout/stderr.
//!
//! The effective grant of a tool is what it **declared** ∩ what the **policy** offers:
//!
//! | policy key | needs declared | becomes |
//! |---|---|---|
//! | `read` | Read, Write or FileSystem | read-only preopen at the same path |
//! | `write` | Write | read-write preopen at the same path: create, write, truncate |
//! | `write` + Delete declared | Write and Delete | also unlink, rmdir and rename in it |
//! | `network` | Network | wasi:http allowlist (scheme, host, port) |
//! | `sockets` | Network | TCP to allowlisted IP:port (resolved); lookups of allowlisted names only |
//! | `env` | (nothing) | the named host variables |
//!
//! Granted folders are opened once, at load, and held ([`crate::dirs`]); each call's
//! preopens come from those handles, never from re-resolving the path. Deleting and
//! renaming are checked in [`crate::guard`]; opening with truncate counts as writing (the
//! same bytes could be overwritten by a plain write), not as deleting.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use toolhost_core::tools::{Permission, ToolContext};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use crate::dirs::HeldDirs;
use crate::error::StoreError;
use crate::limits::{MemoryLimiter, StopReason};
use crate::net::{NetAllow, NetRule};
use crate::policy::Policy;
use crate::reports::Reports;

/// The concrete capabilities one tool gets on each call.
#[derive(Debug, Clone, Default)]
pub struct Grant {
    /// Read-only preopens.
    pub read: Vec<PathBuf>,
    /// Read-write preopens.
    pub write: Vec<PathBuf>,
    /// The wasi:http allowlist.
    pub network: Vec<NetRule>,
    /// Raw TCP sockets to allowlisted addresses.
    pub sockets: bool,
    /// Unlink, rmdir and rename inside the write folders (the tool declared Delete).
    pub delete: bool,
    /// The read and write folders, opened at load and held (see [`crate::dirs`]).
    pub held: HeldDirs,
    /// Environment variable names passed in (when set on the host).
    pub env: Vec<String>,
    /// Why some offered capability was not granted (for `inspect` and denial messages).
    pub withheld: Vec<String>,
}

impl Grant {
    /// Declared ∩ policy.
    pub fn effective(policy: &Policy, declared: &[Permission]) -> Grant {
        let has = |p: Permission| declared.contains(&p);
        let mut g = Grant {
            env: policy.env.clone(),
            ..Grant::default()
        };
        if has(Permission::Read) || has(Permission::Write) || has(Permission::FileSystem) {
            g.read = policy.read.clone();
        } else if !policy.read.is_empty() {
            g.withheld
                .push("`read` dirs withheld: the tool did not declare Read".into());
        }
        if has(Permission::Write) {
            g.write = policy.write.clone();
            g.delete = has(Permission::Delete);
            if !g.delete && !g.write.is_empty() {
                g.withheld.push(
                    "deleting and renaming in `write` dirs withheld: the tool did not declare Delete"
                        .into(),
                );
            }
        } else if !policy.write.is_empty() {
            g.withheld
                .push("`write` dirs withheld: the tool did not declare Write".into());
        }
        if has(Permission::Network) {
            g.network = policy.network.clone();
            g.sockets = policy.sockets;
        } else if !policy.network.is_empty() || policy.sockets {
            g.withheld
                .push("`network` withheld: the tool did not declare Network".into());
        }
        g.held = HeldDirs::open(&g.read, &g.write, &policy.write);
        g
    }
}

/// A byte sink that keeps the first `cap` bytes and counts the rest. The guest's writes
/// always succeed, so a chatty guest is never broken by the cap.
#[derive(Debug, Clone)]
pub struct CappedPipe {
    inner: Arc<Mutex<CapBuf>>,
}

#[derive(Debug)]
struct CapBuf {
    data: Vec<u8>,
    cap: usize,
    dropped: u64,
}

impl CappedPipe {
    /// A pipe keeping at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        CappedPipe {
            inner: Arc::new(Mutex::new(CapBuf {
                data: Vec::new(),
                cap,
                dropped: 0,
            })),
        }
    }

    /// The kept bytes (lossy UTF-8) and the number of bytes dropped.
    pub fn take(&self) -> (String, u64) {
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&b.data).into_owned();
        b.data.clear();
        (text, std::mem::take(&mut b.dropped))
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let room = b.cap.saturating_sub(b.data.len());
        let keep = room.min(buf.len());
        b.data.extend_from_slice(&buf[..keep]);
        b.dropped += (buf.len() - keep) as u64;
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Denials met during one call, with the policy line that would allow each.
pub type Denials = Arc<Mutex<Vec<String>>>;

/// Records a denial (logged, and kept for the call's error message; at most 32 per call).
/// The text may quote guest-chosen names, so it is cleaned of control characters.
pub(crate) fn record_denial(denials: &Denials, msg: String) {
    let msg = crate::reports::clean(&msg, 1024);
    tracing::info!(target: "toolhost::sandbox", "{msg}");
    let mut d = denials.lock().unwrap_or_else(|e| e.into_inner());
    if d.len() < 32 {
        d.push(msg);
    }
}

/// The wasi:http gate: every outgoing request is checked against the allowlist on scheme,
/// host and port before a connection is opened.
pub struct HttpGate {
    allow: NetAllow,
    declared_network: bool,
    policy_file: String,
    denials: Denials,
}

impl WasiHttpHooks for HttpGate {
    fn send_request(
        &mut self,
        request: http::Request<wasmtime_wasi_http::WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<wasmtime_wasi_http::WasiBody>,
                        Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                    ),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        drop(fut);
        let uri = request.uri();
        let scheme = uri.scheme_str().unwrap_or("https").to_ascii_lowercase();
        if uri
            .authority()
            .is_some_and(|a| crate::net::has_userinfo(a.as_str()))
        {
            record_denial(
                &self.denials,
                format!(
                    "network access to {scheme}://… denied: the URL carries user information (`user@host`), which is never allowed"
                ),
            );
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        let host = uri.host().unwrap_or("").to_string();
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "http" { 80 } else { 443 });
        if !self.allow.allows_url(&scheme, &host, port) {
            let default = if scheme == "http" { 80 } else { 443 };
            let target = if port == default {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}:{port}")
            };
            let msg = if self.declared_network {
                format!(
                    "network access to {target} denied: not in the allowlist; to allow it add \"{target}\" to `network` in {}",
                    self.policy_file
                )
            } else {
                format!(
                    "network access to {target} denied: the tool did not declare the Network permission"
                )
            };
            record_denial(&self.denials, msg);
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        // The allowlist matched the URL's host *name*. A name must not be a way into the
        // host's own network (DNS rebinding, wildcard entries such as `*.nip.io`): it is
        // resolved here, once; every address must be public; and the request (http or
        // https) is sent to the vetted address with no second lookup (the Host header and
        // the TLS server name keep the name). Loopback, private and link-local addresses
        // are reachable only through an IP-literal entry.
        let denials = self.denials.clone();
        let policy_file = self.policy_file.clone();
        Box::new(async move {
            use http_body_util::BodyExt;
            let bare = host.trim_matches(['[', ']']);
            if bare.parse::<std::net::IpAddr>().is_ok() {
                // An IP literal: connecting needs no lookup.
                let (res, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
                return Ok((
                    res.map(BodyExt::boxed_unsync),
                    Box::new(io) as Box<dyn Future<Output = _> + Send>,
                ));
            }
            let name = host.strip_suffix('.').unwrap_or(&host).to_string();
            let addrs: Vec<SocketAddr> = match tokio::net::lookup_host((name.as_str(), port)).await
            {
                Ok(a) => a.collect(),
                Err(e) => {
                    return Err(wasmtime_wasi_http::Error::DnsError {
                        rcode: Some(e.to_string()),
                        info_code: None,
                    });
                }
            };
            if let Some(bad) = addrs.iter().find(|a| crate::net::is_internal(a.ip())) {
                let ip = bad.ip();
                let literal = if ip.is_ipv6() {
                    format!("[{ip}]")
                } else {
                    ip.to_string()
                };
                record_denial(
                    &denials,
                    format!(
                        "network access to {scheme}://{host}:{port} denied: the name resolves to the internal address {ip}, and names may only reach public addresses; to allow it add \"{scheme}://{literal}:{port}\" to `network` in {policy_file} and use that URL"
                    ),
                );
                return Err(wasmtime_wasi_http::Error::HttpRequestDenied);
            }
            let Some(first) = addrs.first() else {
                return Err(wasmtime_wasi_http::Error::DestinationNotFound);
            };
            let tls_name = (scheme == "https").then_some(name.as_str());
            crate::pinned::send(request, options, *first, tls_name).await
        })
    }
}

/// The data of one call's `Store`.
pub struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    pub(crate) table: ResourceTable,
    pub(crate) gate: HttpGate,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) stopped: Option<StopReason>,
    pub(crate) plugin: Arc<str>,
    pub(crate) tool: Arc<str>,
    pub(crate) ctx: Option<ToolContext>,
    pub(crate) reports: Mutex<Reports>,
    pub(crate) may_delete: bool,
    pub(crate) allow: NetAllow,
    pub(crate) denials: Denials,
    pub(crate) stdout: CappedPipe,
    pub(crate) stderr: CappedPipe,
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
    pub policy: &'a Policy,
    pub ctx: Option<ToolContext>,
}

impl HostState {
    /// Builds the sandbox of one call. Fails if a granted folder could not be opened at
    /// load or was replaced since (see [`crate::dirs`]).
    pub(crate) fn new(spec: StateSpec<'_>) -> Result<Self, StoreError> {
        let g = spec.grant;
        let denials: Denials = Arc::new(Mutex::new(Vec::new()));
        let stdout = CappedPipe::new(spec.policy.output_bytes);
        let stderr = CappedPipe::new(spec.policy.output_bytes);
        let mut b = WasiCtxBuilder::new();
        b.stdout(stdout.clone()).stderr(stderr.clone());
        for name in &g.env {
            if let Ok(v) = std::env::var(name) {
                b.env(name, v);
            }
        }
        // The preopens come from the handles opened at load (a Grant built by hand,
        // without them, gets handles opened now, for this call).
        let fresh;
        let held = if g.held.holds(&g.read, &g.write) {
            &g.held
        } else {
            fresh = HeldDirs::open(&g.read, &g.write, &g.write);
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
        let allow = NetAllow::new(g.network.clone());
        let allow_copy = allow.clone();
        if g.sockets {
            b.allow_tcp(true)
                .allow_udp(false)
                .allow_ip_name_lookup(true);
            let allow = allow.clone();
            let denials = denials.clone();
            let file = spec.policy.file_name();
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
                policy_file: spec.policy.file_name(),
                denials: denials.clone(),
            },
            limiter: MemoryLimiter::new(spec.policy.memory_bytes),
            stopped: None,
            plugin: spec.plugin,
            tool: spec.tool,
            ctx: spec.ctx,
            reports: Mutex::new(Reports::default()),
            may_delete: g.delete,
            allow: allow_copy,
            denials,
            stdout,
            stderr,
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
                let text = text.trim_end().escape_debug().to_string();
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
