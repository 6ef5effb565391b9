//! [`Capabilities`]: the capabilities and limits of a plugin, as the plugin requests them
//! (from its `NAME.toml`), as the operator approved them (in the lock) and as they are in
//! effect (the policy a plugin is loaded with, of which each tool's grant is the part its
//! declared permissions unlock). One type for all of them, and the two relations the
//! trust model rests on (docs/trust.md):
//!
//! - **within**: a request is within an approval when every folder it asks for lies inside
//!   a folder of the same kind that was approved (a read folder may also lie inside an
//!   approved write folder), every rule, env name and config key was approved, sockets only if
//!   approved, and no limit is higher;
//! - **intersection**: what a plugin gets is request ∩ approval, never wider than either:
//!   a granted folder is the requested one when an approved folder holds it, or the
//!   approved one when it lies inside the requested one.
//!
//! Folders compare **by path components** ([`Folder::inside`]); network rules by the
//! requests they allow ([`NetRule::within`], [`NetRule::intersect`]); env names and config
//! keys by name; limits are the values in force (the host fills in its defaults, so a
//! request and an approval compare value by value).

use serde::{Deserialize, Serialize};

use crate::folder::Folder;
use crate::net::NetRule;

/// Capabilities and limits: a plugin's request, or the operator's approval of one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Read-only folders.
    #[serde(default)]
    pub read: Vec<Folder>,
    /// Read-write folders.
    #[serde(default)]
    pub write: Vec<Folder>,
    /// Network allowlist rules.
    #[serde(default)]
    pub network: Vec<NetRule>,
    /// Raw TCP sockets to the allowlisted hosts.
    #[serde(default)]
    pub sockets: bool,
    /// Names of host environment variables passed in.
    #[serde(default)]
    pub env: Vec<String>,
    /// Keys of `wasi:config/store` the plugin may read (their values come from the
    /// operator's `[plugins.NAME.config]`, never from the lock).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<String>,
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

impl Capabilities {
    /// Whether this grant has any capability (folders, hosts, sockets, env, config keys).
    pub fn has_capabilities(&self) -> bool {
        !self.read.is_empty()
            || !self.write.is_empty()
            || !self.network.is_empty()
            || self.sockets
            || !self.env.is_empty()
            || !self.config.is_empty()
    }

    /// Whether everything this grant asks for was approved in `approved`: every folder,
    /// rule, env name and config key is in it, sockets only if approved, and no limit is
    /// higher.
    pub fn within(&self, approved: &Capabilities) -> bool {
        self.excess(approved).is_empty()
    }

    /// What this grant asks for beyond `approved`, one line each (`read /x`,
    /// `memory_mb 64 (approved 32)`).
    pub fn excess(&self, approved: &Capabilities) -> Vec<String> {
        let mut out = Vec::new();
        let approved_read: Vec<&Folder> = approved.read.iter().chain(&approved.write).collect();
        let approved_write: Vec<&Folder> = approved.write.iter().collect();
        for (key, mine, theirs) in [
            ("read", &self.read, &approved_read),
            ("write", &self.write, &approved_write),
        ] {
            for folder in mine {
                if !theirs.iter().any(|a| folder.inside(a)) {
                    out.push(format!("{key} {folder}"));
                }
            }
        }
        for rule in &self.network {
            if !approved.network.iter().any(|a| rule.within(a)) {
                out.push(format!("network {rule}"));
            }
        }
        for (key, mine, theirs) in [
            ("env", &self.env, &approved.env),
            ("config", &self.config, &approved.config),
        ] {
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

    /// Request ∩ approval: what a plugin with this request gets under `approved`. Never
    /// wider than either side ([`Capabilities::within`] both), folders compared on path
    /// components: a requested folder inside an approved one stays as requested; an
    /// approved folder inside a requested one is granted instead (narrower); unrelated
    /// folders are dropped. A network rule is the narrower of each related pair
    /// ([`NetRule::intersect`]); env names and config keys are kept when both sides name
    /// them, sockets when both allow them, each limit is the tighter one.
    pub fn intersect(&self, approved: &Capabilities) -> Capabilities {
        let approved_read: Vec<&Folder> = approved.read.iter().chain(&approved.write).collect();
        let approved_write: Vec<&Folder> = approved.write.iter().collect();
        let both = |mine: &[String], theirs: &[String]| -> Vec<String> {
            mine.iter()
                .filter(|i| theirs.contains(i))
                .cloned()
                .collect()
        };
        Capabilities {
            read: folders_in_both(&self.read, &approved_read),
            write: folders_in_both(&self.write, &approved_write),
            network: rules_in_both(&self.network, &approved.network),
            sockets: self.sockets && approved.sockets,
            env: both(&self.env, &approved.env),
            config: both(&self.config, &approved.config),
            timeout_ms: tighter_limit(self.timeout_ms, approved.timeout_ms),
            fuel: tighter_limit(self.fuel, approved.fuel),
            memory_mb: tighter_limit(self.memory_mb, approved.memory_mb),
            output_kb: tighter_limit(self.output_kb, approved.output_kb),
        }
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
        for (key, list) in [("read", &self.read), ("write", &self.write)] {
            out.extend(list.iter().map(|f| format!("{key} {f}")));
        }
        out.extend(self.network.iter().map(|r| format!("network {r}")));
        for (key, list) in [("env", &self.env), ("config", &self.config)] {
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

/// Whether folder `inner` lies inside folder `outer` or is it, on path components (see
/// [`Folder::inside`]), for paths held as text.
pub fn folder_inside(inner: &str, outer: &str) -> bool {
    Folder::from(inner).inside(&Folder::from(outer))
}

/// The folders both sides grant: each of `mine` held by one of `theirs`, and each of
/// `theirs` inside one of `mine` (the narrower of each related pair), without
/// duplicates and without a folder already inside another kept one.
fn folders_in_both(mine: &[Folder], theirs: &[&Folder]) -> Vec<Folder> {
    let mut out: Vec<Folder> = Vec::new();
    let mut keep = |f: &Folder| {
        if !out.iter().any(|o| f.inside(o)) {
            out.retain(|o| !o.inside(f));
            out.push(f.clone());
        }
    };
    for m in mine {
        if theirs.iter().any(|t| m.inside(t)) {
            keep(m);
        }
    }
    for t in theirs {
        if mine.iter().any(|m| t.inside(m)) {
            keep(t);
        }
    }
    out
}

/// The rules both sides allow: the intersection of each related pair, without one
/// already within another kept rule.
fn rules_in_both(mine: &[NetRule], theirs: &[NetRule]) -> Vec<NetRule> {
    let mut out: Vec<NetRule> = Vec::new();
    for m in mine {
        for t in theirs {
            if let Some(r) = m.intersect(t)
                && !out.iter().any(|o| r.within(o))
            {
                out.retain(|o| !o.within(&r));
                out.push(r);
            }
        }
    }
    out
}

fn show_limit(v: Option<u64>) -> String {
    v.map(|v| v.to_string())
        .unwrap_or_else(|| "unlimited".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<NetRule> {
        list.iter()
            .map(|r| NetRule::parse(r).unwrap_or_else(|e| panic!("{r}: {e}")))
            .collect()
    }

    fn folders(list: &[&str]) -> Vec<Folder> {
        list.iter().map(|f| Folder::from(*f)).collect()
    }

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
        let approved = Capabilities {
            read: vec!["/data".into()],
            network: rules(&["https://example.com"]),
            memory_mb: Some(32),
            timeout_ms: Some(1000),
            ..Capabilities::default()
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
        let metered = Capabilities {
            fuel: Some(10),
            ..approved.clone()
        };
        assert!(
            !req.within(&metered),
            "unmetered is more than a fuel budget"
        );
    }

    #[test]
    fn folders_compare_on_path_components() {
        assert!(folder_inside("/data/b", "/data/b"));
        assert!(folder_inside("/data/b/", "/data/b"));
        assert!(folder_inside("/data/b/c", "/data/b/"));
        assert!(
            !folder_inside("/data/bc", "/data/b"),
            "a string prefix is not a folder"
        );
        assert!(!folder_inside("/data", "/data/b"));
        assert!(
            !folder_inside("data/b", "/data"),
            "relative is never inside absolute"
        );
    }

    #[test]
    fn the_intersection_keeps_the_narrower_folder_of_each_related_pair() {
        let request = Capabilities {
            read: vec!["/data".into(), "/etc".into()],
            write: vec!["/out/logs".into()],
            network: rules(&["https://a.example", "https://b.example"]),
            env: vec!["HOME".into()],
            sockets: true,
            ..Capabilities::default()
        };
        let approved = Capabilities {
            read: vec!["/data/docs".into(), "/data/pics".into(), "/et".into()],
            write: vec!["/out".into()],
            network: rules(&["https://a.example"]),
            memory_mb: Some(32),
            ..Capabilities::default()
        };
        let got = request.intersect(&approved);
        assert_eq!(got.read, folders(&["/data/docs", "/data/pics"]));
        assert_eq!(got.write, folders(&["/out/logs"]));
        assert_eq!(got.network, rules(&["https://a.example"]));
        assert!(got.env.is_empty() && !got.sockets);
        assert_eq!(got.memory_mb, Some(32));
        // A read request inside an approved write folder is within the approval.
        let reader = Capabilities {
            read: vec!["/out/logs/today".into()],
            memory_mb: Some(16),
            ..Capabilities::default()
        };
        assert!(reader.within(&approved));
        assert_eq!(reader.intersect(&approved).read, reader.read);
        // A folder inside an approved one is within it; its string prefix is not.
        let mut inside = Capabilities {
            read: vec!["/data/docs/2026/".into()],
            memory_mb: Some(32),
            ..Capabilities::default()
        };
        assert!(inside.within(&approved));
        inside.read = vec!["/data/docsx".into()];
        assert_eq!(
            inside.excess(&approved),
            vec!["read /data/docsx".to_string()]
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Folders from a small vocabulary, so that pairs are often related: equal,
        /// nested, string prefixes of each other (`/a/b`, `/a/bc`), with and without a
        /// trailing `/`.
        fn folder() -> impl Strategy<Value = Folder> {
            (
                prop::collection::vec(prop::sample::select(vec!["a", "b", "bc", "ab"]), 1..4),
                any::<bool>(),
            )
                .prop_map(|(parts, slash)| {
                    Folder::from(format!(
                        "/{}{}",
                        parts.join("/"),
                        if slash { "/" } else { "" }
                    ))
                })
        }

        fn limit() -> impl Strategy<Value = Option<u64>> {
            prop::option::of(0u64..100)
        }

        fn capabilities() -> impl Strategy<Value = Capabilities> {
            let names = || {
                prop::collection::vec(prop::sample::select(vec!["x", "y", "z"]), 0..3)
                    .prop_map(|v| v.into_iter().map(String::from).collect::<Vec<_>>())
            };
            let network = prop::collection::vec(
                prop::sample::select(vec![
                    "https://example",
                    "https://a.example",
                    "https://*.example",
                    "https://*.a.example",
                    "http://a.example",
                    "https://a.example:8443",
                ]),
                0..3,
            )
            .prop_map(|v| rules(&v));
            (
                prop::collection::vec(folder(), 0..4),
                prop::collection::vec(folder(), 0..3),
                network,
                (names(), names()),
                any::<bool>(),
                (limit(), limit(), limit(), limit()),
            )
                .prop_map(|(read, write, network, (env, config), sockets, l)| {
                    Capabilities {
                        read,
                        write,
                        network,
                        sockets,
                        env,
                        config,
                        timeout_ms: l.0,
                        fuel: l.1,
                        memory_mb: l.2,
                        output_kb: l.3,
                    }
                })
        }

        /// Whether every folder of `a` lies inside one of `b`.
        fn covered(a: &[Folder], b: &[Folder]) -> bool {
            a.iter().all(|x| b.iter().any(|y| x.inside(y)))
        }

        /// Whether every rule of `a` is within one of `b`.
        fn allowed(a: &[NetRule], b: &[NetRule]) -> bool {
            a.iter().all(|x| b.iter().any(|y| x.within(y)))
        }

        proptest! {
            #[test]
            fn the_intersection_is_never_wider_than_either_side(
                request in capabilities(),
                approved in capabilities(),
            ) {
                let got = request.intersect(&approved);
                prop_assert!(got.within(&request), "wider than the request: {:?}", got.excess(&request));
                prop_assert!(got.within(&approved), "wider than the approval: {:?}", got.excess(&approved));
                prop_assert!(covered(&got.write, &request.write) && covered(&got.write, &approved.write));
            }

            #[test]
            fn a_request_within_its_approval_gets_all_it_asked_for(
                request in capabilities(),
                approved in capabilities(),
            ) {
                let got = request.intersect(&approved);
                if request.within(&approved) {
                    prop_assert!(covered(&request.read, &got.read), "{got:?}");
                    prop_assert!(covered(&request.write, &got.write), "{got:?}");
                    prop_assert!(allowed(&request.network, &got.network), "{got:?}");
                    prop_assert_eq!(&got.env, &request.env);
                    prop_assert_eq!(&got.config, &request.config);
                    prop_assert_eq!(got.sockets, request.sockets);
                }
                // And the intersection with itself changes nothing it grants.
                let same = request.intersect(&request);
                prop_assert!(covered(&request.read, &same.read), "{same:?}");
                prop_assert!(covered(&request.write, &same.write), "{same:?}");
            }

            #[test]
            fn inside_is_component_wise(a in folder(), b in folder()) {
                let (a, b) = (a.as_path(), b.as_path());
                let expected = a.components().count() >= b.components().count()
                    && a.components().zip(b.components()).all(|(x, y)| x == y);
                prop_assert_eq!(Folder::from(a).inside(&Folder::from(b)), expected);
            }
        }
    }
}
