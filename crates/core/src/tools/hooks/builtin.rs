//! The permission hooks toolhost ships, each driven by the host's `[permissions]` config:
//!
//! - [`DenyPaths`]: no argument may name a path matching a denied pattern (or lying under
//!   a denied folder), e.g. `~/.ssh/**`, `**/.env`, `/etc/shadow`;
//! - [`DenyHosts`]: no network tool may be pointed at a denied host, e.g.
//!   `169.254.169.254` (cloud metadata), `*.internal`;
//! - [`RateLimit`]: at most N calls of a tool per time window.
//!
//! What they can and cannot see: the arguments as the model wrote them, checked
//! **lexically** (`~` expanded, `.`/`..`/`//` folded, `file://` URLs read as paths).
//! They do not resolve symlinks or a tool's working folder: the capability grant of the
//! sandbox is the boundary, these hooks are an operator's early, explainable veto on top
//! of it (`docs/permissions.md`).

use std::collections::{HashMap, VecDeque};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use globset::{GlobSet, GlobSetBuilder};
use serde_json::Value;

use super::{HookCall, HookVerdict, PermissionHook};
use crate::tools::permission::Permission;

/// A hook setting that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HookConfigError {
    /// A path pattern is not a valid glob.
    #[error("deny_paths: {pattern:?} is not a valid glob pattern: {why}")]
    BadPathPattern {
        /// The pattern as written.
        pattern: String,
        /// The parser's message.
        why: String,
    },
    /// A host pattern is empty or has characters no host name has.
    #[error(
        "deny_hosts: {pattern:?} is not a host pattern (write `example.com`, `*.example.com` or an IP address)"
    )]
    BadHostPattern {
        /// The pattern as written.
        pattern: String,
    },
    /// A rate limit allows no call at all, or has a zero window.
    #[error(
        "rate_limits.{tool}: `calls` and `per_secs` must both be at least 1 (to forbid a tool, deny it in the policy instead)"
    )]
    BadRate {
        /// The tool the rule is for.
        tool: String,
    },
}

/// Most strings of one call's arguments a hook looks at; a call with more is denied
/// (fail closed) rather than checked in part. Far above any honest tool call.
const MAX_STRINGS: usize = 10_000;
/// Deepest nesting of arguments a hook walks; deeper is denied the same way.
const MAX_DEPTH: usize = 64;

/// Every string in `args` (object keys excluded) with the key it sits under, or `Err`
/// when the arguments exceed the walk bounds.
fn strings(args: &Value) -> Result<Vec<(Option<&str>, &str)>, String> {
    fn walk<'a>(
        v: &'a Value,
        key: Option<&'a str>,
        depth: usize,
        out: &mut Vec<(Option<&'a str>, &'a str)>,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("arguments nested deeper than {MAX_DEPTH} levels"));
        }
        match v {
            Value::String(s) => {
                if out.len() >= MAX_STRINGS {
                    return Err(format!("arguments hold more than {MAX_STRINGS} strings"));
                }
                out.push((key, s));
            }
            Value::Array(a) => {
                for x in a {
                    walk(x, key, depth + 1, out)?;
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    walk(x, Some(k), depth + 1, out)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(args, None, 0, &mut out)?;
    Ok(out)
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `~` and `~/x` with the home folder in front; anything else unchanged.
fn expand_home(text: &str, home: Option<&Path>) -> PathBuf {
    match (text.strip_prefix('~'), home) {
        (Some(""), Some(h)) => h.to_path_buf(),
        (Some(rest), Some(h)) if rest.starts_with('/') => h.join(rest.trim_start_matches('/')),
        _ => PathBuf::from(text),
    }
}

/// `.` dropped, `..` applied, repeated separators folded, without touching the disk. A
/// `..` above the root stays at the root (as the kernel does); above a relative start it
/// is kept.
fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let last = out.components().next_back();
                match last {
                    Some(Component::Normal(_)) => {
                        out.pop();
                    }
                    Some(Component::RootDir) => {}
                    _ => out.push(".."),
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path a string argument names, if it names one: a `file://` URL, or text with no
/// line break that is not another URL. Bare words count too (`.env` is a relative path).
fn as_path(text: &str, home: Option<&Path>) -> Option<PathBuf> {
    let t = text.trim();
    if t.is_empty() || t.contains('\n') {
        return None;
    }
    if let Some((scheme, _)) = t.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            return url::Url::parse(t)
                .ok()?
                .to_file_path()
                .ok()
                .map(|p| fold(&p));
        }
        if scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return None;
        }
    }
    Some(fold(&expand_home(t, home)))
}

/// Denies a call when any string argument names a path matching one of the patterns, or
/// lying under a folder that matches one (`~/.ssh` denies `~/.ssh/id_ed25519`).
pub struct DenyPaths {
    set: GlobSet,
    patterns: Vec<String>,
    home: Option<PathBuf>,
}

impl DenyPaths {
    /// Compiles the patterns (glob syntax: `*` within a path segment, `**` across
    /// segments; a leading `~` is the home folder). An empty list denies nothing.
    pub fn new(patterns: &[String]) -> Result<DenyPaths, HookConfigError> {
        let home = home();
        let mut builder = GlobSetBuilder::new();
        for p in patterns {
            let expanded = expand_home(p, home.as_deref());
            let text = fold(&expanded).to_string_lossy().into_owned();
            let glob = globset::GlobBuilder::new(&text)
                .literal_separator(true)
                .build()
                .map_err(|e| HookConfigError::BadPathPattern {
                    pattern: p.clone(),
                    why: e.kind().to_string(),
                })?;
            builder.add(glob);
        }
        let set = builder
            .build()
            .map_err(|e| HookConfigError::BadPathPattern {
                pattern: patterns.join(", "),
                why: e.to_string(),
            })?;
        Ok(DenyPaths {
            set,
            patterns: patterns.to_vec(),
            home,
        })
    }

    /// The pattern that forbids granting the folder `dir` (absolute) to a plugin, if
    /// any: `dir` or a folder above it matches one, or `dir` holds the folder a pattern
    /// without wildcards names (granting `~` would hand over `~/.ssh`). Plugin approval
    /// refuses such a request entry.
    pub fn forbids_folder(&self, dir: &Path) -> Option<&str> {
        let dir = fold(dir);
        if let Some(p) = self.matching(&dir) {
            return Some(p);
        }
        self.patterns.iter().map(String::as_str).find(|p| {
            !p.contains(['*', '?', '[', '{'])
                && fold(&expand_home(p, self.home.as_deref())).starts_with(&dir)
        })
    }

    /// The pattern that `path` or one of its ancestors matches, if any.
    fn matching(&self, path: &Path) -> Option<&str> {
        path.ancestors()
            .filter(|a| !a.as_os_str().is_empty())
            .find_map(|a| self.set.matches(a).first().copied())
            .and_then(|i| self.patterns.get(i).map(String::as_str))
    }
}

#[async_trait]
impl PermissionHook for DenyPaths {
    fn name(&self) -> &str {
        "deny_paths"
    }

    async fn check(&self, call: &HookCall<'_>) -> HookVerdict {
        if self.patterns.is_empty() {
            return HookVerdict::Abstain;
        }
        let strings = match strings(call.arguments) {
            Ok(s) => s,
            Err(why) => return HookVerdict::Deny(format!("{why}: too large to check for paths")),
        };
        for (key, text) in strings {
            let Some(path) = as_path(text, self.home.as_deref()) else {
                continue;
            };
            if let Some(pattern) = self.matching(&path) {
                let arg = key.map(|k| format!("`{k}` ")).unwrap_or_default();
                return HookVerdict::Deny(format!(
                    "argument {arg}names {}, which the operator's deny_paths rule {pattern:?} forbids for every tool",
                    path.display()
                ));
            }
        }
        HookVerdict::Allow
    }
}

/// One host pattern: an exact name or address, or `*.suffix` (any subdomain of `suffix`,
/// not `suffix` itself).
#[derive(Debug, Clone)]
enum HostPattern {
    Exact(String),
    Subdomains(String),
}

fn normal_host(h: &str) -> String {
    h.trim()
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Argument keys whose plain value (not a URL) is taken as a host name.
const HOST_KEYS: &[&str] = &["host", "hostname", "domain", "server", "address"];

/// Denies a call of a network tool when an argument points at a denied host: a URL's
/// host, or the value under a key such as `host`. Applies to tools that declare
/// `network` and to tools that declare nothing (their reach is unknown).
pub struct DenyHosts {
    patterns: Vec<(String, HostPattern)>,
}

impl DenyHosts {
    /// Parses the patterns (`example.com`, `*.example.com`, `169.254.169.254`, `::1`).
    pub fn new(patterns: &[String]) -> Result<DenyHosts, HookConfigError> {
        let mut out = Vec::new();
        for p in patterns {
            let bad = || HookConfigError::BadHostPattern { pattern: p.clone() };
            let (sub, rest) = match p.trim().strip_prefix("*.") {
                Some(rest) => (true, rest),
                None => (false, p.as_str()),
            };
            let host = normal_host(rest);
            let ok = !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-.:_".contains(c));
            if !ok {
                return Err(bad());
            }
            let pattern = if sub {
                HostPattern::Subdomains(host)
            } else {
                HostPattern::Exact(host)
            };
            out.push((p.clone(), pattern));
        }
        Ok(DenyHosts { patterns: out })
    }

    fn matching(&self, host: &str) -> Option<&str> {
        let host = normal_host(host);
        self.patterns.iter().find_map(|(text, p)| {
            let hit = match p {
                HostPattern::Exact(h) => host == *h,
                HostPattern::Subdomains(s) => host
                    .strip_suffix(s.as_str())
                    .is_some_and(|head| head.ends_with('.')),
            };
            hit.then_some(text.as_str())
        })
    }
}

/// The host a string argument points at, if any.
fn host_of(key: Option<&str>, text: &str) -> Option<String> {
    let t = text.trim();
    if t.contains("://") {
        // The URL parser normalises what a client would connect to: case, IDNA, and
        // numeric IPv4 forms such as `http://2852039166/` (= 169.254.169.254).
        return url::Url::parse(t).ok()?.host_str().map(str::to_string);
    }
    let key = key?.to_ascii_lowercase();
    if !HOST_KEYS.contains(&key.as_str()) {
        return None;
    }
    // `host:port` or a bare host; an IPv6 literal keeps its colons.
    let bare = match t.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) && !h.contains(':') => h,
        _ => t,
    };
    Some(bare.to_string())
}

#[async_trait]
impl PermissionHook for DenyHosts {
    fn name(&self) -> &str {
        "deny_hosts"
    }

    async fn check(&self, call: &HookCall<'_>) -> HookVerdict {
        let reaches =
            call.permissions.is_empty() || call.permissions.contains(&Permission::Network);
        if self.patterns.is_empty() || !reaches {
            return HookVerdict::Abstain;
        }
        let strings = match strings(call.arguments) {
            Ok(s) => s,
            Err(why) => return HookVerdict::Deny(format!("{why}: too large to check for hosts")),
        };
        for (key, text) in strings {
            let Some(host) = host_of(key, text) else {
                continue;
            };
            if let Some(pattern) = self.matching(&host) {
                return HookVerdict::Deny(format!(
                    "points at host {host}, which the operator's deny_hosts rule {pattern:?} forbids"
                ));
            }
        }
        HookVerdict::Allow
    }
}

/// At most `calls` calls per `per` window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateRule {
    /// Calls allowed in one window.
    pub calls: u32,
    /// The window.
    pub per: Duration,
}

/// The rule name that applies to every tool without its own rule.
pub const EVERY_TOOL: &str = "*";

/// Denies a call when its tool already ran `calls` times in the last `per` (a sliding
/// window, counted per tool name; a denied call does not count). Rules by tool name;
/// [`EVERY_TOOL`] (`"*"`) applies to each tool without its own rule, counted per tool.
pub struct RateLimit {
    rules: HashMap<String, RateRule>,
    seen: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl RateLimit {
    /// The limiter for these rules.
    pub fn new(rules: HashMap<String, RateRule>) -> Result<RateLimit, HookConfigError> {
        for (tool, r) in &rules {
            if r.calls == 0 || r.per.is_zero() {
                return Err(HookConfigError::BadRate { tool: tool.clone() });
            }
        }
        Ok(RateLimit {
            rules,
            seen: Mutex::new(HashMap::new()),
        })
    }
}

#[async_trait]
impl PermissionHook for RateLimit {
    fn name(&self) -> &str {
        "rate_limit"
    }

    async fn check(&self, call: &HookCall<'_>) -> HookVerdict {
        let Some(rule) = self
            .rules
            .get(call.tool)
            .or_else(|| self.rules.get(EVERY_TOOL))
        else {
            return HookVerdict::Abstain;
        };
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        // Only registered tools reach the hooks, so this map is bounded by the registry.
        let times = seen.entry(call.tool.to_string()).or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= rule.per)
        {
            times.pop_front();
        }
        if times.len() >= rule.calls as usize {
            return HookVerdict::Deny(format!(
                "is rate-limited by the operator to {} call(s) per {} s; try again later",
                rule.calls,
                rule.per.as_secs_f64()
            ));
        }
        times.push_back(now);
        HookVerdict::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::base::{ToolContext, ToolSource};
    use crate::tools::permission::RiskLevel;
    use serde_json::json;

    fn verdict(hook: &dyn PermissionHook, perms: &[Permission], args: Value) -> HookVerdict {
        let ctx = ToolContext::default();
        let source = ToolSource::Native;
        let call = HookCall {
            call_id: "c1",
            tool: "t",
            arguments: &args,
            permissions: perms,
            risk: RiskLevel::of(perms),
            source: &source,
            context: &ctx,
        };
        futures::executor::block_on(hook.check(&call))
    }

    fn denied(v: &HookVerdict) -> bool {
        matches!(v, HookVerdict::Deny(_))
    }

    #[test]
    fn folders_under_above_or_matching_a_rule_are_not_grantable() {
        let h = DenyPaths::new(&["/home/u/.ssh".into(), "**/.env".into()]).unwrap();
        for bad in [
            "/home/u/.ssh",
            "/home/u/.ssh/keys",
            "/home/u",
            "/",
            "/srv/app/.env",
        ] {
            assert!(h.forbids_folder(Path::new(bad)).is_some(), "{bad}");
        }
        for good in ["/home/u/data", "/home/u/.sshx", "/srv/app"] {
            assert_eq!(h.forbids_folder(Path::new(good)), None, "{good}");
        }
    }

    #[test]
    fn paths_are_folded_before_matching() {
        let h = DenyPaths::new(&[
            "/home/u/.ssh".into(),
            "**/.env".into(),
            "/etc/shadow".into(),
        ])
        .unwrap();
        for bad in [
            "/home/u/.ssh/id_ed25519",
            "/home/u/./.ssh//id_rsa",
            "/tmp/../home/u/.ssh/config",
            "/../../home/u/.ssh",
            "file:///home/u/.ssh/id_rsa",
            "project/.env",
            ".env",
            "/etc/shadow",
        ] {
            let v = verdict(&h, &[Permission::Read], json!({"path": bad}));
            assert!(denied(&v), "{bad}: {v:?}");
        }
        for good in [
            "/home/u/notes.txt",
            "/home/u/.sshx",
            "https://example.com/home/u/.ssh",
            "line one\n/home/u/.ssh",
            "/etc/shadow.example",
        ] {
            let v = verdict(&h, &[Permission::Read], json!({"path": good, "n": 1}));
            assert_eq!(v, HookVerdict::Allow, "{good}");
        }
        // Nested anywhere in the arguments.
        let v = verdict(&h, &[], json!({"a": [{"b": {"c": "/home/u/.ssh/k"}}]}));
        assert!(denied(&v), "{v:?}");
    }

    #[test]
    fn home_patterns_expand() {
        let Some(home) = home() else { return };
        let h = DenyPaths::new(&["~/.aws/**".into()]).unwrap();
        let v = verdict(&h, &[], json!({"file": "~/.aws/credentials"}));
        assert!(denied(&v), "{v:?}");
        let abs = format!("{}/.aws/credentials", home.display());
        assert!(denied(&verdict(&h, &[], json!({"file": abs}))));
    }

    #[test]
    fn oversized_arguments_are_denied_not_skipped() {
        let h = DenyPaths::new(&["/x".into()]).unwrap();
        let mut deep = json!("leaf");
        for _ in 0..(MAX_DEPTH + 2) {
            deep = json!([deep]);
        }
        assert!(denied(&verdict(&h, &[], deep)));
        let many = Value::Array(vec![json!("a"); MAX_STRINGS + 1]);
        assert!(denied(&verdict(&h, &[], many)));
    }

    #[test]
    fn bad_patterns_are_typed_errors() {
        assert!(matches!(
            DenyPaths::new(&["a[".into()]),
            Err(HookConfigError::BadPathPattern { .. })
        ));
        assert!(matches!(
            DenyHosts::new(&["exa mple.com".into()]),
            Err(HookConfigError::BadHostPattern { .. })
        ));
        assert!(matches!(
            DenyHosts::new(&["".into()]),
            Err(HookConfigError::BadHostPattern { .. })
        ));
    }

    #[test]
    fn hosts_match_urls_and_host_keys_of_network_tools() {
        let h = DenyHosts::new(&["169.254.169.254".into(), "*.internal".into()]).unwrap();
        let net = [Permission::Network];
        for bad in [
            json!({"url": "http://169.254.169.254/latest/meta-data"}),
            json!({"url": "http://2852039166/latest"}),
            json!({"url": "HTTP://DB.Internal./x"}),
            json!({"host": "db.internal:5432"}),
            json!({"urls": ["https://ok.example", "https://a.b.internal"]}),
        ] {
            assert!(denied(&verdict(&h, &net, bad.clone())), "{bad}");
        }
        for good in [
            json!({"url": "https://example.com/169.254.169.254"}),
            json!({"url": "https://internal/"}),
            json!({"note": "db.internal"}),
        ] {
            assert_eq!(
                verdict(&h, &net, good.clone()),
                HookVerdict::Allow,
                "{good}"
            );
        }
        // A read-only tool is not a network tool: no opinion.
        let v = verdict(
            &h,
            &[Permission::Read],
            json!({"url": "http://169.254.169.254/"}),
        );
        assert_eq!(v, HookVerdict::Abstain);
        // A tool that declares nothing may reach anything: checked.
        assert!(denied(&verdict(
            &h,
            &[],
            json!({"url": "http://169.254.169.254/"})
        )));
    }

    #[test]
    fn rate_limit_counts_per_tool_in_a_window() {
        let rules = HashMap::from([(
            "t".to_string(),
            RateRule {
                calls: 2,
                per: Duration::from_secs(3600),
            },
        )]);
        let h = RateLimit::new(rules).unwrap();
        assert_eq!(verdict(&h, &[], json!({})), HookVerdict::Allow);
        assert_eq!(verdict(&h, &[], json!({})), HookVerdict::Allow);
        let v = verdict(&h, &[], json!({}));
        assert!(
            matches!(&v, HookVerdict::Deny(r) if r.contains("2 call(s) per 3600 s")),
            "{v:?}"
        );
        let zero = HashMap::from([(
            "t".to_string(),
            RateRule {
                calls: 0,
                per: Duration::from_secs(1),
            },
        )]);
        assert!(matches!(
            RateLimit::new(zero),
            Err(HookConfigError::BadRate { .. })
        ));
    }
}
