//! The one rule of tool names, owned by the registry and shared by every source that
//! names tools it did not write: WASM plugins, MCP servers, and the gateway's prompts
//! and resource URIs (docs/design.md, "One naming rule").
//!
//! **A name belongs to no source.** Each source (a plugin's file stem, an MCP server's
//! configured name) *claims* the names it describes ([`ToolRegistry::claim`]). A name
//! claimed by two or more sources, or held by a native tool (whose name the embedder's
//! code calls and which is never renamed), is *contested*: **every** claimant registers
//! it as `source__name` ([`qualified_name`]); an uncontested name is registered as
//! described. The outcome is a function of the set of claims ([`contested_names`]), never
//! of the order in which sources loaded, connected or listed: a server that appears
//! beside `calc` describing `add` makes both `calc__add` and `server__add`, and when it
//! goes away `calc`'s tool gets `add` back. Sources follow changes through
//! [`ToolRegistry::names_changed`], bumped whenever the contested set changes.
//!
//! Described names containing [`QUALIFIER`] are reserved for qualified names. Two sources
//! with the same qualifier (a plugin `calc.wasm` and a server `calc`) would give the same
//! qualified names: the second to claim is refused ([`NameClash`]) until the operator
//! renames one.

use std::collections::{BTreeMap, BTreeSet};

use super::ToolRegistry;
use crate::tools::base::ToolSource;

/// What joins a source's name and a tool's name in a qualified name.
pub const QUALIFIER: &str = "__";

/// The longest registry name.
const MAX_NAME: usize = 64;

/// A registry-safe form of `raw` (`^[a-zA-Z0-9_-]{1,64}$`): other characters become `_`,
/// an empty name is `_`, and a name over 64 characters is cut and ends in a short hash of
/// the whole (made safe), so two long names that differ only at the end stay apart.
pub fn safe_name(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        s.push('_');
    }
    if s.len() <= MAX_NAME {
        return s;
    }
    use sha2::Digest;
    let hash = hex::encode(sha2::Sha256::digest(s.as_bytes()));
    // `s` is ASCII (every other character was replaced), so any cut is a boundary.
    s.truncate(MAX_NAME - 9);
    format!("{s}_{}", hash.get(..8).unwrap_or(&hash))
}

/// The qualified name `source__tool` of a contested `tool` of `source`, registry-safe
/// ([`safe_name`]).
pub fn qualified_name(source: &str, tool: &str) -> String {
    safe_name(&format!("{source}{QUALIFIER}{tool}"))
}

/// The rule itself, a pure function of the set: the names of `claims` (source → the
/// names it describes) that two or more sources claim, or that `fixed` says a source
/// outside the claims holds (a native tool).
pub fn contested_names<'a>(
    claims: impl IntoIterator<Item = &'a BTreeSet<String>>,
    fixed: impl Fn(&str) -> bool,
) -> BTreeSet<String> {
    let mut owners: BTreeMap<&str, usize> = BTreeMap::new();
    for names in claims {
        for n in names {
            *owners.entry(n.as_str()).or_default() += 1;
        }
    }
    owners
        .into_iter()
        .filter(|(name, count)| *count > 1 || fixed(name))
        .map(|(name, _)| name.to_string())
        .collect()
}

/// One source's view of the rule at one moment: the name each of its tools gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Naming {
    source: String,
    contested: BTreeSet<String>,
}

impl Naming {
    /// A view of the rule for `source` with `contested` names (what
    /// [`ToolRegistry::naming`] gives; built directly for a set outside a registry).
    pub fn new(source: impl Into<String>, contested: BTreeSet<String>) -> Self {
        Naming {
            source: source.into(),
            contested,
        }
    }

    /// The name `tool` (as the source describes it) gets: `source__tool` when contested,
    /// else `tool` itself (made registry-safe).
    pub fn name(&self, tool: &str) -> String {
        if self.contested.contains(tool) {
            qualified_name(&self.source, tool)
        } else {
            safe_name(tool)
        }
    }

    /// Whether `tool` gets its qualified name.
    pub fn is_qualified(&self, tool: &str) -> bool {
        self.contested.contains(tool)
    }
}

/// Two sources with one qualifier: their qualified names would be the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "two sources are named '{qualifier}' ({held} and {refused}): their qualified tool names \
     ('{qualifier}{QUALIFIER}...') would collide; rename one of them"
)]
pub struct NameClash {
    /// The qualifier both use.
    pub qualifier: String,
    /// The source that holds it.
    pub held: String,
    /// The source refused.
    pub refused: String,
}

/// Renames a source's tools as the rule now says; called by the registry, with itself,
/// when another source's claim changes the contested names.
pub type NameFollower = std::sync::Arc<dyn Fn(&ToolRegistry) + Send + Sync>;

/// What one source claims.
#[derive(Clone)]
struct Claim {
    owner: ToolSource,
    names: BTreeSet<String>,
    follower: Option<NameFollower>,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("owner", &self.owner)
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// Every source's claims (in the registry).
#[derive(Debug, Default)]
pub(super) struct Claims {
    by_source: BTreeMap<String, Claim>,
}

fn describe(owner: &ToolSource) -> String {
    match owner {
        ToolSource::Native => "the host's native tools".into(),
        ToolSource::Wasm { path } => format!("plugin {path}"),
        ToolSource::Mcp { server } => format!("MCP server {server}"),
    }
}

impl ToolRegistry {
    /// Records that `source` (owned by `owner`) describes `names`, replacing what it
    /// claimed before, and returns its [`Naming`]. When the contested set changes, every
    /// source is told through [`ToolRegistry::names_changed`] and renames what the rule
    /// now says. Refused when another owner uses the same `source` ([`NameClash`]).
    pub fn claim(
        &self,
        source: &str,
        owner: &ToolSource,
        names: BTreeSet<String>,
    ) -> Result<Naming, NameClash> {
        let before = self.contested();
        {
            let mut claims = lock(&self.inner.claims);
            if let Some(held) = claims.by_source.get(source)
                && held.owner != *owner
            {
                return Err(NameClash {
                    qualifier: source.to_string(),
                    held: describe(&held.owner),
                    refused: describe(owner),
                });
            }
            let follower = claims
                .by_source
                .get(source)
                .and_then(|c| c.follower.clone());
            claims.by_source.insert(
                source.to_string(),
                Claim {
                    owner: owner.clone(),
                    names,
                    follower,
                },
            );
        }
        self.tell_if_changed(&before, Some(source));
        Ok(self.naming(source))
    }

    /// Has `follower` called whenever another source's claim changes the contested
    /// names, so that `source` renames its tools at once (before that claim returns).
    /// A follower must not hold a lock that its own source's claims are made under: it
    /// is called on the thread of whichever source claimed.
    pub fn follow_names(&self, source: &str, follower: NameFollower) {
        if let Some(c) = lock(&self.inner.claims).by_source.get_mut(source) {
            c.follower = Some(follower);
        }
    }

    /// Withdraws the claims of `source` (it went away): names it contested go back to
    /// their other claimant.
    pub fn release(&self, source: &str) {
        let before = self.contested();
        let gone = lock(&self.inner.claims).by_source.remove(source).is_some();
        if gone {
            self.tell_if_changed(&before, None);
        }
    }

    /// The rule as it stands for `source`.
    pub fn naming(&self, source: &str) -> Naming {
        Naming::new(source, self.contested())
    }

    /// Bumped whenever the contested set changes (a source claimed or released a name
    /// another source describes).
    pub fn names_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.names.subscribe()
    }

    /// The names contested now: claimed twice or more, or held by a native tool.
    fn contested(&self) -> BTreeSet<String> {
        let claims = lock(&self.inner.claims);
        let tools = super::read(&self.inner.tools);
        contested_names(claims.by_source.values().map(|c| &c.names), |n| {
            tools
                .get(n)
                .is_some_and(|e| *e.source() == ToolSource::Native)
        })
    }

    /// When the contested names changed: every source but `by` renames its tools (its
    /// follower, called here, outside the claims' lock), then the watchers are told.
    fn tell_if_changed(&self, before: &BTreeSet<String>, by: Option<&str>) {
        if self.contested() == *before {
            return;
        }
        let followers: Vec<NameFollower> = lock(&self.inner.claims)
            .by_source
            .iter()
            .filter(|(s, _)| Some(s.as_str()) != by)
            .filter_map(|(_, c)| c.follower.clone())
            .collect();
        for follow in followers {
            follow(self);
        }
        self.inner.names.send_modify(|g| *g += 1);
    }

    /// Tells the sources that a native tool came or went (it may contest a claimed name).
    pub(super) fn native_changed(&self, name: &str) {
        let claimed = lock(&self.inner.claims)
            .by_source
            .values()
            .any(|c| c.names.contains(name));
        if claimed {
            self.inner.names.send_modify(|g| *g += 1);
        }
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_name_two_sources_claim_is_qualified_for_both_whatever_the_order() {
        let none = |_: &str| false;
        let a = contested_names([&set(&["add", "mean"]), &set(&["add"])], none);
        let b = contested_names([&set(&["add"]), &set(&["add", "mean"])], none);
        assert_eq!(a, set(&["add"]));
        assert_eq!(a, b);
        let fixed = contested_names([&set(&["add", "mean"])], |n| n == "mean");
        assert_eq!(fixed, set(&["mean"]));
    }

    #[test]
    fn names_are_registry_safe_and_long_ones_stay_apart() {
        assert_eq!(qualified_name("calc", "add"), "calc__add");
        assert_eq!(qualified_name("my plugin.v2", "add"), "my_plugin_v2__add");
        assert_eq!(safe_name(""), "_");
        assert_eq!(safe_name("get-sum"), "get-sum");
        assert_eq!(safe_name("fs.read/file"), "fs_read_file");
        assert_eq!(safe_name(&"x".repeat(100)).len(), 64);
        let long = qualified_name(&"p".repeat(60), "a_rather_long_tool_name");
        let other = qualified_name(&"p".repeat(60), "a_rather_long_tool_name2");
        assert_eq!(long.len(), 64);
        assert_ne!(long, other);
        assert!(super::super::is_valid_tool_name(&long));
    }

    #[test]
    fn claims_decide_on_the_set_and_tell_the_sources() {
        let r = ToolRegistry::new();
        let mut seen = r.names_changed();
        let wasm = ToolSource::Wasm {
            path: "calc.wasm".into(),
        };
        let mcp = ToolSource::Mcp {
            server: "math".into(),
        };
        let calc = r.claim("calc", &wasm, set(&["add", "mean"])).unwrap();
        assert_eq!(calc.name("add"), "add");
        assert!(!seen.has_changed().unwrap());
        let math = r.claim("math", &mcp, set(&["add"])).unwrap();
        assert_eq!(math.name("add"), "math__add");
        assert_eq!(r.naming("calc").name("add"), "calc__add");
        assert_eq!(r.naming("calc").name("mean"), "mean");
        assert!(seen.has_changed().unwrap());
        seen.borrow_and_update();
        // The same claim again changes nothing.
        r.claim("math", &mcp, set(&["add"])).unwrap();
        assert!(!seen.has_changed().unwrap());
        // Another owner under the same qualifier is refused, and changes nothing.
        let clash = r.claim("calc", &mcp, set(&["x"])).unwrap_err();
        assert!(clash.to_string().contains("rename one"), "{clash}");
        r.release("math");
        assert!(seen.has_changed().unwrap());
        assert_eq!(r.naming("calc").name("add"), "add");
    }

    #[test]
    fn a_follower_renames_before_the_other_claim_returns() {
        use std::sync::{Arc, Mutex};
        let r = ToolRegistry::new();
        let wasm = ToolSource::Wasm {
            path: "calc.wasm".into(),
        };
        let mcp = ToolSource::Mcp {
            server: "math".into(),
        };
        r.claim("calc", &wasm, set(&["add"])).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        r.follow_names(
            "calc",
            Arc::new(move |reg: &ToolRegistry| {
                log.lock().unwrap().push(reg.naming("calc").name("add"));
            }),
        );
        r.claim("math", &mcp, set(&["add"])).unwrap();
        assert_eq!(*seen.lock().unwrap(), ["calc__add"]);
        // Its own claims do not call it back; an unchanged set calls nobody.
        r.claim("calc", &wasm, set(&["add"])).unwrap();
        r.claim("math", &mcp, set(&["add"])).unwrap();
        assert_eq!(seen.lock().unwrap().len(), 1);
        r.release("math");
        assert_eq!(*seen.lock().unwrap(), ["calc__add", "add"]);
    }
}
