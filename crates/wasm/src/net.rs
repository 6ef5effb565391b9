//! The network allowlist: `scheme://host[:port]` rules with `*.` wildcards, checked on
//! scheme, host and port for wasi:http, and on resolved IPs for raw sockets.

use std::net::{IpAddr, SocketAddr};

/// One allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRule {
    /// `http` or `https`.
    pub scheme: String,
    /// The host, lowercase; `*.example.com` matches any subdomain (not the apex).
    pub host: String,
    /// The port (the scheme's default when not written).
    pub port: u16,
    /// The rule as written.
    pub text: String,
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

impl NetRule {
    /// Parses `scheme://host[:port]` (no path, query or credentials).
    pub fn parse(text: &str) -> Result<Self, String> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| "expected scheme://host[:port]".to_string())?;
        let scheme = scheme.to_ascii_lowercase();
        let default = default_port(&scheme)
            .ok_or_else(|| format!("unsupported scheme {scheme:?} (use http or https)"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return Err("expected only scheme://host[:port], without path, query or user".into());
        }
        let (host, port) = split_host_port(rest)?;
        let port = port.unwrap_or(default);
        let wildcard_body = host.strip_prefix("*.").unwrap_or(&host);
        if wildcard_body.is_empty() || wildcard_body.contains('*') {
            return Err("a wildcard may only be a leading `*.`".into());
        }
        Ok(NetRule {
            scheme,
            host,
            port,
            text: text.to_string(),
        })
    }

    /// Whether a request to `scheme://host:port` matches this rule.
    pub fn matches(&self, scheme: &str, host: &str, port: u16) -> bool {
        if !self.scheme.eq_ignore_ascii_case(scheme) || self.port != port {
            return false;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match self.host.strip_prefix("*.") {
            Some(suffix) => host.len() > suffix.len() + 1 && host.ends_with(&format!(".{suffix}")),
            None => self.host.trim_start_matches('[').trim_end_matches(']') == host,
        }
    }

    /// The literal IP of this rule's host, if it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()
    }
}

fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let s = s.to_ascii_lowercase();
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or("unclosed [ in IPv6 host")?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse::<u16>().map_err(|_| format!("bad port {p:?}"))?),
            None if after.is_empty() => None,
            None => return Err(format!("unexpected {after:?} after IPv6 host")),
        };
        return Ok((format!("[{h}]"), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) => Ok((
            h.to_string(),
            Some(p.parse::<u16>().map_err(|_| format!("bad port {p:?}"))?),
        )),
        None => Ok((s, None)),
    }
}

/// The allowlist of one call.
#[derive(Debug, Clone, Default)]
pub struct NetAllow {
    rules: Vec<NetRule>,
}

impl NetAllow {
    /// An allowlist of these rules (empty: everything denied).
    pub fn new(rules: Vec<NetRule>) -> Self {
        NetAllow { rules }
    }

    /// Whether `scheme://host:port` is allowed.
    pub fn allows_url(&self, scheme: &str, host: &str, port: u16) -> bool {
        self.rules.iter().any(|r| r.matches(scheme, host, port))
    }

    /// Whether a raw socket to `addr` is allowed: a rule with that literal IP and port, or
    /// a rule whose (non-wildcard) host resolves to that IP when the IP is public.
    pub async fn allows_addr(&self, addr: SocketAddr) -> bool {
        for r in &self.rules {
            if r.port != addr.port() {
                continue;
            }
            if let Some(ip) = r.ip() {
                if ip == addr.ip() {
                    return true;
                }
                continue;
            }
            // A name never leads to an internal address (see `is_internal`): those need
            // an IP-literal rule, as for wasi:http.
            if r.host.starts_with("*.") || is_internal(addr.ip()) {
                continue;
            }
            if let Ok(mut addrs) = tokio::net::lookup_host((r.host.as_str(), r.port)).await
                && addrs.any(|a| a.ip() == addr.ip())
            {
                return true;
            }
        }
        false
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> NetRule {
        NetRule::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn scheme_host_port_and_wildcards() {
        let r = rule("https://*.github.com");
        assert!(r.matches("https", "api.github.com", 443));
        assert!(r.matches("https", "a.b.github.com", 443));
        assert!(!r.matches("https", "github.com", 443));
        assert!(!r.matches("https", "evilgithub.com", 443));
        assert!(!r.matches("http", "api.github.com", 443));
        assert!(!r.matches("https", "api.github.com", 8443));
        let r = rule("http://127.0.0.1:8080");
        assert!(r.matches("http", "127.0.0.1", 8080));
        assert!(!r.matches("http", "127.0.0.1", 8081));
        assert_eq!(r.ip(), Some(IpAddr::from([127, 0, 0, 1])));
        assert!(NetRule::parse("https://x.com/path").is_err());
        assert!(NetRule::parse("https://a.*.com").is_err());
        assert!(NetRule::parse("gopher://x").is_err());
    }
}

/// Whether `ip` belongs to the host's own or a private network rather than the public
/// internet: unspecified, loopback, private (RFC 1918), shared (100.64/10), link-local,
/// benchmarking (198.18/15), reserved (240/4), broadcast, multicast; for IPv6 also unique
/// local (fc00::/7), link-local (fe80::/10), and IPv4-mapped/compatible forms of these.
pub fn is_internal(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4() {
                // ::ffff:a.b.c.d and the deprecated ::a.b.c.d
                return v6.is_loopback() || is_internal(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
        }
    }
}

#[cfg(test)]
mod internal_tests {
    use super::is_internal;

    #[test]
    fn internal_and_public_addresses() {
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(is_internal(a.parse().unwrap()), "{a} should be internal");
        }
        for a in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!is_internal(a.parse().unwrap()), "{a} should be public");
        }
    }
}
