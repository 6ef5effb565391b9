//! [`Plugin`] (one loaded component: its `InstancePre`, policy and tools) and
//! [`WasmTool`] (one described tool, a [`BaseTool`]). Every call gets a fresh `Store` and
//! instance, so calls share no state; fuel, the epoch deadline and the memory limiter are
//! set before instantiation.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use toolhost_core::tools::{
    BaseTool, Permission, ToolContext, ToolError, ToolMetadata, ToolOutput, ToolSource,
    truncate_render,
};
use wasmtime::component::Component;
use wasmtime::{Store, UpdateDeadline};

use crate::bindings::{self, ToolPre};
use crate::engine::{Opened, WasmEngine};
use crate::error::PluginError;
use crate::limits::{StopReason, TrapFacts, map_trap};
use crate::policy::Policy;
use crate::sandbox::{Grant, HostState, StateSpec};

/// Largest canonical JSON a call may return, bytes. Bigger results are truncated (the
/// canonical value becomes the truncated text) rather than failing the call.
pub const MAX_CANONICAL_BYTES: usize = 1 << 20;

/// Budget of `describe()` at load time.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A tool as the component describes it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolSpec {
    /// The name.
    pub name: String,
    /// The description.
    pub description: String,
    /// The parameter JSON Schema.
    pub parameters: Value,
    /// Declared permissions.
    pub permissions: Vec<Permission>,
    /// Tags.
    pub tags: Vec<String>,
}

pub(crate) struct PluginInner {
    pub(crate) path: PathBuf,
    pub(crate) name: Arc<str>,
    pub(crate) policy: Policy,
    pub(crate) engine: WasmEngine,
    /// sha256 of the component file (hex).
    digest: String,
    /// The linked component: set at load, or on first use for a plugin loaded from the
    /// cache (see [`Plugin::load`]).
    linked: OnceLock<Result<Linked, String>>,
}

/// A component linked against the host: ready to instantiate.
struct Linked {
    pre: ToolPre<HostState>,
    imports: Vec<String>,
}

impl PluginInner {
    /// The linked component, linking it now if this is its first use.
    fn linked(&self) -> Result<&Linked, String> {
        self.linked
            .get_or_init(|| {
                let t0 = std::time::Instant::now();
                let res = self.link_now();
                tracing::debug!(plugin = %self.path.display(), us = t0.elapsed().as_micros() as u64, ok = res.is_ok(), "plugin linked");
                res
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    fn link_now(&self) -> Result<Linked, String> {
        let component = match self.engine.cached_artifact(&self.digest) {
            Some(c) => c,
            None => {
                // The cached artifact went away since the plugin was listed: compile the
                // file again, which must still be the file that was described.
                let max = self.engine.options().max_plugin_bytes;
                let (engine, c, digest) = self
                    .engine
                    .load_file(&self.path, max)
                    .map_err(|e| e.to_string())?;
                if digest != self.digest || !Arc::ptr_eq(&engine.inner, &self.engine.inner) {
                    return Err(format!(
                        "{} changed since it was loaded; restart toolhost to load the new version",
                        self.path.display()
                    ));
                }
                c
            }
        };
        link(&self.engine, &component, &self.path.display().to_string()).map_err(|e| e.to_string())
    }
}

/// Links a compiled component against the host and checks it implements the `tool` world.
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
        .map_err(wrong)?;
    let pre = ToolPre::new(pre).map_err(wrong)?;
    Ok(Linked { pre, imports })
}

/// One loaded component: its tools, policy and imports.
pub struct Plugin {
    inner: Arc<PluginInner>,
    tools: Vec<Arc<WasmTool>>,
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

fn permission_from_wit(p: bindings::Permission) -> Permission {
    use bindings::Permission as W;
    match p {
        W::Read => Permission::Read,
        W::Write => Permission::Write,
        W::Delete => Permission::Delete,
        W::Network => Permission::Network,
        W::Shell => Permission::Shell,
        W::FileSystem => Permission::FileSystem,
        W::Custom(s) => Permission::Custom(s),
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
        let policy = Policy::for_component(path).map_err(|source| PluginError::Policy {
            path: path.display().to_string(),
            source,
        })?;
        Self::load_with_policy(engine, path, policy).await
    }

    /// [`Plugin::load`] with the policy given by the caller instead of read from
    /// `NAME.toml` (the host passes the operator-approved grant; see `docs/trust.md`).
    pub async fn load_with_policy(
        engine: &WasmEngine,
        path: &Path,
        policy: Policy,
    ) -> Result<Plugin, PluginError> {
        let name = path.display().to_string();
        let t0 = std::time::Instant::now();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone());
        let max = engine.options().max_plugin_bytes;
        let opened = engine.open_plugin(path, max, |digest| {
            engine.cached_describe::<Vec<ToolSpec>>(digest)
        })?;
        // Called once, in whichever arm runs.
        let new_inner = move |engine: &WasmEngine, digest: String, linked| {
            Arc::new(PluginInner {
                path: path.to_path_buf(),
                name: Arc::from(stem),
                policy,
                engine: engine.clone(),
                digest,
                linked,
            })
        };
        let (inner, specs) = match opened {
            Opened::Listed { digest, cached } => {
                (new_inner(engine, digest, OnceLock::new()), cached)
            }
            Opened::Compiled {
                engine,
                component,
                digest,
            } => {
                // The engine may be the concurrency-enabled sibling (see `compile_any`).
                let linked = link(&engine, &component, &name)?;
                let inner = new_inner(&engine, digest.clone(), OnceLock::from(Ok(linked)));
                // describe() is a pure function of the component (it runs with no
                // grants), so its result is cached by the component's digest.
                let specs = describe(&inner)
                    .await
                    .map_err(|message| PluginError::Describe {
                        path: name.clone(),
                        message,
                    })?;
                engine.store_describe(&digest, &specs);
                (inner, specs)
            }
        };
        let tools = specs
            .into_iter()
            .map(|spec| {
                let grant = Grant::effective(&inner.policy, &spec.permissions);
                Arc::new(WasmTool {
                    plugin: inner.clone(),
                    name: Arc::from(spec.name.as_str()),
                    spec,
                    grant,
                    refusal: None,
                })
            })
            .collect();
        tracing::debug!(
            plugin = %name,
            linked = inner.linked.get().is_some(),
            us = t0.elapsed().as_micros() as u64,
            "plugin loaded"
        );
        Ok(Plugin { inner, tools })
    }

    /// Whether the component is linked (always after a load that compiled it; after a
    /// load from the cache only once used or warmed).
    pub fn is_linked(&self) -> bool {
        self.inner.linked.get().is_some()
    }

    /// Links the component now if it was loaded from the cache and not used yet (so the
    /// first call does not pay for it). Blocking: maps and links the compiled artifact.
    pub fn warm(&self) -> Result<(), String> {
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

    /// The component's imports (WASI interfaces, `toolhost:tool/host`, ...). Links the
    /// component if it is not yet (see [`Plugin::warm`]).
    pub fn imports(&self) -> Result<&[String], String> {
        self.inner.linked().map(|l| l.imports.as_slice())
    }
}

async fn describe(inner: &Arc<PluginInner>) -> Result<Vec<ToolSpec>, String> {
    let pre = &inner.linked()?.pre;
    let grant = Grant::default();
    let mut store = new_store(
        inner,
        &grant,
        false,
        None,
        "describe",
        DESCRIBE_TIMEOUT,
        None,
    )?;
    let res = async {
        let inst = pre.instantiate_async(&mut store).await?;
        inst.call_describe(&mut store).await
    }
    .await;
    store.data().flush_output();
    let infos = res.map_err(|e| {
        map_trap(
            "describe",
            &e,
            facts(
                &store,
                DESCRIBE_TIMEOUT,
                None,
                inner.engine.options().max_wasm_stack,
            ),
        )
        .to_string()
    })?;
    infos
        .into_iter()
        .map(|i| {
            let parameters: Value = serde_json::from_str(&i.parameters)
                .map_err(|e| format!("tool '{}': parameters is not valid JSON: {e}", i.name))?;
            Ok(ToolSpec {
                name: i.name,
                description: i.description,
                parameters,
                permissions: i.permissions.into_iter().map(permission_from_wit).collect(),
                tags: i.tags,
            })
        })
        .collect()
}

fn facts(
    store: &Store<HostState>,
    timeout: Duration,
    fuel: Option<u64>,
    max_stack: usize,
) -> TrapFacts {
    let d = store.data();
    TrapFacts {
        timeout,
        fuel,
        memory: (d.limiter.max_bytes, d.limiter.exceeded),
        max_stack,
        stopped: d.stopped,
    }
}

/// A fresh store with limits set (before anything runs in it).
fn new_store(
    inner: &PluginInner,
    grant: &Grant,
    declared_network: bool,
    ctx: Option<ToolContext>,
    tool: &str,
    timeout: Duration,
    fuel: Option<u64>,
) -> Result<Store<HostState>, String> {
    let state = HostState::new(StateSpec {
        plugin: inner.name.clone(),
        tool: Arc::from(tool),
        grant,
        declared_network,
        policy: &inner.policy,
        ctx: ctx.clone(),
    })?;
    let engine = &inner.engine;
    let mut store = Store::new(engine.engine(), state);
    store.limiter(|s| &mut s.limiter);
    if engine.options().fuel {
        store
            .set_fuel(fuel.unwrap_or(u64::MAX))
            .map_err(|e| format!("cannot set fuel: {e:#}"))?;
    }
    if engine.options().epoch {
        // Check every tick: stop on cancellation or once the wall-clock deadline passed,
        // otherwise yield to the executor (so a timeout or drop of the future also works).
        let deadline = std::time::Instant::now() + timeout;
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |mut cx| {
            let cancelled = cx
                .data()
                .ctx
                .as_ref()
                .is_some_and(ToolContext::is_cancelled);
            let reason = if cancelled {
                Some(StopReason::Cancelled)
            } else if std::time::Instant::now() >= deadline {
                Some(StopReason::Deadline)
            } else {
                None
            };
            match reason {
                Some(r) => {
                    cx.data_mut().stopped = Some(r);
                    Ok(UpdateDeadline::Interrupt)
                }
                None => Ok(UpdateDeadline::Yield(1)),
            }
        });
    }
    Ok(store)
}

/// One tool of a component. Implements [`BaseTool`]; goes into the `ToolRegistry` like
/// any other tool.
#[derive(Clone)]
pub struct WasmTool {
    plugin: Arc<PluginInner>,
    name: Arc<str>,
    spec: ToolSpec,
    grant: Grant,
    /// Set by [`Plugin::refuse_tools`]: every call is refused with this message.
    refusal: Option<String>,
}

impl std::fmt::Debug for WasmTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmTool")
            .field("name", &self.spec.name)
            .field("plugin", &self.plugin.path)
            .finish_non_exhaustive()
    }
}

impl WasmTool {
    /// The tool as described by the component.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The effective grant (declared ∩ policy).
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// The component file.
    pub fn path(&self) -> &Path {
        &self.plugin.path
    }

    /// The policy of the component.
    pub fn policy(&self) -> &Policy {
        &self.plugin.policy
    }

    /// Runs the tool once, in a fresh sandbox.
    pub async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(msg) = &self.refusal {
            return Err(ToolError::PermissionDenied(
                self.name.to_string(),
                msg.clone(),
            ));
        }
        let policy = &self.plugin.policy;
        let timeout = policy.timeout;
        let name = &*self.name;
        let declared_network = self.spec.permissions.contains(&Permission::Network);
        let pre = &self
            .plugin
            .linked()
            .map_err(|e| ToolError::failed(name, format!("the plugin cannot be loaded: {e}")))?
            .pre;
        let mut store = new_store(
            &self.plugin,
            &self.grant,
            declared_network,
            Some(ctx.clone()),
            name,
            timeout,
            policy.fuel,
        )
        .map_err(|e| ToolError::failed(name, e))?;
        let wit_ctx = bindings::CallContext {
            session_id: ctx.session_id().to_string(),
            trace_id: ctx.trace_id().to_string(),
            call_id: ctx.call_id().to_string(),
        };
        let args_text = args.to_string();
        let run = async {
            let inst = pre.instantiate_async(&mut store).await?;
            inst.call_call(&mut store, name, &args_text, &wit_ctx).await
        };
        // The epoch callback stops running wasm; this stops a guest blocked in host I/O
        // (a slow server, a pollable that never fires), where no wasm runs to be checked.
        let outcome = tokio::select! {
            r = run => Some(r),
            () = tokio::time::sleep(timeout) => None,
            () = ctx.cancellation_token().cancelled() => {
                return Err(ToolError::Cancelled(name.to_string()));
            }
        };
        let Some(res) = outcome else {
            store.data().flush_output();
            return Err(ToolError::Timeout(name.to_string(), timeout));
        };
        store.data().flush_output();
        let denials = store.data().denials();
        let with_denials = |msg: String| {
            if denials.is_empty() {
                msg
            } else {
                format!("{msg} (host: {})", denials.join("; "))
            }
        };
        match res {
            Err(e) => Err(map_trap(
                name,
                &e,
                facts(
                    &store,
                    timeout,
                    policy.fuel,
                    self.plugin.engine.options().max_wasm_stack,
                ),
            )),
            Ok(Err(guest)) => Err(match guest {
                bindings::ToolError::InvalidArguments(m) => ToolError::invalid_args(name, m),
                bindings::ToolError::ExecutionFailed(m) => ToolError::failed(name, with_denials(m)),
                bindings::ToolError::Denied(m) => ToolError::PermissionDenied(
                    name.to_string(),
                    format!("was refused: {}", with_denials(m)),
                ),
            }),
            Ok(Ok(out)) => Ok(to_output(name, out)),
        }
    }
}

fn to_output(name: &str, out: bindings::ToolOutput) -> ToolOutput {
    if out.canonical.len() > MAX_CANONICAL_BYTES {
        let (text, _) = truncate_render(&out.canonical, MAX_CANONICAL_BYTES);
        tracing::warn!(
            tool = name,
            bytes = out.canonical.len(),
            "result over {MAX_CANONICAL_BYTES} bytes truncated"
        );
        let render = match out.render {
            Some(r) => truncate_render(&r, MAX_CANONICAL_BYTES).0,
            None => text.clone(),
        };
        return ToolOutput::new(Value::String(text), render);
    }
    let canonical = match serde_json::from_str::<Value>(&out.canonical) {
        Ok(v) => v,
        // Not JSON: keep the text rather than fail the call.
        Err(_) => Value::String(out.canonical),
    };
    match out.render {
        Some(r) => {
            let r = if r.len() > MAX_CANONICAL_BYTES {
                truncate_render(&r, MAX_CANONICAL_BYTES).0
            } else {
                r
            };
            ToolOutput::new(canonical, r)
        }
        None => ToolOutput::json(canonical),
    }
}

#[async_trait]
impl BaseTool for WasmTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }

    fn required_permissions(&self) -> Vec<Permission> {
        self.spec.permissions.clone()
    }

    fn metadata(&self) -> ToolMetadata {
        ToolMetadata {
            tags: self.spec.tags.clone(),
            category: self.plugin.name.to_string(),
            source: ToolSource::Wasm {
                path: self.plugin.path.display().to_string(),
            },
            version: None,
            // The sandbox's own deadline fires first and says which limit stopped the call.
            timeout: Some(self.plugin.policy.timeout + Duration::from_secs(2)),
        }
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.run(&args, ctx).await
    }
}
