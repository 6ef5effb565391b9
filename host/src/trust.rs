//! The trust model wired into loading: a plugin's `NAME.toml` is its *request*, the
//! operator's approval in `toolhost.lock` (crate `toolhost-trust`) is the *grant*, and a
//! tool gets declared ∩ request ∩ approval. See `docs/trust.md`.
//!
//! - [`effective_policy`]: the policy a plugin is loaded with: only approved folders,
//!   network rules and env names that are still requested, sockets only if both say so,
//!   and each limit the smaller of request and approval (an unapproved plugin: no
//!   capability, its requested memory and output caps, a deadline and fuel of at most the defaults).
//! - [`load_plugins`]: loads a plugins folder under the lock: unapproved plugins load
//!   without capability (their tools that would need one refuse with the command that
//!   approves them) or not at all (`require_approval = "all"`); changed tool definitions
//!   are withheld; a held plugin offers nothing; a compatible update is recorded.
//! - [`Candidate`]: a plugin file as `approve`/`install` show it before writing the lock.

use std::path::{Path, PathBuf};

use toolhost_trust::{DefStore, Diff, Grant, Lock, PluginEntry, ToolDef, TrustOptions, evaluate};

pub use toolhost_trust::{TrustState, clean};

use crate::config::TrustConfig;
use crate::loader::{LoadProblem, plugin_problem, wasm_engine};
use crate::tools::ToolRegistry;
use crate::wasm::{Plugin, Policy, ToolSpec, WasmEngine};

/// The request of a plugin (its parsed `NAME.toml`) as a trust [`Grant`]: absolute
/// folders, rules as written, and every limit in force (defaults filled in).
pub fn request_of(policy: &Policy) -> Grant {
    let paths = |v: &[PathBuf]| v.iter().map(|p| p.display().to_string()).collect();
    Grant {
        read: paths(&policy.read),
        write: paths(&policy.write),
        network: policy.network.iter().map(|r| r.text.clone()).collect(),
        sockets: policy.sockets,
        env: policy.env.clone(),
        timeout_ms: Some(u64::try_from(policy.timeout.as_millis()).unwrap_or(u64::MAX)),
        fuel: policy.fuel,
        memory_mb: Some((policy.memory_bytes / (1024 * 1024)) as u64),
        output_kb: Some((policy.output_bytes / 1024) as u64),
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (x, None) | (None, x) => x,
    }
}

/// The policy a plugin runs with: `request` ∩ `approved` (see the module doc). With no
/// approval: no capability at all, the request's memory and output caps, and a deadline
/// and fuel budget no larger than the host defaults.
pub fn effective_policy(request: &Policy, approved: Option<&Grant>) -> Policy {
    let default = Policy::default();
    let Some(a) = approved else {
        // Limits are not capabilities: the request's memory and output caps (bounded by
        // the policy parser) apply, so a pure Python tool that needs 128 MiB works
        // unapproved; the deadline and the fuel budget are never above the host default.
        return Policy {
            file: request.file.clone(),
            timeout: request.timeout.min(default.timeout),
            fuel: min_opt(request.fuel, default.fuel),
            memory_bytes: request.memory_bytes,
            output_bytes: request.output_bytes,
            ..default
        };
    };
    let has = |list: &[String], item: String| list.contains(&item);
    let mib = |m: u64| usize::try_from(m.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX);
    let kib = |k: u64| usize::try_from(k.saturating_mul(1024)).unwrap_or(usize::MAX);
    Policy {
        file: request.file.clone(),
        read: request
            .read
            .iter()
            .filter(|p| has(&a.read, p.display().to_string()))
            .cloned()
            .collect(),
        write: request
            .write
            .iter()
            .filter(|p| has(&a.write, p.display().to_string()))
            .cloned()
            .collect(),
        network: request
            .network
            .iter()
            .filter(|r| has(&a.network, r.text.clone()))
            .cloned()
            .collect(),
        sockets: request.sockets && a.sockets,
        env: request
            .env
            .iter()
            .filter(|e| a.env.contains(e))
            .cloned()
            .collect(),
        timeout: match a.timeout_ms {
            Some(ms) => request.timeout.min(std::time::Duration::from_millis(ms)),
            None => request.timeout,
        },
        fuel: min_opt(request.fuel, a.fuel),
        memory_bytes: a
            .memory_mb
            .map_or(request.memory_bytes, |m| request.memory_bytes.min(mib(m))),
        output_bytes: a
            .output_kb
            .map_or(request.output_bytes, |k| request.output_bytes.min(kib(k))),
    }
}

/// The definition of a described tool, as the lock hashes it.
pub fn tool_def(spec: &ToolSpec) -> ToolDef {
    ToolDef::new(
        spec.name.clone(),
        spec.description.clone(),
        spec.parameters.clone(),
        spec.permissions.iter().map(|p| p.as_str().to_string()),
    )
}

/// Whether the request offers this tool any capability (so it must wait for approval).
/// A tool the request offers nothing is pure compute and runs unapproved.
pub fn needs_approval(request: &Policy, spec: &ToolSpec) -> bool {
    let g = crate::wasm::Grant::effective(request, &spec.permissions);
    !g.read.is_empty()
        || !g.write.is_empty()
        || !g.network.is_empty()
        || g.sockets
        || !g.env.is_empty()
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
}

/// Loads every plugin of `dir` into `registry` under the lock of `dir`. Returns what was
/// decided per plugin and the problems met (bad plugins, a bad lock); good plugins load
/// regardless. An unreadable lock counts as empty (every plugin unapproved), never as
/// approval.
pub async fn load_plugins(
    registry: &ToolRegistry,
    dir: &Path,
    cfg: &TrustConfig,
) -> (Vec<PluginTrust>, Vec<LoadProblem>) {
    let mut problems = Vec::new();
    let engine = match wasm_engine() {
        Ok(e) => e,
        Err(e) => {
            problems.push(LoadProblem {
                source: dir.display().to_string(),
                message: e.to_string(),
            });
            return (Vec::new(), problems);
        }
    };
    let files = match crate::wasm::loader::plugin_files(dir) {
        Ok(f) => f,
        Err(e) => return (Vec::new(), vec![plugin_problem(&e)]),
    };
    let lock_path = Lock::path_in(dir);
    let mut lock = match Lock::load(&lock_path) {
        Ok(l) => l,
        Err(e) => {
            problems.push(LoadProblem {
                source: lock_path.display().to_string(),
                message: format!("{e}; every plugin is treated as unapproved"),
            });
            Lock::default()
        }
    };
    let lock_ok = problems.is_empty();
    let opts = cfg.options();
    let mut reports = Vec::new();
    let mut loaded = Vec::new();
    let mut dirty = false;
    for path in files {
        let name = plugin_name(&path);
        match load_one(&engine, registry, dir, &path, &name, &lock, opts).await {
            Ok((report, plugin)) => {
                if let TrustState::Updated { digest } = &report.state
                    && let Some(e) = lock.plugins.get_mut(&name)
                {
                    tracing::info!(plugin = %name, "compatible update accepted: {digest}");
                    e.digest = digest.clone();
                    e.signer = None;
                    dirty = true;
                }
                loaded.extend(plugin);
                reports.push(report);
            }
            Err(p) => problems.push(p),
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
    // Plugins listed from the compile cache are linked on first use; link them now on a
    // blocking thread so the first call does not wait for it, while the host is already
    // answering (`tools/list` needs no linked component).
    if !loaded.is_empty() && tokio::runtime::Handle::try_current().is_ok() {
        tokio::task::spawn_blocking(move || {
            for p in &loaded {
                if let Err(e) = p.warm() {
                    tracing::warn!(plugin = %p.path().display(), "{e}");
                }
            }
        });
    }
    (reports, problems)
}

/// The plugin name of a component file (its stem).
pub fn plugin_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn policy_problem(path: &Path, e: crate::wasm::PolicyError) -> LoadProblem {
    LoadProblem {
        source: path.display().to_string(),
        message: e.to_string(),
    }
}

async fn load_one(
    engine: &WasmEngine,
    registry: &ToolRegistry,
    dir: &Path,
    path: &Path,
    name: &str,
    lock: &Lock,
    opts: TrustOptions,
) -> Result<(PluginTrust, Option<Plugin>), LoadProblem> {
    let entry = lock.plugins.get(name);
    let mut report = PluginTrust {
        name: name.to_string(),
        path: path.to_path_buf(),
        state: TrustState::Unapproved,
        needs_approval: Vec::new(),
        withheld: Vec::new(),
        loaded: false,
    };
    if entry.is_none() && opts.require_all {
        // Not even described: an unapproved component runs no code at all.
        return Ok((report, None));
    }
    let request = Policy::for_component_protected(path, &engine.protected_paths())
        .map_err(|e| policy_problem(path, e))?;
    let mut plugin = Plugin::load_with_policy(engine, path, effective_policy(&request, None))
        .await
        .map_err(|e| plugin_problem(&e))?;
    let defs: Vec<ToolDef> = plugin.tools().iter().map(|t| tool_def(t.spec())).collect();
    report.state = evaluate(entry, &plugin.digest(), &request_of(&request), &defs, opts);
    match (&report.state, entry) {
        (TrustState::Unapproved, _) | (_, None) => {
            let hint = approve_hint(name, dir);
            plugin.refuse_tools(|spec| {
                needs_approval(&request, spec).then(|| {
                    format!(
                        "needs capabilities that the operator has not approved: plugin '{name}' \
                         is unapproved; review and approve it with `{hint}`"
                    )
                })
            });
            report.needs_approval = plugin
                .tools()
                .iter()
                .filter(|t| needs_approval(&request, t.spec()))
                .map(|t| t.spec().name.clone())
                .collect();
        }
        (TrustState::Held { .. }, Some(_)) => {
            report.withheld = defs.iter().map(|d| d.name.clone()).collect();
            return Ok((report, None));
        }
        (state, Some(entry)) => {
            plugin = Plugin::load_with_policy(
                engine,
                path,
                effective_policy(&request, Some(&entry.grant)),
            )
            .await
            .map_err(|e| plugin_problem(&e))?;
            let state = state.clone();
            plugin.retain_tools(|spec| state.offers(&spec.name));
            report.withheld = defs
                .iter()
                .filter(|d| !state.offers(&d.name))
                .map(|d| d.name.clone())
                .collect();
        }
    }
    crate::wasm::loader::register_plugin(registry, &plugin).map_err(|e| plugin_problem(&e))?;
    report.loaded = !plugin.tools().is_empty();
    Ok((report, Some(plugin)))
}

/// A plugin file as `approve` and `install` present it: its request, digest and tools.
#[derive(Debug)]
pub struct Candidate {
    /// The plugin name.
    pub name: String,
    /// The request as a grant (what approving grants).
    pub request: Grant,
    /// "sha256:HEX" of the file.
    pub digest: String,
    /// The tool definitions, as described by the component (run with no capability).
    pub tools: Vec<ToolDef>,
}

impl Candidate {
    /// Loads `wasm` (with `request_file` as its `NAME.toml`, if any) with no capability
    /// and describes it. Nothing is written.
    pub async fn load(name: &str, wasm: &Path) -> anyhow::Result<Candidate> {
        let engine = wasm_engine()?;
        let request = Policy::for_component_protected(wasm, &engine.protected_paths())?;
        Self::load_with_request(name, wasm, &request).await
    }

    /// [`Candidate::load`] with the request given (parsed against where `NAME.toml` will
    /// live), for a component staged elsewhere before it is installed.
    pub async fn load_with_request(
        name: &str,
        wasm: &Path,
        request: &Policy,
    ) -> anyhow::Result<Candidate> {
        let engine = wasm_engine()?;
        let plugin =
            Plugin::load_with_policy(&engine, wasm, effective_policy(request, None)).await?;
        Ok(Candidate {
            name: name.to_string(),
            request: request_of(request),
            digest: plugin.digest(),
            tools: plugin.tools().iter().map(|t| tool_def(t.spec())).collect(),
        })
    }

    /// The diff against the lock entry, if there is one.
    pub fn diff(&self, entry: Option<&PluginEntry>, store: &DefStore) -> Option<Diff> {
        let e = entry?;
        Some(
            Diff::between(
                &e.grant,
                &e.tools,
                |h| store.load(h),
                &self.request,
                &self.tools,
            )
            .with_digest(&e.digest, &self.digest),
        )
    }

    /// What the operator is asked to approve, as text (untrusted parts escaped).
    pub fn summary(&self) -> String {
        use std::fmt::Write;
        let clean = toolhost_trust::clean;
        let mut s = format!(
            "plugin {}  ({})\n  requests:\n",
            clean(&self.name),
            self.digest
        );
        let lines = self.request.lines();
        if !self.request.has_capabilities() {
            s.push_str("    (no capability)\n");
        }
        for l in lines {
            let _ = writeln!(s, "    {}", clean(&l));
        }
        s.push_str("  tools:\n");
        for t in &self.tools {
            let perms = if t.permissions.is_empty() {
                "-".to_string()
            } else {
                t.permissions.join(",")
            };
            let _ = writeln!(
                s,
                "    {} [{}]: {}",
                clean(&t.name),
                clean(&perms),
                clean(&t.description)
            );
        }
        s
    }

    /// The lock entry approving this candidate, keeping its kept definitions in `store`.
    pub fn entry(
        &self,
        source: String,
        signer: Option<String>,
        store: &DefStore,
    ) -> anyhow::Result<PluginEntry> {
        for t in &self.tools {
            store.save(t)?;
        }
        Ok(PluginEntry {
            source,
            digest: self.digest.clone(),
            signer,
            approved_at: toolhost_trust::now_rfc3339(),
            grant: self.request.clone(),
            tools: self
                .tools
                .iter()
                .map(|t| (t.name.clone(), t.hash()))
                .collect(),
        })
    }
}

/// `file://` URL of a local path (absolute), the `source` of a plugin approved in place
/// (written as `toolhost-dist` writes it, so `update` can fetch it again).
pub fn file_source(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    toolhost_dist::Source::File(abs).to_string()
}

// ------------------------------------------------------------------ MCP servers

/// The definition of an MCP server's tool, as the lock pins it (its own name, the
/// description, the input schema and the permissions its annotations map to).
pub fn mcp_tool_def(info: &crate::mcp::McpToolInfo) -> ToolDef {
    ToolDef::new(
        info.name.clone(),
        info.description.clone().unwrap_or_default(),
        info.input_schema.clone(),
        info.annotations
            .as_ref()
            .map(|a| a.permissions())
            .unwrap_or_default()
            .iter()
            .map(|p| p.as_str().to_string()),
    )
}

/// An MCP tool that is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpWithheld {
    /// The server's name in the config.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// `Changed` (definition differs from the pinned one) or `Unapproved` (not pinned,
    /// `require_approval = "all"`).
    pub state: toolhost_trust::McpToolState,
}

/// Connects the MCP servers of `config`, offering only the tools the lock's `[mcp.NAME]`
/// pins allow (see [`toolhost_trust::evaluate_mcp_tool`]), at connect time and at every
/// `tools/list_changed` refresh. Returns what was withheld at connect time and the
/// problems met.
pub async fn connect_mcp(
    registry: &ToolRegistry,
    config: &crate::config::HostConfig,
    lock: &Lock,
) -> (Vec<McpWithheld>, Vec<LoadProblem>) {
    use std::sync::{Arc, Mutex};
    let opts = config.trust.options();
    let withheld: Arc<Mutex<Vec<McpWithheld>>> = Arc::default();
    let pins: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> = lock
        .mcp
        .iter()
        .map(|(k, v)| (k.clone(), v.tools.clone()))
        .collect();
    let filter_for = |server: &str| -> Option<crate::mcp::ToolFilter> {
        let pinned = pins.get(server).cloned();
        let server = server.to_string();
        let withheld = withheld.clone();
        Some(Arc::new(move |info: &crate::mcp::McpToolInfo| {
            let state =
                toolhost_trust::evaluate_mcp_tool(pinned.as_ref(), &mcp_tool_def(info), opts);
            if state == toolhost_trust::McpToolState::Offered {
                return true;
            }
            tracing::warn!(server = %server, tool = %clean(&info.name), ?state, "MCP tool withheld until `toolhost approve mcp:{server}`");
            let mut w = withheld.lock().unwrap_or_else(|e| e.into_inner());
            let item = McpWithheld {
                server: server.clone(),
                tool: info.name.clone(),
                state,
            };
            if !w.contains(&item) {
                w.push(item);
            }
            false
        }))
    };
    let (_clients, problems) =
        crate::mcp::config::connect_all_filtered(registry, &config.mcp, filter_for).await;
    let problems = problems.iter().map(crate::loader::mcp_problem).collect();
    let withheld = withheld.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (withheld, problems)
}
