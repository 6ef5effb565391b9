//! Network rules: `scheme://host[:port]` allowlist entries with `*.` wildcards, parsed
//! once ([`NetRule::parse`]) and compared as sets of the requests they allow
//! ([`NetRule::within`], [`NetRule::intersect`]), so a request and an approval are
//! related by what they permit, never by how they are written. The runtime checks them on
//! scheme, host and port for wasi:http, and on resolved IPs for raw sockets.
//!
//! Matching rules (see docs/security.md):
//! - a `*.` wildcard matches DNS names only, never an IP literal (`*.0.0.1` does not match
//!   `127.0.0.1`);
//! - host names are compared lowercase with one trailing dot removed (`example.com.` is
//!   `example.com`), on both the rule and the request;
//! - an authority carrying user information (`user@host`) is refused outright;
//! - [`is_internal`] lists the addresses a *name* may never lead to.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a `network` entry is not a rule ([`NetRule::parse`]). A policy file reports it as
/// ``policy FILE: `network` entry "TEXT": <this message>``.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NetRuleError {
    /// No `://`.
    #[error("expected scheme://host[:port]")]
    NoScheme,
    /// A scheme other than `http` or `https`.
    #[error("unsupported scheme {scheme:?} (use http or https)")]
    UnsupportedScheme {
        /// The scheme, lowercase.
        scheme: String,
    },
    /// Nothing after the scheme, or a path, query, fragment or user information.
    #[error("expected only scheme://host[:port], without path, query or user")]
    NotJustAuthority,
    /// A `*` anywhere but a leading `*.` (or a bare `*.`).
    #[error("a wildcard may only be a leading `*.`")]
    Wildcard,
    /// The host is neither an IP literal nor a DNS name.
    #[error(
        "\"{}\" is not an IP address or a DNS name (letters, digits, `-`, `_`, non-empty \
         dot-separated labels)",
        host.escape_debug()
    )]
    BadHost {
        /// The host, lowercase, without the wildcard.
        host: String,
    },
    /// `[` without its `]`.
    #[error("unclosed [ in IPv6 host")]
    UnclosedBracket,
    /// Something other than `:port` after a bracketed IPv6 host.
    #[error("unexpected {after:?} after IPv6 host")]
    AfterIpv6 {
        /// What follows the `]`.
        after: String,
    },
    /// The port is not a number from 0 to 65535.
    #[error("bad port {port:?}")]
    BadPort {
        /// The port as written.
        port: String,
    },
}

/// One allowlist entry. In files (a request, the lock) it is the text as written, parsed
/// when read: a rule that does not parse is refused there, never carried as a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
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
    pub fn parse(text: &str) -> Result<Self, NetRuleError> {
        let (scheme, rest) = text.split_once("://").ok_or(NetRuleError::NoScheme)?;
        let scheme = scheme.to_ascii_lowercase();
        let Some(default) = default_port(&scheme) else {
            return Err(NetRuleError::UnsupportedScheme { scheme });
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return Err(NetRuleError::NotJustAuthority);
        }
        let (host, port) = split_host_port(rest)?;
        let host = normalize_host(&host).to_string();
        let port = port.unwrap_or(default);
        let wildcard_body = host.strip_prefix("*.").unwrap_or(&host);
        if wildcard_body.is_empty() || wildcard_body.contains('*') {
            return Err(NetRuleError::Wildcard);
        }
        check_host(wildcard_body)?;
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
        if host.contains('@') {
            return false;
        }
        let host = host.to_ascii_lowercase();
        let host = normalize_host(&host);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match self.host.strip_prefix("*.") {
            // Wildcards are for DNS names: an IP literal never matches one.
            Some(suffix) => host.parse::<IpAddr>().is_err() && under(host, suffix),
            None => self.host.trim_start_matches('[').trim_end_matches(']') == host,
        }
    }

    /// Whether `name` (a DNS name to look up, as wasi:sockets ip-name-lookup gets it) is
    /// named by this rule: equal to its host, or under its `*.` wildcard. IP literals are
    /// not names and never match here.
    pub fn names(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let name = normalize_host(&name);
        if name.is_empty() || name.parse::<IpAddr>().is_ok() || self.ip().is_some() {
            return false;
        }
        match self.host.strip_prefix("*.") {
            Some(suffix) => under(name, suffix),
            None => self.host == name,
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

    /// Whether every request this rule allows, `outer` allows too: the same scheme and
    /// port, and a host set inside `outer`'s (the same host; a DNS name under `outer`'s
    /// `*.` wildcard; a wildcard under `outer`'s wildcard). A wildcard is never within a
    /// single host, and an IP literal never within a wildcard.
    pub fn within(&self, outer: &NetRule) -> bool {
        if self.scheme != outer.scheme || self.port != outer.port {
            return false;
        }
        match (self.host.strip_prefix("*."), outer.host.strip_prefix("*.")) {
            (None, None) => self.host == outer.host,
            (None, Some(suffix)) => self.ip().is_none() && under(&self.host, suffix),
            (Some(_), None) => false,
            (Some(mine), Some(suffix)) => mine == suffix || under(mine, suffix),
        }
    }

    /// The rule allowing exactly the requests both rules allow, if any. Two rules' host
    /// sets are either nested or apart (a wildcard's set is every name under a suffix),
    /// so the intersection is the narrower rule, or nothing.
    pub fn intersect(&self, other: &NetRule) -> Option<NetRule> {
        if self.within(other) {
            Some(self.clone())
        } else if other.within(self) {
            Some(other.clone())
        } else {
            None
        }
    }
}

/// Whether DNS name `host` lies strictly under `suffix` (`a.b.example` under `example`),
/// the set a `*.suffix` wildcard matches.
fn under(host: &str, suffix: &str) -> bool {
    host.strip_suffix(suffix)
        .and_then(|h| h.strip_suffix('.'))
        .is_some_and(|h| !h.is_empty())
}

impl TryFrom<String> for NetRule {
    type Error = NetRuleError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        NetRule::parse(&text)
    }
}

impl From<NetRule> for String {
    fn from(rule: NetRule) -> String {
        rule.text
    }
}

impl std::fmt::Display for NetRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// `host` without one trailing dot (the fully-qualified form names the same host).
/// A rule's host must be an IP literal (IPv6 in brackets) or a DNS name: dot-separated
/// labels of letters, digits, `-` and `_`, none empty, at most 63 bytes each and 253 in
/// all. Anything else (control characters, empty labels, stray punctuation) could never
/// match a request, or match one it should not, so it is refused at parse time.
fn check_host(host: &str) -> Result<(), NetRuleError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        return Ok(());
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(NetRuleError::BadHost {
            host: host.to_string(),
        });
    }
    Ok(())
}

fn normalize_host(host: &str) -> &str {
    host.strip_suffix('.').unwrap_or(host)
}

/// Whether a request authority (`[user[:pass]@]host[:port]`) carries user information,
/// which the gate refuses: credentials do not belong in a URL a tool builds, and `@` is a
/// classic way to make a URL look like it goes somewhere else.
pub fn has_userinfo(authority: &str) -> bool {
    authority.contains('@')
}

fn split_host_port(s: &str) -> Result<(String, Option<u16>), NetRuleError> {
    let parse_port = |p: &str| {
        p.parse::<u16>().map_err(|_| NetRuleError::BadPort {
            port: p.to_string(),
        })
    };
    let s = s.to_ascii_lowercase();
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or(NetRuleError::UnclosedBracket)?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(p)?),
            None if after.is_empty() => None,
            None => {
                return Err(NetRuleError::AfterIpv6 {
                    after: after.to_string(),
                });
            }
        };
        return Ok((format!("[{h}]"), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), Some(parse_port(p)?))),
        None => Ok((s, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_say_what_is_wrong() {
        let msg = |t: &str| NetRule::parse(t).unwrap_err().to_string();
        assert_eq!(msg("example.com"), "expected scheme://host[:port]");
        assert_eq!(
            msg("FTP://x"),
            "unsupported scheme \"ftp\" (use http or https)"
        );
        assert_eq!(
            msg("https://x.com/p"),
            "expected only scheme://host[:port], without path, query or user"
        );
        assert_eq!(
            msg("https://a.*.com"),
            "a wildcard may only be a leading `*.`"
        );
        assert_eq!(
            msg("https://a..b"),
            "\"a..b\" is not an IP address or a DNS name (letters, digits, `-`, `_`, \
             non-empty dot-separated labels)"
        );
        assert_eq!(msg("https://[::1"), "unclosed [ in IPv6 host");
        assert_eq!(msg("https://[::1]x"), "unexpected \"x\" after IPv6 host");
        assert_eq!(msg("https://x.com:99999"), "bad port \"99999\"");
        assert_eq!(msg("https://[::1]:no"), "bad port \"no\"");
    }

    #[test]
    fn hosts_that_are_neither_ips_nor_dns_names_are_refused() {
        // Found by the fuzzer: a host with NULs and empty labels parsed, then could not
        // match itself.
        for bad in [
            "http://127.0.1..1\0\0>08.1..",
            "http://a..b",
            "http://exa mple.com",
            "https://*.",
            "http://bad\u{1b}[2J.com",
        ] {
            assert!(NetRule::parse(bad).is_err(), "{bad:?} parsed");
        }
        for good in [
            "http://127.0.0.1:8080",
            "https://[::1]",
            "https://*.github.com",
            "http://my_host.local.",
        ] {
            let r = NetRule::parse(good).unwrap_or_else(|e| panic!("{good}: {e}"));
            if !r.host.starts_with("*.") {
                assert!(r.matches(&r.scheme, &r.host, r.port), "{good}");
            }
        }
    }

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

    #[test]
    fn wildcards_never_match_ip_literals() {
        let r = rule("http://*.0.0.1");
        assert!(!r.matches("http", "127.0.0.1", 80));
        assert!(r.matches("http", "a.0.0.1", 80));
        let r = rule("http://*.1");
        assert!(!r.matches("http", "10.0.0.1", 80));
        assert!(!r.matches("http", "[::1]", 80));
        assert!(!r.names("127.0.0.1"));
    }

    #[test]
    fn userinfo_is_refused_in_rules_and_requests() {
        assert!(NetRule::parse("https://user@example.com").is_err());
        assert!(NetRule::parse("https://user:pw@example.com").is_err());
        let r = rule("https://example.com");
        assert!(!r.matches("https", "user@example.com", 443));
        assert!(has_userinfo("evil.com@example.com:443"));
        assert!(!has_userinfo("example.com:443"));
    }

    #[test]
    fn trailing_dot_is_normalised() {
        let r = rule("https://example.com.");
        assert_eq!(r.host, "example.com");
        assert!(r.matches("https", "example.com", 443));
        assert!(r.matches("https", "EXAMPLE.com.", 443));
        let r = rule("https://*.example.com");
        assert!(r.matches("https", "api.example.com.", 443));
        assert!(!r.matches("https", "example.com.", 443));
        assert!(!r.matches("https", "api.example.com..", 443));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Rules from a small vocabulary, so pairs are often related: nested wildcards,
        /// names under them, an IP literal under a wildcard's text, other ports.
        fn a_rule() -> impl Strategy<Value = NetRule> {
            (
                prop::sample::select(vec!["http", "https"]),
                prop::sample::select(vec![
                    "example",
                    "a.example",
                    "b.a.example",
                    "*.example",
                    "*.a.example",
                    "*.b.a.example",
                    "ab.example",
                    "*.b.example",
                    "127.0.0.1",
                    "*.0.0.1",
                ]),
                prop::option::of(prop::sample::select(vec![80u16, 443, 8080])),
            )
                .prop_map(|(scheme, host, port)| {
                    let text = match port {
                        Some(p) => format!("{scheme}://{host}:{p}"),
                        None => format!("{scheme}://{host}"),
                    };
                    rule(&text)
                })
        }

        /// A request, as wasi:http presents it: scheme, host, port.
        fn a_request() -> impl Strategy<Value = (&'static str, &'static str, u16)> {
            (
                prop::sample::select(vec!["http", "https"]),
                prop::sample::select(vec![
                    "example",
                    "a.example",
                    "b.a.example",
                    "c.b.a.example",
                    "x.example",
                    "ab.example",
                    "b.example",
                    "x.b.example",
                    "127.0.0.1",
                    "x.0.0.1",
                ]),
                prop::sample::select(vec![80u16, 443, 8080]),
            )
        }

        proptest! {
            #[test]
            fn within_means_every_request_allowed_is_allowed_by_the_outer_rule(
                a in a_rule(), b in a_rule(), reqs in prop::collection::vec(a_request(), 16),
            ) {
                if a.within(&b) {
                    for (scheme, host, port) in reqs {
                        if a.matches(scheme, host, port) {
                            prop_assert!(b.matches(scheme, host, port), "{a} within {b}, but {scheme}://{host}:{port}");
                        }
                    }
                }
            }

            #[test]
            fn the_intersection_allows_exactly_what_both_allow(
                a in a_rule(), b in a_rule(), reqs in prop::collection::vec(a_request(), 16),
            ) {
                let both = a.intersect(&b);
                if let Some(c) = &both {
                    prop_assert!(c.within(&a) && c.within(&b), "{c} from {a} and {b}");
                }
                for (scheme, host, port) in reqs {
                    let by_both = a.matches(scheme, host, port) && b.matches(scheme, host, port);
                    let by_c = both.as_ref().is_some_and(|c| c.matches(scheme, host, port));
                    prop_assert_eq!(by_both, by_c, "{} ∩ {} on {}://{}:{}", a, b, scheme, host, port);
                }
            }
        }
    }

    #[test]
    fn rules_relate_by_what_they_allow() {
        let within = |a: &str, b: &str| rule(a).within(&rule(b));
        assert!(within("https://api.github.com", "https://*.github.com"));
        assert!(within("https://*.api.github.com", "https://*.github.com"));
        assert!(within(
            "https://API.github.com.",
            "https://api.github.com:443"
        ));
        assert!(!within("https://github.com", "https://*.github.com"));
        assert!(!within("https://*.github.com", "https://api.github.com"));
        assert!(!within("https://evilgithub.com", "https://*.github.com"));
        assert!(!within("http://api.github.com", "https://*.github.com"));
        assert!(!within(
            "https://api.github.com:8443",
            "https://*.github.com"
        ));
        assert!(!within("http://127.0.0.1", "http://*.0.0.1"));
        let got = rule("https://*.github.com").intersect(&rule("https://api.github.com"));
        assert_eq!(
            got.map(|r| r.text),
            Some("https://api.github.com".to_string())
        );
        assert_eq!(
            rule("https://a.example").intersect(&rule("https://b.example")),
            None
        );
    }

    #[test]
    fn a_rule_is_its_text_in_files() {
        let r = rule("https://*.Example.com:8443");
        let json = serde_json::to_string(&r).unwrap_or_default();
        assert_eq!(json, "\"https://*.Example.com:8443\"");
        let back: NetRule = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, r);
        let bad = serde_json::from_str::<NetRule>("\"ftp://x\"");
        assert!(bad.is_err_and(|e| e.to_string().contains("unsupported scheme")));
    }
}

/// Whether `ip` belongs to the host's own or a private network rather than the public
/// internet: unspecified, loopback, private (RFC 1918), shared (100.64/10), link-local,
/// IETF protocol assignments (192.0.0/24), documentation ranges, benchmarking (198.18/15),
/// reserved (240/4), broadcast, multicast; for IPv6 also unique local (fc00::/7),
/// link-local (fe80::/10), site-local (fec0::/10), documentation (2001:db8::/32), and every
/// form that embeds an IPv4 address or tunnels to one: IPv4-mapped/compatible, NAT64
/// (64:ff9b::/96 and the local-use 64:ff9b:1::/48), 6to4 (2002::/16) and Teredo
/// (2001::/32). A tunnelled address is internal however public its embedded IPv4 looks:
/// the relay or translator that would carry it may sit inside the host's network.
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
                || (o[0] == 192 && o[1] == 0 && o[2] == 0)
                || (o[0] == 192 && o[1] == 0 && o[2] == 2)
                || (o[0] == 198 && o[1] == 51 && o[2] == 100)
                || (o[0] == 203 && o[1] == 0 && o[2] == 113)
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
                || (s[0] & 0xffc0) == 0xfec0
                // NAT64 well-known prefix (64:ff9b::/96) and local-use prefix (64:ff9b:1::/48)
                || (s[0] == 0x64 && s[1] == 0xff9b)
                // 6to4
                || s[0] == 0x2002
                // Teredo (2001:0::/32) and documentation (2001:db8::/32)
                || (s[0] == 0x2001 && (s[1] == 0 || s[1] == 0xdb8))
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
            "192.0.0.1",
            "192.0.0.170",
            "64:ff9b::7f00:1",
            "64:ff9b::808:808",
            "64:ff9b:1::a00:1",
            "2002:7f00:1::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:db8::1",
            "fec0::1",
        ] {
            assert!(is_internal(a.parse().unwrap()), "{a} should be internal");
        }
        for a in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "192.0.1.1",
            "2001:4860:4860::8888",
            "2a00:1450:4001::1",
        ] {
            assert!(!is_internal(a.parse().unwrap()), "{a} should be public");
        }
    }
}
