//! A grant: the concrete capabilities and limits of a plugin, as the plugin requests them
//! (from its `NAME.toml`) or as the operator approved them (in the lock).
//!
//! Folders are absolute, normalised paths; network entries are allowlist rules as written
//! (`scheme://host[:port]`); limits are the values in force (the host fills in its
//! defaults, so a request and an approval compare value by value).

use serde::{Deserialize, Serialize};

/// Capabilities and limits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// Read-only folders.
    #[serde(default)]
    pub read: Vec<String>,
    /// Read-write folders.
    #[serde(default)]
    pub write: Vec<String>,
    /// Network allowlist rules.
    #[serde(default)]
    pub network: Vec<String>,
    /// Raw TCP sockets to the allowlisted hosts.
    #[serde(default)]
    pub sockets: bool,
    /// Names of host environment variables passed in.
    #[serde(default)]
    pub env: Vec<String>,
    /// Wall-clock deadline per call, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Fuel per call (absent: not metered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Linear-memory cap per call, MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    /// Cap of captured stdout/stderr, KiB each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_kb: Option<u64>,
}

/// `small <= big` for limits, where `None` means "no limit" for fuel and "the host
/// default" elsewhere (both sides are filled by the same host, so equal `None`s match).
fn limit_within(small: Option<u64>, big: Option<u64>) -> bool {
    match (small, big) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(s), Some(b)) => s <= b,
    }
}

/// The tighter of two limits of the same kind, `None` being "no limit": what a plugin
/// gets when both its request and the approval bound it. The counterpart of
/// `limit_within`: `tighter_limit(a, b)` is within both `a` and `b`.
pub fn tighter_limit(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (x, None) | (None, x) => x,
    }
}

impl Grant {
    /// Whether this grant has any capability (folders, hosts, sockets, env).
    pub fn has_capabilities(&self) -> bool {
        !self.read.is_empty()
            || !self.write.is_empty()
            || !self.network.is_empty()
            || self.sockets
            || !self.env.is_empty()
    }

    /// Whether everything this grant asks for was approved in `approved`: every folder,
    /// rule and env name is in it, sockets only if approved, and no limit is higher.
    pub fn within(&self, approved: &Grant) -> bool {
        self.excess(approved).is_empty()
    }

    /// What this grant asks for beyond `approved`, one line each (`read /x`,
    /// `memory_mb 64 (approved 32)`).
    pub fn excess(&self, approved: &Grant) -> Vec<String> {
        let mut out = Vec::new();
        let lists = [
            ("read", &self.read, &approved.read),
            ("write", &self.write, &approved.write),
            ("network", &self.network, &approved.network),
            ("env", &self.env, &approved.env),
        ];
        for (key, mine, theirs) in lists {
            for item in mine {
                if !theirs.contains(item) {
                    out.push(format!("{key} {item}"));
                }
            }
        }
        if self.sockets && !approved.sockets {
            out.push("sockets true".into());
        }
        for ((key, mine), (_, theirs)) in self.limits().into_iter().zip(approved.limits()) {
            if !limit_within(mine, theirs) {
                out.push(format!(
                    "{key} {} (approved {})",
                    show_limit(mine),
                    show_limit(theirs)
                ));
            }
        }
        out
    }

    fn limits(&self) -> [(&'static str, Option<u64>); 4] {
        [
            ("timeout_ms", self.timeout_ms),
            ("fuel", self.fuel),
            ("memory_mb", self.memory_mb),
            ("output_kb", self.output_kb),
        ]
    }

    /// The grant as lines (`read /x`, `memory_mb 32`, ...), for showing and diffing.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (key, list) in [
            ("read", &self.read),
            ("write", &self.write),
            ("network", &self.network),
            ("env", &self.env),
        ] {
            out.extend(list.iter().map(|i| format!("{key} {i}")));
        }
        if self.sockets {
            out.push("sockets true".into());
        }
        for (key, v) in self.limits() {
            if let Some(v) = v {
                out.push(format!("{key} {v}"));
            }
        }
        out
    }
}

fn show_limit(v: Option<u64>) -> String {
    v.map(|v| v.to_string())
        .unwrap_or_else(|| "unlimited".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tighter_limit_is_within_both() {
        let cases = [None, Some(0), Some(5), Some(u64::MAX)];
        for a in cases {
            for b in cases {
                let t = tighter_limit(a, b);
                assert!(
                    limit_within(t, a) && limit_within(t, b),
                    "{a:?} {b:?} -> {t:?}"
                );
                assert!(t == a || t == b, "{a:?} {b:?} -> {t:?}");
            }
        }
        assert_eq!(tighter_limit(None, None), None);
        assert_eq!(tighter_limit(Some(3), None), Some(3));
    }

    #[test]
    fn within_checks_lists_sockets_and_limits() {
        let approved = Grant {
            read: vec!["/data".into()],
            network: vec!["https://example.com".into()],
            memory_mb: Some(32),
            timeout_ms: Some(1000),
            ..Grant::default()
        };
        let mut req = approved.clone();
        assert!(req.within(&approved));
        req.read.clear();
        req.memory_mb = Some(16);
        assert!(req.within(&approved), "narrower is within");
        req.read.push("/".into());
        assert_eq!(req.excess(&approved), vec!["read /".to_string()]);
        let mut req = approved.clone();
        req.sockets = true;
        req.memory_mb = Some(64);
        assert_eq!(
            req.excess(&approved),
            vec![
                "sockets true".to_string(),
                "memory_mb 64 (approved 32)".into()
            ]
        );
        let mut req = approved.clone();
        req.fuel = None;
        let metered = Grant {
            fuel: Some(10),
            ..approved.clone()
        };
        assert!(
            !req.within(&metered),
            "unmetered is more than a fuel budget"
        );
    }
}
