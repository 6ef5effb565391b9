//! What one plugin file offers under the lock: the single decision that start-up
//! ([`super::load_plugins_with`]) and live reload ([`crate::reload`]) share, so a plugin
//! dropped into a running host meets exactly the rules of one present at start
//! (`docs/design.md`, "Live reload"). [`prepare_plugin`] compiles, describes and evaluates
//! one file against its lock entry without touching the registry or the lock;
//! [`register_prepared`] registers the outcome; [`record_update`] books a compatible
//! update in the lock.

use std::path::{Path, PathBuf};

use toolhost_trust::{
    Lock, PackageSignature, PluginEntry, SignatureCovers, ToolDef, TrustState, evaluate,
};

use super::{
    PluginTrust, approve_hint, effective_policy, needs_approval, plugin_name, request_of, tool_def,
};
use crate::loader::{LoadProblem, plugin_problem};
use crate::tools::ToolRegistry;
use crate::wasm::config::ConfigValues;
use crate::wasm::folder::FolderSet;
use crate::wasm::{Plugin, Policy, WasmEngine};

/// Reads the lock of plugins folder `dir`. An unreadable lock counts as empty (every
/// plugin unapproved), never as approval; the problem says so.
pub(crate) fn read_lock(dir: &Path) -> (Lock, Option<LoadProblem>) {
    let lock_path = Lock::path_in(dir);
    match Lock::load(&lock_path) {
        Ok(l) => (l, None),
        Err(e) => {
            let problem = LoadProblem {
                source: lock_path.display().to_string(),
                message: format!("{e}; every plugin is treated as unapproved"),
            };
            (Lock::default(), Some(problem))
        }
    }
}

/// Records a compatible update (`TrustState::Updated`) of a registered plugin in `lock`:
/// its new digest, and its signer and release version when that signer signed the new
/// package (else none: the old signature was of the old file). Returns whether the lock
/// changed and must be written.
pub(crate) fn record_update(lock: &mut Lock, report: &PluginTrust) -> bool {
    if let TrustState::Updated {
        digest,
        signer,
        version,
    } = &report.state
        && let Some(e) = lock.plugins.get_mut(&report.name)
    {
        tracing::info!(plugin = %report.name, signer = ?signer, version = ?version.as_ref().map(ToString::to_string), "update accepted: {digest}");
        e.digest = digest.clone();
        e.signature_covers = signer.as_ref().map(|_| SignatureCovers::Package);
        e.signer = signer.clone();
        e.version = version.clone();
        return true;
    }
    false
}

/// The largest request file (`NAME.toml`) read, in bytes: the limit `toolhost install`
/// applies to a fetched one.
const MAX_REQUEST_BYTES: u64 = 64 * 1024;

pub use crate::config::LoadRules;

/// The values of the config keys `policy` grants that the operator gave plugin `name`,
/// read now (a key the operator did not give stays absent to the plugin). A source that
/// cannot be read refuses the plugin, naming it and the key; nothing is read for keys
/// not granted.
fn resolve_config(
    name: &str,
    path: &Path,
    policy: &Policy,
    rules: &LoadRules,
) -> Result<ConfigValues, LoadProblem> {
    let Some(sources) = rules.config.get(name) else {
        return Ok(ConfigValues::default());
    };
    policy
        .caps
        .config
        .iter()
        .filter_map(|key| sources.get(key).map(|s| (key, s)))
        .map(|(key, source)| {
            source
                .resolve()
                .map(|v| (key.clone(), v))
                .map_err(|e| LoadProblem {
                    source: path.display().to_string(),
                    message: format!(
                        "plugin '{name}': config key {key} ({}): {e}",
                        source.describe()
                    ),
                })
        })
        .collect()
}

/// A valid signature by a trusted key over the package of plugin `name` as it is now: its
/// component (`digest`) and request file (`request`, its bytes), signed in
/// `NAME.wasm.minisig` beside `wasm`, with the release version of the package statement
/// `NAME.wasm.statement` beside it (unversioned without one). `None` when there is no
/// signature or it does not verify (the reason is logged): a change is then held, never
/// accepted.
pub fn package_signature(
    name: &str,
    wasm: &Path,
    digest: &str,
    request: Option<&[u8]>,
    keys: &[String],
) -> Option<PackageSignature> {
    let beside = |ext: &str| {
        let mut p = wasm.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    let read = |path: &Path, limit: u64| match read_bounded(path, limit) {
        Ok(bytes) => Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned())),
        Err(e) => {
            tracing::warn!(plugin = %name, "{}: {e}", path.display());
            Err(())
        }
    };
    let sig_path = beside(".minisig");
    let signature = read(&sig_path, toolhost_dist::signature::MAX_SIGNATURE_BYTES).ok()??;
    let statement_path = toolhost_dist::statement_path(wasm);
    let statement = read(
        &statement_path,
        toolhost_dist::statement::MAX_STATEMENT_BYTES,
    )
    .ok()?;
    let expected = toolhost_dist::Statement::with_digest(name, digest, request);
    let file = statement_path.display().to_string();
    let shipped = statement.as_deref().map(|t| (file.as_str(), t));
    match toolhost_dist::verify_package(&expected, &[], &signature, shipped, keys) {
        // Only a signature over the package counts: one over the component alone does
        // not cover the request the new file asks with (the component's bytes are not
        // given, so that fallback never verifies).
        Ok(v) if v.coverage == toolhost_dist::Coverage::Package => Some(PackageSignature {
            signer: v.signer,
            version: v.version,
        }),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(plugin = %name, "{}: {e}", sig_path.display());
            None
        }
    }
}

/// Reads at most `limit` bytes of `path`; `None` if it does not exist; an error if it is
/// larger.
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut buf = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(std::io::Error::other(format!(
            "larger than the limit of {limit} bytes"
        )));
    }
    Ok(Some(buf))
}

/// Links plugins listed from the compile cache (they are linked on first use) on a
/// blocking thread now, so the first call does not wait for it while the host already
/// answers (`tools/list` needs no linked component).
pub(crate) fn warm_later(plugins: Vec<Plugin>) {
    if !plugins.is_empty() && tokio::runtime::Handle::try_current().is_ok() {
        tokio::task::spawn_blocking(move || {
            for p in &plugins {
                if let Err(e) = p.warm() {
                    tracing::warn!(plugin = %p.path().display(), "{e}");
                }
            }
        });
    }
}

/// Decides what the plugin file `path` of folder `dir` offers under `lock` (see
/// [`prepare_one`]), on a blocking thread, touching neither the registry nor the lock.
/// The one decision start-up ([`super::load_plugins_with`]) and live reload
/// ([`crate::reload`]) share.
pub(crate) async fn prepare_plugin(
    engine: &WasmEngine,
    dir: &Path,
    path: &Path,
    lock: &Lock,
    rules: LoadRules,
) -> Result<Prepared, LoadProblem> {
    let job = PrepareJob::new(engine, dir, path, lock, rules);
    let name = job.name.clone();
    tokio::task::spawn_blocking(job.blocking())
        .await
        .unwrap_or_else(|e| {
            Err(LoadProblem {
                source: path.display().to_string(),
                message: format!("loading {name}.wasm failed: {e}"),
            })
        })
}

/// What one plugin's load decided, before registration: the report, and the plugin to
/// register (`None`: nothing is offered).
pub(crate) type Prepared = (PluginTrust, Option<Plugin>);

/// The order-independent part of loading one plugin, run on a blocking thread.
pub(super) struct PrepareJob {
    engine: WasmEngine,
    dir: PathBuf,
    pub(super) path: PathBuf,
    pub(super) name: String,
    entry: Option<PluginEntry>,
    rules: LoadRules,
}

impl PrepareJob {
    /// The job of file `path` of folder `dir`, evaluated against its entry in `lock`.
    pub(super) fn new(
        engine: &WasmEngine,
        dir: &Path,
        path: &Path,
        lock: &Lock,
        rules: LoadRules,
    ) -> Self {
        let name = plugin_name(path);
        PrepareJob {
            engine: engine.clone(),
            dir: dir.to_path_buf(),
            entry: lock.plugins.get(&name).cloned(),
            path: path.to_path_buf(),
            name,
            rules,
        }
    }

    /// The job as the body of a blocking thread. The load itself is async (`describe()`
    /// runs the guest under a timer) but compiles synchronously, so it is driven by
    /// `block_on` there: the runtime's own threads stay free to serve requests meanwhile.
    pub(super) fn blocking(
        self,
    ) -> impl FnOnce() -> Result<Prepared, LoadProblem> + Send + 'static {
        let handle = tokio::runtime::Handle::current();
        move || handle.block_on(prepare_one(self))
    }
}

fn policy_problem(path: &Path, e: crate::wasm::PolicyError) -> LoadProblem {
    LoadProblem {
        source: path.display().to_string(),
        message: e.to_string(),
    }
}

/// Loads one plugin and decides what it offers, without touching the registry or the
/// lock: compile and describe with no capability, evaluate against the lock entry, and
/// for an approved plugin load again with the approved grant.
async fn prepare_one(job: PrepareJob) -> Result<Prepared, LoadProblem> {
    let PrepareJob {
        engine,
        dir,
        path,
        name,
        entry,
        rules,
    } = job;
    let opts = rules.opts;
    let (engine, dir, path, name, entry) = (&engine, &dir, &path, &name, entry.as_ref());
    let mut report = PluginTrust {
        name: name.to_string(),
        path: path.to_path_buf(),
        state: TrustState::Unapproved,
        needs_approval: Vec::new(),
        withheld: Vec::new(),
        loaded: false,
        digest: None,
        effective: None,
        missing_folder: Vec::new(),
        views: Vec::new(),
        version: entry.and_then(|e| e.version.clone()),
    };
    if entry.is_none() && opts.require_all {
        // Not even described: an unapproved component runs no code at all.
        return Ok((report, None));
    }
    // The request file is read once: the bytes a signature is checked against are the
    // bytes parsed.
    let request_file = Policy::path_for(path);
    let request_text = read_bounded(&request_file, MAX_REQUEST_BYTES)
        .map_err(|e| LoadProblem {
            source: request_file.display().to_string(),
            message: format!("{}: {e}", request_file.display()),
        })?
        .map(|b| {
            String::from_utf8(b).map_err(|_| LoadProblem {
                source: request_file.display().to_string(),
                message: format!("{}: not UTF-8 text", request_file.display()),
            })
        })
        .transpose()?;
    let request = match &request_text {
        Some(text) => Policy::parse_protected(text, &request_file, &engine.protected_paths()),
        None => Ok(Policy::default()),
    }
    .map_err(|e| policy_problem(path, e))?;
    let mut plugin =
        Plugin::load_with_request(engine, path, effective_policy(&request, None), &request)
            .await
            .map_err(|e| plugin_problem(&e))?;
    let defs: Vec<ToolDef> = plugin
        .tools()
        .iter()
        .map(|t| tool_def(t.spec(), t.view()))
        .collect();
    report.digest = Some(plugin.digest());
    let digest = plugin.digest();
    // A signature is looked for only where it decides something: a changed file (its
    // release version and its signer are checked under every update rule).
    let signed = match entry {
        Some(e) if e.digest != digest => package_signature(
            name,
            path,
            &digest,
            request_text.as_deref().map(str::as_bytes),
            &rules.keys,
        ),
        _ => None,
    };
    report.state = evaluate(
        entry,
        &digest,
        &request_of(&request),
        &defs,
        opts,
        signed.as_ref(),
    );
    report.version = match &report.state {
        TrustState::Updated { version, .. } => version.clone(),
        _ => entry.and_then(|e| e.version.clone()),
    };
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
            // A view is a page a host renders to its user: shown only once the operator
            // approved it with its tool (the approval pins its digest).
            let withheld = plugin.withhold_views();
            if !withheld.is_empty() {
                tracing::warn!(
                    plugin = %name,
                    "the views of {} are not served until the plugin is approved (`{}`)",
                    withheld.join(", "),
                    approve_hint(name, dir)
                );
            }
        }
        (TrustState::Held { .. }, Some(_)) => {
            report.withheld = defs.iter().map(|d| d.name.clone()).collect();
            return Ok((report, None));
        }
        (state, Some(entry)) => {
            let mut policy = effective_policy(&request, Some(&entry.grant));
            policy.config_values = resolve_config(name, path, &policy, &rules)?;
            plugin = Plugin::load_with_request(engine, path, policy, &request)
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
    report.views = plugin
        .tools()
        .iter()
        .filter_map(|t| {
            let v = t.view()?;
            Some((t.spec().name.clone(), v.uri.clone(), v.digest.clone()))
        })
        .collect();
    // The folders that do not exist are requested, not in effect.
    let mut effective = plugin.policy().clone();
    effective.missing.clear();
    report.effective = Some(request_of(&effective));
    report.missing_folder = plugin
        .tools()
        .iter()
        .filter_map(|t| {
            let why = plugin.policy().missing_refusal(&t.spec().permissions)?;
            Some((t.spec().name.clone(), why))
        })
        .collect();
    Ok((report, Some(plugin)))
}

/// Registers a prepared plugin into `set` (the plugins of its folder, see
/// [`crate::wasm::folder::FolderSet`]): replaces the version registered before, if any,
/// and renames the tools of other plugins as the one rule of names demands. A plugin that
/// offers nothing is only reported (and a version registered before is removed). All or
/// nothing: a refused plugin leaves the registry as it was.
pub(crate) fn register_prepared(
    registry: &ToolRegistry,
    set: &mut FolderSet,
    (mut report, plugin): Prepared,
) -> Result<Prepared, LoadProblem> {
    let Some(plugin) = plugin else {
        set.remove(registry, &report.name);
        return Ok((report, None));
    };
    set.insert(registry, plugin)
        .map_err(|e| plugin_problem(&e))?;
    let plugin = set.get(&report.name).cloned();
    report.loaded = plugin.as_ref().is_some_and(|p| !p.tools().is_empty());
    Ok((report, plugin))
}
