//! [`Plugin`]: one loaded component, with its `InstancePre`, policy and tools. Loading
//! (size cap, compile through the cache, link, policy, `describe()`) and the lazy linking
//! of a plugin listed from the compile cache live here; the rest of a plugin's life is in
//! its own files: `describe()` and its caps in [`crate::describe`], each described tool
//! ([`WasmTool`], a `BaseTool`) in `tool.rs`, the per-call store set-up in `store.rs`.
//! Every call gets a fresh `Store` and instance, so calls share no state.
//!
//! The names this module exported before that split ([`ToolSpec`], [`describe_limits`],
//! [`DESCRIBE_TIMEOUT`], [`WasmTool`], [`MAX_CANONICAL_BYTES`]) are re-exported here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use wasmtime::component::Component;

use crate::describe::{DescribeFailure, Described, run_describe};
use crate::engine::{Opened, WasmEngine};
use crate::error::PluginError;
use crate::grant::Grant;
use crate::policy::Policy;
use crate::versions::WorldPre;

pub use crate::describe::{DESCRIBE_TIMEOUT, ToolSpec, describe_limits};
pub use crate::tool::{MAX_CANONICAL_BYTES, WasmTool};

/// The shared part of a plugin: what each of its tools holds on to.
pub(crate) struct PluginInner {
    /// The component file.
    pub(crate) path: PathBuf,
    /// The plugin name (the file stem).
    pub(crate) name: Arc<str>,
    /// The policy in force.
    pub(crate) policy: Policy,
    /// The engine it was compiled on (the host's, or its concurrency-enabled sibling).
    pub(crate) engine: WasmEngine,
    /// sha256 of the component file (hex).
    digest: String,
    /// The linked component: set at load, or on first use for a plugin loaded from the
    /// cache (see [`Plugin::load`]). A failure is kept, so every later use reports it.
    linked: OnceLock<Result<Linked, Arc<PluginError>>>,
    /// The Cranelift build that replaced a baseline (Winch) build, once its background
    /// compile is done ([`crate::EngineOptions::baseline_first`]). Set once; a call
    /// reads it when it starts, so a call in flight keeps the code it started with.
    optimized: OnceLock<Optimized>,
}

/// The optimized build of a plugin first compiled by the baseline compiler.
pub(crate) struct Optimized {
    /// The engine it was compiled on.
    engine: WasmEngine,
    /// The linked component.
    linked: Linked,
}

/// Which code a plugin's calls run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeTier {
    /// Baseline (Winch) code, while the optimized build compiles in the background.
    Baseline,
    /// Optimized (Cranelift) code: loaded from the cache, compiled at load, or swapped
    /// in after a baseline start.
    Optimized,
}

/// A component linked against the host: ready to instantiate.
pub(crate) struct Linked {
    /// The pre-linked component.
    pub(crate) pre: WorldPre,
    /// Its imports, by name.
    pub(crate) imports: Vec<String>,
}

impl PluginInner {
    /// The linked component, linking it now if this is its first use. A failure is
    /// [`PluginError::Link`], with the cause the first attempt met.
    pub(crate) fn linked(&self) -> Result<&Linked, PluginError> {
        self.linked
            .get_or_init(|| {
                let t0 = std::time::Instant::now();
                let res = self.link_now().map_err(Arc::new);
                tracing::debug!(plugin = %self.path.display(), us = t0.elapsed().as_micros() as u64, ok = res.is_ok(), "plugin linked");
                res
            })
            .as_ref()
            .map_err(|cause| PluginError::Link {
                path: self.path.display().to_string(),
                cause: cause.clone(),
            })
    }

    /// The engine and linked component a call starting now runs on: the optimized
    /// build once there is one, else the build of the load.
    pub(crate) fn runnable(&self) -> Result<(&WasmEngine, &WorldPre), PluginError> {
        if let Some(o) = self.optimized.get() {
            return Ok((&o.engine, &o.linked.pre));
        }
        Ok((&self.engine, &self.linked()?.pre))
    }

    fn link_now(&self) -> Result<Linked, PluginError> {
        let component = match self.engine.cached_artifact(&self.digest) {
            Some(c) => c,
            None => {
                // The cached artifact went away since the plugin was listed: compile the
                // file again, which must still be the file that was described.
                let max = self.engine.options().max_plugin_bytes;
                let (engine, c, digest) = self.engine.load_file(&self.path, max)?;
                if digest != self.digest || !Arc::ptr_eq(&engine.inner, &self.engine.inner) {
                    return Err(PluginError::Changed {
                        path: self.path.display().to_string(),
                    });
                }
                c
            }
        };
        link(&self.engine, &component, &self.path.display().to_string())
    }
}

/// Links a compiled component against the host and checks it implements the `tool` world,
/// or else is a plain WIT component ([`crate::plain::is_plain`]).
fn link(engine: &WasmEngine, component: &Component, name: &str) -> Result<Linked, PluginError> {
    let imports = component
        .component_type()
        .imports(engine.engine())
        .map(|(n, _)| n.to_string())
        .collect::<Vec<_>>();
    let wrong = |e: wasmtime::Error| PluginError::WrongWorld {
        path: name.to_string(),
        message: format!("{e:#}"),
    };
    let pre = engine
        .inner
        .linker
        .instantiate_pre(component)
        .map_err(|e| {
            if crate::plain::is_plain(engine.engine(), component) {
                PluginError::PlainWit {
                    path: name.to_string(),
                    message: format!(
                        "cannot link it: {e:#} (the host provides WASI 0.2 and nothing else)"
                    ),
                }
            } else {
                wrong(e)
            }
        })?;
    let pre = match WorldPre::new(pre.clone()) {
        Ok(p) => p,
        Err(_) if crate::plain::is_plain(engine.engine(), component) => {
            WorldPre::Plain(crate::plain::PlainPre { pre })
        }
        Err(e) => return Err(wrong(e)),
    };
    tracing::debug!(plugin = name, world = pre.version(), "component linked");
    Ok(Linked { pre, imports })
}

/// One loaded component: its tools, policy and imports. A clone shares the component.
#[derive(Clone)]
pub struct Plugin {
    inner: Arc<PluginInner>,
    tools: Vec<Arc<WasmTool>>,
    /// For a plain WIT component: each exported function that is not a tool, and why.
    /// `None` for a `tool`-world component.
    refused: Option<Arc<Vec<String>>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("path", &self.inner.path)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.spec.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Plugin {
    /// Loads one component file: size cap, compile (through the cache), link, policy,
    /// `describe()`. Does not register anything.
    ///
    /// **From the cache.** When the compile cache already holds this exact file's
    /// artifact (same digest, by the file-identity index) and its `describe()` result,
    /// the plugin is listed from those without mapping the artifact: linking happens on
    /// first use or in [`Plugin::warm`]. A host with large JS/Python plugins thus answers
    /// `tools/list` within milliseconds of starting. Both cache entries exist only for a
    /// file that compiled, linked as a `tool` world and described itself successfully
    /// under this host version and engine configuration.
    pub async fn load(engine: &WasmEngine, path: &Path) -> Result<Plugin, PluginError> {
        let policy =
            Policy::for_component_protected(path, &engine.protected_paths()).map_err(|source| {
                PluginError::Policy {
                    path: path.display().to_string(),
                    source,
                }
            })?;
        Self::load_with_policy(engine, path, policy).await
    }

    /// [`Plugin::load`] with the policy given by the caller instead of read from
    /// `NAME.toml` (the host passes the operator-approved grant, a subset of the request
    /// read with [`Policy::for_component_protected`]; see `docs/trust.md`).
    pub async fn load_with_policy(
        engine: &WasmEngine,
        path: &Path,
        policy: Policy,
    ) -> Result<Plugin, PluginError> {
        let request = policy.clone();
        Self::load_with_request(engine, path, policy, &request).await
    }

    /// [`Plugin::load_with_policy`], also given the plugin's request (`NAME.toml` as
    /// written, of which `policy` is the approved part). A tool-world component's tools
    /// declare their own permissions and the request is not used; a plain WIT component's
    /// tools declare what the request asks for of what its imports could use
    /// ([`crate::plain::declared`]), so an unapproved request shows as needing approval
    /// rather than as a tool that declared nothing.
    pub async fn load_with_request(
        engine: &WasmEngine,
        path: &Path,
        policy: Policy,
        request: &Policy,
    ) -> Result<Plugin, PluginError> {
        let name = path.display().to_string();
        let t0 = std::time::Instant::now();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone());
        let max = engine.options().max_plugin_bytes;
        let opened = engine.open_plugin(path, max, true, |digest| {
            engine.cached_describe::<Described>(digest)
        })?;
        let main_engine = engine.clone();
        // Called once, in whichever arm runs.
        let new_inner = move |engine: &WasmEngine, digest: String, linked| {
            Arc::new(PluginInner {
                path: path.to_path_buf(),
                name: Arc::from(stem),
                policy,
                engine: engine.clone(),
                digest,
                linked,
                optimized: OnceLock::new(),
            })
        };
        let world_tools = |specs: Vec<ToolSpec>| {
            specs
                .into_iter()
                .map(|s| {
                    let guest = s.name.clone();
                    (s, guest)
                })
                .collect::<Vec<_>>()
        };
        let (inner, specs, refused) = match opened {
            Opened::Listed {
                digest,
                cached: Described::Tools(specs),
            } => (
                new_inner(engine, digest, OnceLock::new()),
                world_tools(specs),
                None,
            ),
            Opened::Listed {
                digest,
                cached: Described::Plain(plain),
            } => {
                let (specs, refused) = plain_tools(plain, request);
                (
                    new_inner(engine, digest, OnceLock::new()),
                    specs,
                    Some(refused),
                )
            }
            Opened::Listed {
                digest,
                cached: Described::Rejected(rejection),
            } => {
                tracing::warn!(
                    plugin = %name,
                    "describe() of this component (sha256 {digest}) was refused before; refusing it again from the compile cache ({})",
                    engine.describe_cache_file(&digest).map(|f| f.display().to_string()).unwrap_or_default()
                );
                return Err(rejection.into_error(&name));
            }
            Opened::Compiled {
                engine,
                component,
                digest,
                optimize,
            } => {
                // The engine may be the concurrency-enabled sibling (see `compile_any`),
                // or the baseline one (see `EngineOptions::baseline_first`).
                let linked = link(&engine, &component, &name)?;
                let plain = matches!(linked.pre, WorldPre::Plain(_));
                let inner = new_inner(&engine, digest.clone(), OnceLock::from(Ok(linked)));
                if plain {
                    // Derived from the component's type and its doc comments (read from
                    // the file again: it must still be the file that was compiled).
                    let max = engine.options().max_plugin_bytes;
                    let bytes = std::fs::File::open(path)
                        .and_then(|mut f| crate::engine::read_same(&mut f, &digest, max))
                        .map_err(|source| PluginError::Io {
                            path: name.clone(),
                            source,
                        })?
                        .ok_or_else(|| PluginError::Changed { path: name.clone() })?;
                    let derived = crate::plain::derive(engine.engine(), &component, Some(&bytes))
                        .map_err(|message| PluginError::PlainWit {
                        path: name.clone(),
                        message,
                    })?;
                    drop(bytes);
                    engine.store_describe(&digest, &Described::Plain(derived.clone()));
                    if let Some(file) = optimize {
                        optimize_later(&inner, &main_engine, file);
                    }
                    let (specs, refused) = plain_tools(derived, request);
                    for why in &refused {
                        tracing::warn!(plugin = %name, "not a tool: {why}");
                    }
                    (inner, specs, Some(refused))
                } else {
                    // describe() is a pure function of the component (it runs with no
                    // grants), so its result, or a refusal that does not depend on the
                    // policy, is cached by the component's digest.
                    match run_describe(&inner).await {
                        Ok(specs) => {
                            engine.store_describe(&digest, &Described::Tools(specs.clone()));
                            // Only a component that described itself is worth the
                            // optimizing compile.
                            if let Some(file) = optimize {
                                optimize_later(&inner, &main_engine, file);
                            }
                            (inner, world_tools(specs), None)
                        }
                        Err(DescribeFailure::Remembered(rejection)) => {
                            engine.store_describe(&digest, &Described::Rejected(rejection.clone()));
                            return Err(rejection.into_error(&name));
                        }
                        Err(DescribeFailure::Other(message)) => {
                            return Err(PluginError::Describe {
                                path: name.clone(),
                                message,
                            });
                        }
                    }
                }
            }
        };
        // The views its author packaged beside it (`NAME.ui/TOOL.html`): a refused page
        // costs only itself (crate::views).
        let names: Vec<&str> = specs.iter().map(|(s, _)| s.name.as_str()).collect();
        let mut views = crate::views::load(&inner.name, path, &names);
        for why in views.refused.iter().take(8) {
            tracing::warn!(plugin = %name, "view not served: {why}");
        }
        let tools = specs
            .into_iter()
            .map(|(spec, guest)| {
                let view = views.by_tool.remove(&spec.name);
                let grant = Grant::effective(&inner.policy, &spec.permissions);
                // A tool needing a requested folder that does not exist refuses with the
                // fix; the plugin's other tools are unaffected.
                let refusal = inner.policy.missing_refusal(&spec.permissions);
                Arc::new(WasmTool {
                    plugin: inner.clone(),
                    guest_name: Arc::from(guest.as_str()),
                    registered: Arc::from(spec.name.as_str()),
                    spec,
                    grant,
                    refusal,
                    view,
                    spare: Arc::default(),
                })
            })
            .collect();
        tracing::debug!(
            plugin = %name,
            linked = inner.linked.get().is_some(),
            us = t0.elapsed().as_micros() as u64,
            "plugin loaded"
        );
        Ok(Plugin {
            inner,
            tools,
            refused: refused.map(Arc::new),
        })
    }

    /// Names every tool by the registry's rule as `naming` gives it for this plugin: a
    /// contested name becomes `plugin__tool`, every other tool keeps its described name. A tool whose name does not change is kept as it is
    /// (the same `Arc`), so a caller can tell which registrations must change.
    pub(crate) fn qualify(&mut self, naming: &toolhost_core::tools::Naming) {
        for t in &mut self.tools {
            let name = naming.name(&t.spec.name);
            if *t.registered != *name {
                *t = Arc::new(t.renamed(name));
            }
        }
    }

    /// Whether the component is linked (always after a load that compiled it; after a
    /// load from the cache only once used or warmed).
    pub fn is_linked(&self) -> bool {
        self.inner.linked.get().is_some()
    }

    /// Which code calls starting now run: baseline code while the optimized build of a
    /// baseline start is still compiling, optimized code otherwise.
    pub fn code_tier(&self) -> CodeTier {
        if self.inner.optimized.get().is_some() {
            CodeTier::Optimized
        } else {
            self.loaded_tier()
        }
    }

    /// Which code the plugin was loaded with: baseline after a baseline start
    /// ([`crate::EngineOptions::baseline_first`]) or on a Winch engine, optimized
    /// otherwise. Unlike [`Self::code_tier`] it does not change.
    pub fn loaded_tier(&self) -> CodeTier {
        match self.inner.engine.options().compiler {
            crate::Compiler::Cranelift => CodeTier::Optimized,
            crate::Compiler::Winch => CodeTier::Baseline,
        }
    }

    /// Links the component now if it was loaded from the cache and not used yet (so the
    /// first call does not pay for it). Blocking: maps and links the compiled artifact.
    pub fn warm(&self) -> Result<(), PluginError> {
        self.inner.linked().map(|_| ())
    }

    /// The component file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The plugin name (the file stem).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.inner.policy
    }

    /// The described tools.
    pub fn tools(&self) -> &[Arc<WasmTool>] {
        &self.tools
    }

    /// "sha256:HEX" of the component file (as the engine computed it when loading).
    pub fn digest(&self) -> String {
        format!("sha256:{}", self.inner.digest)
    }

    /// Keeps only the tools for which `keep` is true (the host withholds tools whose
    /// definition the operator has not approved).
    pub fn retain_tools(&mut self, keep: impl Fn(&ToolSpec) -> bool) {
        self.tools.retain(|t| keep(&t.spec));
    }

    /// Makes every tool for which `refuse` returns a message refuse each call with
    /// `PermissionDenied(message)`, without running (the host's tools that need an
    /// approval the plugin does not have yet).
    pub fn refuse_tools(&mut self, refuse: impl Fn(&ToolSpec) -> Option<String>) {
        for t in &mut self.tools {
            if let Some(msg) = refuse(&t.spec) {
                let mut tool = WasmTool::clone(t);
                tool.refusal = Some(msg);
                *t = Arc::new(tool);
            }
        }
    }

    /// Withholds the MCP App views of its tools (`NAME.ui/`): they are not served, and
    /// the tools are listed without them. The names of the tools that had one.
    pub fn withhold_views(&mut self) -> Vec<String> {
        let mut had = Vec::new();
        for t in &mut self.tools {
            if t.view.is_some() {
                had.push(t.spec.name.clone());
                let mut tool = WasmTool::clone(t);
                tool.view = None;
                *t = Arc::new(tool);
            }
        }
        had
    }

    /// Whether this is a plain WIT component (its tools derived from its exported
    /// functions, see [`crate::plain`]) rather than a `tool`-world one.
    pub fn is_plain_wit(&self) -> bool {
        self.refused.is_some()
    }

    /// For a plain WIT component, each exported function that is not a tool and why
    /// (a resource in its signature, a name clash); empty otherwise.
    pub fn refused_exports(&self) -> &[String] {
        self.refused.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The component's imports (WASI interfaces, `toolhost:tool/host`, ...). Links the
    /// component if it is not yet (see [`Plugin::warm`]).
    pub fn imports(&self) -> Result<&[String], PluginError> {
        self.inner.linked().map(|l| l.imports.as_slice())
    }

    /// The version of the plugin world the component implements (`"0.1.0"` for
    /// `toolhost:tool@0.1.0`, `"0.2.0"`, ...): the world its SDK was built against. Links
    /// the component if it is not yet (see [`Plugin::warm`]).
    pub fn world_version(&self) -> Result<&'static str, PluginError> {
        self.inner.linked().map(|l| l.pre.version())
    }
}

/// The tools of a plain component as (spec, export to call) pairs, each declaring what
/// `request` asks for of what it could use ([`crate::plain::declared`]), and its
/// refusals.
fn plain_tools(
    d: crate::plain::PlainDescribed,
    request: &Policy,
) -> (Vec<(ToolSpec, String)>, Vec<String>) {
    (
        d.tools
            .into_iter()
            .map(|mut t| {
                t.spec.permissions = crate::plain::declared(request, &t.spec.permissions);
                (t.spec, t.export)
            })
            .collect(),
        d.refused,
    )
}

/// The background half of a tier-up: queues, on `engine`'s optimizer thread, the
/// Cranelift compile of the component in `file` (read again at its turn, and only if its
/// bytes still have the plugin's digest), on the host's engine, which writes the artifact
/// to the compile cache; then its linking and its swap into the plugin. The job holds the plugin
/// weakly: a plugin dropped before its turn (replaced, removed) is skipped, one dropped
/// during the compile is not kept alive (its artifact is still cached). A failure leaves
/// the plugin on its baseline code, which is correct, only slower; it is logged.
fn optimize_later(inner: &Arc<PluginInner>, engine: &WasmEngine, mut file: std::fs::File) {
    let weak = Arc::downgrade(inner);
    let path = inner.path.clone();
    let digest = inner.digest.clone();
    let main = engine.clone();
    let queued = engine.optimize_later(Box::new(move || {
        if weak.strong_count() == 0 {
            return;
        }
        let t0 = std::time::Instant::now();
        let name = path.display().to_string();
        let bytes = match crate::engine::read_same(&mut file, &digest, main.options().max_plugin_bytes) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                tracing::debug!(plugin = %name, "changed since it was loaded: no optimizing compile (the reload takes the new file)");
                return;
            }
            Err(e) => {
                tracing::warn!(plugin = %name, "cannot read the component again for the optimizing compile; it keeps running its baseline code: {e}");
                return;
            }
        };
        drop(file);
        let linked = main
            .compile_any_digest(&bytes, &path, &digest)
            .and_then(|(engine, component)| Ok((link(&engine, &component, &name)?, engine)));
        drop(bytes);
        match linked {
            Ok((linked, engine)) => {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                // Only this job sets it, once.
                let _ = inner.optimized.set(Optimized { engine, linked });
                tracing::info!(
                    plugin = %name,
                    ms = t0.elapsed().as_millis() as u64,
                    "optimized build (Cranelift) compiled and swapped in"
                );
            }
            Err(e) => tracing::warn!(
                plugin = %name,
                "the optimized compile failed; the plugin keeps running its baseline code: {e}"
            ),
        }
    }));
    if !queued {
        tracing::warn!(
            plugin = %inner.path.display(),
            "cannot queue the optimizing compile; the plugin keeps running its baseline code"
        );
    }
}
