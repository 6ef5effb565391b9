//! The trust model wired into loading: a plugin's `NAME.toml` is its *request*, the
//! operator's approval in `toolhost.lock` (crate `toolhost-trust`) is the *grant*, and a
//! tool gets declared ∩ request ∩ approval. See `docs/trust.md`.
//!
//! - [`effective_policy`]: the policy a plugin is loaded with: only approved folders,
//!   network rules and env names that are still requested, sockets only if both say so,
//!   and each limit the smaller of request and approval (an unapproved plugin: no
//!   capability, its requested memory and output caps, a deadline and fuel of at most the defaults).
//! - [`load_folder_with`] (through [`Host::load_folder`]): loads a plugins folder under
//!   the lock, on the host's engine and under its protected paths: unapproved plugins load
//!   without capability (their tools that would need one refuse with the command that
//!   approves them) or not at all (`require_approval = "all"`); changed tool definitions
//!   are withheld; a held plugin offers nothing; a compatible update is recorded.
//!   Components compile in parallel; tool names depend only on the set of plugins (a
//!   [`FolderSet`], the one rule of `toolhost-wasm`'s `folder` module) and the lock
//!   bookkeeping stays in file order ([`load_folder_with`]).
//! - `trust/offer.rs`: what one plugin file offers under the lock, the single decision
//!   of start-up and of live reload ([`crate::reload`]).
//! - [`Candidate`] (`trust/candidate.rs`): a plugin file as `approve`/`install` show it
//!   before writing the lock.
//! - [`connect_mcp`] (`trust/mcp.rs`): MCP servers with their tool definitions pinned.
//! - [`review_plugin`] (`trust/review.rs`): one plugin reviewed and approved, the route of
//!   `toolhost approve` and of the console; [`release`]: its version and signer.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toolhost_trust::{Capabilities, Folder, Lock, ToolDef};

pub use toolhost_trust::{TrustState, clean};

mod candidate;
mod mcp;
mod mcp_board;
mod offer;
pub mod release;
mod review;

pub use candidate::{Candidate, CandidateError, file_source};
pub use mcp::{McpWithheld, connect_mcp, mcp_tool_def};
pub use mcp_board::{
    HeldServer, McpApproveError, McpBoard, McpPins, approve_mcp_pins, chosen_pins, defs_digest,
};
pub use offer::LoadRules;
use offer::PrepareJob;
pub use offer::package_signature;
pub(crate) use offer::{
    Prepared, prepare_plugin, read_lock, record_update, register_prepared, warm_later,
};
pub use review::{Review, ReviewError, review_plugin};

use crate::host::Host;
use crate::loader::{LoadEvent, LoadProblem, LoadProgress, SLOW_LOAD, human_bytes, plugin_problem};
use crate::tools::ToolRegistry;
use crate::tools::view::AppView;
use crate::wasm::folder::FolderSet;
use crate::wasm::{Policy, ToolSpec};

/// The request of a plugin (its parsed `NAME.toml`) as a trust [`Capabilities`]: absolute
/// folders, rules as written, and every limit in force (defaults filled in).
///
/// A requested folder that does not exist yet is part of the request (as its absolute
/// path): approving the plugin approves it, so creating the folder later needs no new
/// approval (it is checked against the protected paths when it is there).
pub fn request_of(policy: &Policy) -> Capabilities {
    let mut caps = policy.caps.clone();
    for m in &policy.missing {
        let list = if m.key == "write" {
            &mut caps.write
        } else {
            &mut caps.read
        };
        list.push(Folder::from(m.path.as_path()));
    }
    caps
}

/// The policy a plugin runs with: `request` ∩ `approved` (see the module doc). With no
/// approval: no capability at all, the request's memory and output caps, and a deadline
/// and fuel budget no larger than the host defaults.
pub fn effective_policy(request: &Policy, approved: Option<&Capabilities>) -> Policy {
    let default = Policy::default();
    let Some(a) = approved else {
        // Limits are not capabilities: the request's memory and output caps (bounded by
        // the policy parser) apply, so a pure Python tool that needs 128 MiB works
        // unapproved; the deadline and the fuel budget are never above the host default.
        let limits = Capabilities {
            timeout_ms: default.caps.timeout_ms,
            fuel: default.caps.fuel,
            memory_mb: request.caps.memory_mb,
            output_kb: request.caps.output_kb,
            ..Capabilities::default()
        };
        return Policy {
            file: request.file.clone(),
            caps: request.caps.intersect(&limits),
            missing: request.missing.clone(),
            ..default
        };
    };
    // The capabilities are request ∩ approval (`Capabilities::intersect`, property-tested
    // in toolhost-caps): folders on path components, network rules by what they allow.
    // A granted folder is the requested one, or an approved folder inside it; one that
    // does not exist stays in `missing` (requested, not in effect) and is not opened.
    let mut caps = request_of(request).intersect(a);
    let exists = |f: &Folder, requested: &[Folder]| {
        requested.contains(f)
            || (!request.missing.iter().any(|m| f == &m.path) && f.as_path().is_dir())
    };
    caps.read.retain(|f| exists(f, &request.caps.read));
    caps.write.retain(|f| exists(f, &request.caps.write));
    Policy {
        file: request.file.clone(),
        caps,
        // The values of the keys granted are the operator's, resolved by the loader for
        // these keys only (`crate::trust::offer`), never taken from the request.
        config_values: crate::wasm::config::ConfigValues::default(),
        missing: request.missing.clone(),
    }
}

/// The definition of a described tool, as the lock hashes it: what the component
/// described, and the view its plugin ships for it (`NAME.ui/TOOL.html`), if any.
pub fn tool_def(spec: &ToolSpec, view: Option<&AppView>) -> ToolDef {
    ToolDef::new(
        spec.name.clone(),
        spec.description.clone(),
        spec.parameters.clone(),
        spec.permissions.iter().map(|p| p.as_str().to_string()),
    )
    .with_view(view)
}

/// Whether the request offers this tool any capability (so it must wait for approval).
/// A tool the request offers nothing is pure compute and runs unapproved. Config keys
/// are offered to every tool of the plugin, whatever it declares.
pub fn needs_approval(request: &Policy, spec: &ToolSpec) -> bool {
    crate::wasm::Grant::effective(request, &spec.permissions)
        .caps
        .has_capabilities()
}

/// The command that approves plugin (or `mcp:SERVER`) `name` of folder `dir`.
pub fn approve_hint(name: &str, dir: &Path) -> String {
    format!("toolhost approve {name} --plugins {}", dir.display())
}

/// What loading decided for one plugin (for `list` and warnings).
#[derive(Debug, Clone)]
pub struct PluginTrust {
    /// The plugin name (file stem).
    pub name: String,
    /// The component file.
    pub path: PathBuf,
    /// Its trust state.
    pub state: TrustState,
    /// Tools registered but refusing until approved (unapproved plugin).
    pub needs_approval: Vec<String>,
    /// Tools not offered (changed definitions, or the whole plugin held/not loaded).
    pub withheld: Vec<String>,
    /// Whether any tool of it was registered.
    pub loaded: bool,
    /// "sha256:HEX" of the component that was evaluated (`None`: not even loaded, as an
    /// unapproved plugin under `require_approval = "all"`).
    pub digest: Option<String>,
    /// The grant its tools run with (request ∩ approval; `None`: nothing is offered).
    pub effective: Option<Capabilities>,
    /// Tools offered but refusing because they need a requested folder that does not
    /// exist: (tool, why and how to fix it). The plugin's other tools are unaffected.
    pub missing_folder: Vec<(String, String)>,
    /// The approved release version (after an accepted update, the new one); `None`:
    /// unversioned or unapproved.
    pub version: Option<toolhost_trust::Version>,
    /// The MCP App views served with its offered tools: (tool, `ui://` URI, digest of the
    /// page), by tool name (`NAME.ui/TOOL.html`, docs/writing-plugins.md).
    pub views: Vec<(String, String, String)>,
}

impl PluginTrust {
    /// Whether `other` offers exactly what this does: the same component, trust state
    /// (a compatible update counts as approved), tools needing approval, withheld tools,
    /// effective grant and views. Live reload leaves a plugin alone when its new evaluation is
    /// the same offer (`docs/design.md`, "Live reload").
    pub fn same_offer(&self, other: &PluginTrust) -> bool {
        let state = |s: &TrustState| match s {
            TrustState::Updated { .. } => TrustState::Approved,
            s => s.clone(),
        };
        self.path == other.path
            && self.digest == other.digest
            && state(&self.state) == state(&other.state)
            && self.needs_approval == other.needs_approval
            && self.withheld == other.withheld
            && self.effective == other.effective
            && self.missing_folder == other.missing_folder
            && self.views == other.views
    }

    /// The operator-facing warning about this decision, if it deserves one: a held
    /// plugin, withheld tool definitions, an unapproved plugin that was not loaded. Each
    /// names the command that approves it (plugins folder `dir`).
    pub fn warning(&self, dir: &Path) -> Option<String> {
        let state = self.state_warning(dir);
        let folder = self.missing_folder.first().map(|(_, why)| {
            let tools: Vec<&str> = self
                .missing_folder
                .iter()
                .map(|(t, _)| t.as_str())
                .collect();
            format!(
                "plugin {}: {} {}",
                self.name,
                clean(&tools.join(", ")),
                clean(why)
            )
        });
        match (state, folder) {
            (Some(a), Some(b)) => Some(format!("{a}\nwarning: {b}")),
            (a, b) => a.or(b),
        }
    }

    fn state_warning(&self, dir: &Path) -> Option<String> {
        let hint = approve_hint(&self.name, dir);
        match &self.state {
            TrustState::Held { reason, cause } => Some(format!(
                "plugin {} is held ({}); its tools are not offered until `{hint}{}`",
                self.name,
                clean(reason),
                if *cause == toolhost_trust::HeldCause::Release {
                    " --allow-downgrade"
                } else {
                    ""
                }
            )),
            TrustState::Changed { withheld } => Some(format!(
                "plugin {}: tool definitions changed since approval ({}); withheld until `{hint}`",
                self.name,
                clean(&withheld.join(", "))
            )),
            TrustState::Unapproved if !self.loaded && self.needs_approval.is_empty() => {
                Some(format!(
                    "plugin {} is not approved and not loaded (require_approval = \"all\"); `{hint}`",
                    self.name
                ))
            }
            _ => None,
        }
    }
}

/// What loading and live reload decided for each plugin of a folder, as it is now, with
/// the component registered (if any): what the console shows. Shared; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct TrustBoard(std::sync::Arc<std::sync::Mutex<Vec<BoardEntry>>>);

/// One plugin on a [`TrustBoard`]: its decision and its registered component.
pub type BoardEntry = (PluginTrust, Option<crate::wasm::Plugin>);

impl TrustBoard {
    /// An empty board.
    pub fn new() -> TrustBoard {
        TrustBoard::default()
    }

    /// Replaces the board with `reports`, each with its plugin from `set`.
    pub fn publish<'a>(&self, reports: impl IntoIterator<Item = &'a PluginTrust>, set: &FolderSet) {
        let all = reports
            .into_iter()
            .map(|t| (t.clone(), set.get(&t.name).cloned()))
            .collect();
        // A poisoned lock: the vector is replaced whole, never left half-written.
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = all;
    }

    /// The board now, in name order.
    pub fn snapshot(&self) -> Vec<BoardEntry> {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        v.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        v
    }
}

/// What a start-up load of a plugins folder did.
#[derive(Debug, Default)]
pub struct LoadedFolder {
    /// What was decided per plugin.
    pub reports: Vec<PluginTrust>,
    /// The plugins registered (for live reload, [`crate::reload`], to go on from).
    pub set: FolderSet,
    /// The problems met (bad plugins, a bad lock).
    pub problems: Vec<LoadProblem>,
    /// The lock as read (with the compatible updates recorded), empty when it could not
    /// be read: what the MCP servers of the same load are pinned by, so one load reads
    /// the lock once.
    pub lock: Lock,
}

/// Loads every plugin of `dir` into `registry` under the lock of `dir`, on `host`'s
/// engine and under its protected paths (usually through [`Host::load_folder`]): what was
/// decided per plugin, the plugins registered and the problems met (bad plugins, a bad
/// lock); good plugins load regardless. An unreadable lock counts as empty (every plugin
/// unapproved), never as approval.
///
/// **Parallel, yet deterministic.** Each component is compiled, described and evaluated
/// against the lock on a blocking thread, at most [`std::thread::available_parallelism`]
/// at a time. Registration goes through a [`FolderSet`]: tool names are a function of the
/// set of plugins, never of their order (a name two plugins describe is `plugin__tool`
/// for both; when a later plugin turns out to describe a name an earlier one registered
/// plainly, the earlier one is renamed then). Recording compatible updates in the lock
/// and the problems list stay in file-name order. A plugin is registered as soon as it
/// and every plugin before it in that order are done, so the registry fills up while
/// later (larger) components still compile, and the outcome never depends on which
/// compile finishes first. The lock is written once, at the end.
pub async fn load_folder_with(
    host: &Host,
    registry: &ToolRegistry,
    dir: &Path,
    rules: &LoadRules,
    progress: &dyn LoadProgress,
) -> LoadedFolder {
    load_folder_inner(host, registry, dir, rules, progress).await
}

async fn load_folder_inner(
    host: &Host,
    registry: &ToolRegistry,
    dir: &Path,
    rules: &LoadRules,
    progress: &dyn LoadProgress,
) -> LoadedFolder {
    let mut problems = Vec::new();
    let mut set = FolderSet::new();
    let engine = host.engine().clone();
    let files = match crate::wasm::folder::plugin_files(dir) {
        Ok(f) => f,
        Err(e) => {
            return LoadedFolder {
                reports: Vec::new(),
                set,
                problems: vec![plugin_problem(&e)],
                lock: read_lock(dir).0,
            };
        }
    };
    let lock_path = Lock::path_in(dir);
    let (mut lock, lock_problem) = read_lock(dir);
    let lock_ok = lock_problem.is_none();
    problems.extend(lock_problem);
    let rules = rules.clone();
    progress.event(&LoadEvent::Started { total: files.len() });
    let mut jobs = Jobs::new(files.len());
    let mut reports = Vec::new();
    let mut loaded = Vec::new();
    let mut dirty = false;
    let mut next_job = 0;
    let mut next_register = 0;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while next_register < files.len() {
        while next_job < files.len() && jobs.running.len() < jobs.limit {
            let job = PrepareJob::new(&engine, dir, &files[next_job], &lock, rules.clone());
            jobs.spawn(next_job, job);
            next_job += 1;
        }
        tokio::select! {
            Some(joined) = jobs.set.join_next_with_id() => {
                let (r, outcome) = jobs.finished(joined);
                progress.event(&LoadEvent::Finished {
                    name: &r.name,
                    elapsed: r.elapsed,
                    slow: r.slow,
                    done: jobs.done,
                    total: files.len(),
                });
                if let Some(slot) = jobs.results.get_mut(r.index) {
                    *slot = Some(outcome);
                }
            }
            _ = tick.tick() => jobs.report_slow(progress),
        }
        // Register the finished prefix, in file order.
        while let Some(Some(outcome)) = jobs.results.get_mut(next_register).map(Option::take) {
            next_register += 1;
            match outcome.and_then(|p| register_prepared(registry, &mut set, p)) {
                Ok((report, plugin)) => {
                    dirty |= record_update(&mut lock, &report);
                    loaded.extend(plugin);
                    reports.push(report);
                }
                Err(p) => problems.push(p),
            }
        }
    }
    if dirty
        && lock_ok
        && let Err(e) = lock.save(&lock_path)
    {
        problems.push(LoadProblem {
            source: lock_path.display().to_string(),
            message: e.to_string(),
        });
    }
    progress.event(&LoadEvent::Done);
    warm_later(loaded);
    LoadedFolder {
        reports,
        set,
        problems,
        lock,
    }
}

/// A job in flight: which file, since when, whether it was reported as compiling.
struct Running {
    index: usize,
    name: String,
    bytes: u64,
    started: std::time::Instant,
    slow: bool,
}

/// A finished job: which file, how long it took, whether it was reported as compiling.
struct Finished {
    index: usize,
    name: String,
    elapsed: Duration,
    slow: bool,
}

/// The jobs of one folder load: at most `limit` running, results by file index.
struct Jobs {
    limit: usize,
    set: tokio::task::JoinSet<Result<Prepared, LoadProblem>>,
    running: std::collections::HashMap<tokio::task::Id, Running>,
    results: Vec<Option<Result<Prepared, LoadProblem>>>,
    done: usize,
}

impl Jobs {
    fn new(n: usize) -> Jobs {
        Jobs {
            limit: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            set: tokio::task::JoinSet::new(),
            running: std::collections::HashMap::new(),
            results: (0..n).map(|_| None).collect(),
            done: 0,
        }
    }

    /// Runs `job` on a blocking thread ([`PrepareJob::blocking`]).
    fn spawn(&mut self, index: usize, job: PrepareJob) {
        let bytes = std::fs::metadata(&job.path).map_or(0, |m| m.len());
        let name = job.name.clone();
        let abort = self.set.spawn_blocking(job.blocking());
        self.running.insert(
            abort.id(),
            Running {
                index,
                name,
                bytes,
                started: std::time::Instant::now(),
                slow: false,
            },
        );
    }

    /// Books a joined job: which file it was, and its outcome (a panic becomes a problem).
    fn finished(
        &mut self,
        joined: Result<(tokio::task::Id, Result<Prepared, LoadProblem>), tokio::task::JoinError>,
    ) -> (Finished, Result<Prepared, LoadProblem>) {
        let (id, outcome) = match joined {
            Ok((id, outcome)) => (id, Ok(outcome)),
            Err(e) => (e.id(), Err(e)),
        };
        self.done += 1;
        // Every spawned task is in `running` until it is joined, which happens once.
        let r = self.running.remove(&id);
        let (index, name, elapsed, slow) = match r {
            Some(r) => (r.index, r.name, r.started.elapsed(), r.slow),
            None => (usize::MAX, String::new(), Duration::ZERO, false),
        };
        if slow {
            tracing::info!(plugin = %name, "compiled {name}.wasm in {:.1} s", elapsed.as_secs_f64());
        }
        let outcome = outcome.unwrap_or_else(|e| {
            Err(LoadProblem {
                source: name.clone(),
                message: format!("loading {name}.wasm failed: {e}"),
            })
        });
        let f = Finished {
            index,
            name,
            elapsed,
            slow,
        };
        (f, outcome)
    }

    /// Reports the jobs that have been running for [`SLOW_LOAD`] (once each).
    fn report_slow(&mut self, progress: &dyn LoadProgress) {
        let mut slow: Vec<&mut Running> = self
            .running
            .values_mut()
            .filter(|r| !r.slow && r.started.elapsed() >= SLOW_LOAD)
            .collect();
        slow.sort_by_key(|r| r.index);
        for r in slow {
            r.slow = true;
            tracing::info!(plugin = %r.name, "compiling {}.wasm ({})", r.name, human_bytes(r.bytes));
            progress.event(&LoadEvent::Compiling {
                name: &r.name,
                bytes: r.bytes,
            });
        }
    }
}

/// The plugin name of a component file (its stem).
pub fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(read: &[&Path], write: &[&Path]) -> Capabilities {
        let s = |v: &[&Path]| v.iter().map(|p| Folder::from(*p)).collect();
        Capabilities {
            read: s(read),
            write: s(write),
            ..Capabilities::default()
        }
    }

    #[test]
    fn the_effective_policy_is_request_and_approval_on_path_components() {
        let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = tmp.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        for d in ["data/docs", "data/pics", "datax", "out"] {
            std::fs::create_dir_all(root.join(d)).unwrap_or_else(|e| panic!("{e}"));
        }
        let file = root.join("p.toml");
        let request = Policy::parse(
            "read = [\"./data\", \"./datax\", \"./gone\"]\nwrite = [\"./out\"]\n",
            &file,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(request.missing.len(), 1, "{request:?}");

        // Approved: only a folder inside the requested one (and the missing one, and a
        // string prefix of a requested folder that is not a folder above it).
        let (data, docs, gone) = (root.join("data"), root.join("data/docs"), root.join("gone"));
        let approved = caps(&[&docs, &gone, &root.join("dat")], &[]);
        let p = effective_policy(&request, Some(&approved));
        assert_eq!(
            p.caps.read,
            vec![docs.clone()],
            "the narrower approved folder"
        );
        assert!(p.caps.write.is_empty(), "write was not approved");
        assert_eq!(
            p.missing, request.missing,
            "a missing folder is never opened"
        );

        // Approved wider than requested: the requested folder, no more.
        let approved = caps(&[&root], &[&root]);
        let p = effective_policy(&request, Some(&approved));
        assert_eq!(p.caps.read, vec![data.clone(), root.join("datax")]);
        assert_eq!(p.caps.write, vec![root.join("out")]);

        // As approved, with a trailing `/`: the same.
        let slash = PathBuf::from(format!("{}/", data.display()));
        let p = effective_policy(&request, Some(&caps(&[&slash], &[])));
        assert_eq!(p.caps.read, vec![data]);

        // No approval: no folder at all.
        assert!(effective_policy(&request, None).caps.read.is_empty());
    }

    fn rules(list: &[&str]) -> Vec<toolhost_trust::NetRule> {
        list.iter()
            .map(|r| toolhost_trust::NetRule::parse(r).unwrap_or_else(|e| panic!("{r}: {e}")))
            .collect()
    }

    #[test]
    fn the_effective_network_is_what_both_request_and_approval_allow() {
        let file = std::env::temp_dir().join("p.toml");
        let request = Policy::parse(
            "network = [\"https://*.a.example\", \"https://b.example\", \"https://evil.test\"]\n",
            &file,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let granted = |approved: &[&str]| -> Vec<String> {
            let approved = Capabilities {
                network: rules(approved),
                ..Capabilities::default()
            };
            effective_policy(&request, Some(&approved))
                .caps
                .network
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        // A wildcard over two requested rules grants them as requested; a rule of another
        // port grants nothing.
        assert_eq!(
            granted(&["https://*.example", "https://evil.test:8443"]),
            ["https://*.a.example", "https://b.example"]
        );
        // One host under a requested wildcard: that host only, never the wildcard.
        assert_eq!(granted(&["https://x.a.example"]), ["https://x.a.example"]);
        // A look-alike is not under the wildcard.
        assert!(granted(&["https://xa.example", "https://a.example"]).is_empty());
    }
}
