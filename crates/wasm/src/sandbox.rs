//! Grants → a per-call WASI context: filesystem preopens, the wasi:http allowlist
//! (enforced in [`WasiHttpHooks::send_request`]), raw sockets (off unless granted, checked
//! on resolved IPs), environment variables, and captured, size-capped stdout/stderr.
//!
//! The effective grant of a tool is what it **declared** ∩ what the **policy** offers:
//!
//! | policy key | needs declared | becomes |
//! |---|---|---|
//! | `read` | Read, Write or FileSystem | read-only preopen at the same path |
//! | `write` | Write | read-write preopen at the same path (also allows delete) |
//! | `network` | Network | wasi:http allowlist (scheme, host, port) |
//! | `sockets` | Network | TCP to allowlisted IP:port (resolved) |
//! | `env` | (nothing) | the named host variables |

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

use crate::limits::{MemoryLimiter, StopReason};
use crate::net::{NetAllow, NetRule};
use crate::policy::Policy;

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

fn push(denials: &Denials, msg: String) {
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
            push(&self.denials, msg);
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        // The allowlist matched the URL's host *name*. A name must not be a way into the
        // host's own network (DNS rebinding, wildcard entries such as `*.nip.io`): it is
        // resolved here, every address must be public, and plain-http requests are sent to
        // the vetted address (the Host header keeps the name). Loopback, private and
        // link-local addresses are reachable only through an IP-literal entry.
        let denials = self.denials.clone();
        let policy_file = self.policy_file.clone();
        Box::new(async move {
            use http_body_util::BodyExt;
            let mut request = request;
            if host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_err()
            {
                let addrs: Vec<SocketAddr> =
                    match tokio::net::lookup_host((host.as_str(), port)).await {
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
                    push(
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
                if scheme == "http" {
                    // Connect to the address just checked, not to whatever a second lookup
                    // would return. (For https, TLS verification of the name protects.)
                    match pin_authority(request.uri(), first.ip(), port) {
                        Some(uri) => *request.uri_mut() = uri,
                        None => return Err(wasmtime_wasi_http::Error::HttpRequestUriInvalid),
                    }
                }
            }
            let (res, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((
                res.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = _> + Send>,
            ))
        })
    }
}

/// `uri` with its authority replaced by `ip:port` (scheme, path and query kept).
fn pin_authority(uri: &http::Uri, ip: std::net::IpAddr, port: u16) -> Option<http::Uri> {
    let authority = match ip {
        std::net::IpAddr::V4(ip) => format!("{ip}:{port}"),
        std::net::IpAddr::V6(ip) => format!("[{ip}]:{port}"),
    };
    let mut parts = uri.clone().into_parts();
    parts.authority = Some(authority.parse().ok()?);
    http::Uri::from_parts(parts).ok()
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
    pub(crate) log_lines: u32,
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
    /// Builds the sandbox of one call. Fails only if a preopen directory vanished.
    pub(crate) fn new(spec: StateSpec<'_>) -> Result<Self, String> {
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
        for dir in &g.read {
            let guest = dir.to_string_lossy().into_owned();
            b.preopened_dir(dir, guest, FsPerms::ReadOnly)
                .map_err(|e| format!("cannot open read dir {}: {e}", dir.display()))?;
        }
        for dir in &g.write {
            let guest = dir.to_string_lossy().into_owned();
            b.preopened_dir(dir, guest, FsPerms::ReadWrite)
                .map_err(|e| format!("cannot open write dir {}: {e}", dir.display()))?;
        }
        let allow = NetAllow::new(g.network.clone());
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
                                push(
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
            log_lines: 0,
            denials,
            stdout,
            stderr,
        })
    }

    /// Sends the captured stdout/stderr to `tracing` (never to the terminal).
    pub(crate) fn flush_output(&self) {
        for (stream, pipe) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            let (text, dropped) = pipe.take();
            if !text.is_empty() {
                tracing::info!(target: "toolhost::guest", plugin = %self.plugin, tool = %self.tool, stream, "{}", text.trim_end());
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

#[cfg(test)]
mod tests {
    use super::pin_authority;

    #[test]
    fn pinning_keeps_scheme_path_and_query() {
        let uri: http::Uri = "http://example.com/a/b?c=d".parse().unwrap();
        let ip = "93.184.216.34".parse().unwrap();
        let pinned = pin_authority(&uri, ip, 80).unwrap();
        assert_eq!(pinned.to_string(), "http://93.184.216.34:80/a/b?c=d");
        let ip6 = "2606:2800:220:1::1".parse().unwrap();
        let pinned = pin_authority(&uri, ip6, 8080).unwrap();
        assert_eq!(
            pinned.to_string(),
            "http://[2606:2800:220:1::1]:8080/a/b?c=d"
        );
    }
}
