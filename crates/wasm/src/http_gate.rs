//! [`HttpGate`]: the wasi:http hook of a call. Every outgoing request is checked against
//! the allowlist on scheme, host and port before a connection is opened; an allowlisted
//! name may only reach public addresses, and the request is sent to the vetted address
//! (no second lookup, so no DNS rebinding). Denials are recorded with the policy line
//! that would allow them.

use std::net::SocketAddr;

use wasmtime_wasi_http::WasiHttpHooks;

use crate::denials::{Denials, record_denial};
use crate::net::NetAllow;

/// The wasi:http gate: every outgoing request is checked against the allowlist on scheme,
/// host and port before a connection is opened.
pub struct HttpGate {
    pub(crate) allow: NetAllow,
    pub(crate) declared_network: bool,
    pub(crate) policy_file: String,
    pub(crate) denials: Denials,
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
