//! [`Plugin`] (one loaded component: its `InstancePre`, policy and tools) and
//! [`WasmTool`] (one described tool, a [`BaseTool`]). Every call gets a fresh `Store` and
//! instance, so calls share no state; fuel, the epoch deadline and the memory limiter are
//! set before instantiation.
//!
//! Over 700 lines because it holds `Plugin` (load, describe with its deadline and caps,
//! lazy linking), `WasmTool` and the per-call store set-up (`new_store`, seven arguments).
//! Splitting `WasmTool` and the store set-up out, with a call-spec struct instead of the
//! argument list, is pending, not a design choice.

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
use crate::grant::Grant;
use crate::limits::{StopReason, TrapFacts, map_trap};
use crate::policy::Policy;
use crate::sandbox::{HostState, StateSpec};

/// Largest canonical JSON a call may return, bytes. Bigger results are truncated (the
/// canonical value becomes the truncated text) rather than failing the call.
pub const MAX_CANONICAL_BYTES: usize = 1 << 20;

/// Wall-clock budget of `describe()` at load time: the epoch deadline stops a guest
/// that spins, a timer around the call stops one blocked in host I/O (a sleep, a
/// pollable that never fires), where no wasm runs for the epoch check to see.
pub const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Caps on what `describe()` may return. A component over any of them is refused whole
/// ([`PluginError::DescribeTooLarge`]), and the refusal is remembered by its digest.
/// The list is lifted out of the guest's memory before it can be counted, so its size is
/// bounded first by the policy's memory cap.
pub mod describe_limits {
    /// Tools one component may describe.
    pub const MAX_TOOLS: usize = 256;
    /// Bytes of a tool name (the registry allows 64 characters of `[a-zA-Z0-9_-]`).
    pub const MAX_NAME_BYTES: usize = 64;
    /// Bytes of a tool description.
    pub const MAX_DESCRIPTION_BYTES: usize = 4 * 1024;
    /// Bytes of a parameter schema (JSON text).
    pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
    /// Permissions one tool may declare.
    pub const MAX_PERMISSIONS: usize = 16;
    /// Tags one tool may carry.
    pub const MAX_TAGS: usize = 32;
    /// Bytes of one tag or one `custom` permission name.
    pub const MAX_TAG_BYTES: usize = 64;
}

/// What the describe cache holds for a component digest: its tools, or why it was refused
/// (a refusal that does not depend on the policy: the time budget, the output caps, bad
/// JSON), so a later start refuses it at once instead of paying the budget again.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Described {
    /// `describe()` succeeded.
    Tools(Vec<ToolSpec>),
    /// `describe()` was refused.
    Rejected(Rejection),
}

/// A remembered `describe()` refusal.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) enum Rejection {
    /// [`PluginError::DescribeTimeout`].
    Timeout {
        /// The budget, ms.
        ms: u64,
    },
    /// [`PluginError::DescribeTooLarge`].
    TooLarge {
        /// The message.
        message: String,
    },
    /// [`PluginError::Describe`] for output the host cannot use (bad JSON).
    Invalid {
        /// The message.
        message: String,
    },
}

impl Rejection {
    fn into_error(self, path: &str) -> PluginError {
        let path = path.to_string();
        match self {
            Rejection::Timeout { ms } => PluginError::DescribeTimeout {
                path,
                timeout: Duration::from_millis(ms),
            },
            Rejection::TooLarge { message } => PluginError::DescribeTooLarge { path, message },
            Rejection::Invalid { message } => PluginError::Describe { path, message },
        }
    }
}

/// Why `describe()` failed: a refusal worth remembering, or a failure that may depend on
/// the policy (a memory cap) or the moment.
enum DescribeFailure {
    Remembered(Rejection),
    Other(String),
}

/// At most `n` characters of untrusted text, escaped for a terminal (`{:?}`).
fn quote(text: &str, n: usize) -> String {
    let cut: String = text.chars().take(n).collect();
    if cut.len() < text.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

/// Checks the raw `describe()` output against [`describe_limits`].
fn check_described(infos: &[bindings::toolhost::tool::types::ToolInfo]) -> Result<(), String> {
    use describe_limits::*;
    if infos.len() > MAX_TOOLS {
        return Err(format!(
            "{} tools described, at most {MAX_TOOLS} allowed",
            infos.len()
        ));
    }
    for i in infos {
        let over = |what: &str, got: usize, max: usize| {
            format!(
                "tool {}: {what} is {got} bytes, at most {max} allowed",
                quote(&i.name, MAX_NAME_BYTES)
            )
        };
        if i.name.len() > MAX_NAME_BYTES {
            return Err(over("the name", i.name.len(), MAX_NAME_BYTES));
        }
        if i.description.len() > MAX_DESCRIPTION_BYTES {
            return Err(over(
                "the description",
                i.description.len(),
                MAX_DESCRIPTION_BYTES,
            ));
        }
        if i.parameters.len() > MAX_SCHEMA_BYTES {
            return Err(over(
                "the parameter schema",
                i.parameters.len(),
                MAX_SCHEMA_BYTES,
            ));
        }
        if i.permissions.len() > MAX_PERMISSIONS || i.tags.len() > MAX_TAGS {
            return Err(format!(
                "tool {}: {} permissions and {} tags, at most {MAX_PERMISSIONS} and {MAX_TAGS} allowed",
                quote(&i.name, MAX_NAME_BYTES),
                i.permissions.len(),
                i.tags.len()
            ));
        }
        let long_custom = i
            .permissions
            .iter()
            .any(|p| matches!(p, bindings::Permission::Custom(c) if c.len() > MAX_TAG_BYTES));
        if long_custom || i.tags.iter().any(|t| t.len() > MAX_TAG_BYTES) {
            return Err(format!(
                "tool {}: a tag or custom permission is over {MAX_TAG_BYTES} bytes",
                quote(&i.name, MAX_NAME_BYTES)
            ));
        }
    }
    Ok(())
}

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
        let name = path.display().to_string();
        let t0 = std::time::Instant::now();
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone());
        let max = engine.options().max_plugin_bytes;
        let opened = engine.open_plugin(path, max, |digest| {
            engine.cached_describe::<Described>(digest)
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
            Opened::Listed {
                digest,
                cached: Described::Tools(specs),
            } => (new_inner(engine, digest, OnceLock::new()), specs),
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
            } => {
                // The engine may be the concurrency-enabled sibling (see `compile_any`).
                let linked = link(&engine, &component, &name)?;
                let inner = new_inner(&engine, digest.clone(), OnceLock::from(Ok(linked)));
                // describe() is a pure function of the component (it runs with no
                // grants), so its result, or a refusal that does not depend on the
                // policy, is cached by the component's digest.
                match describe(&inner).await {
                    Ok(specs) => {
                        engine.store_describe(&digest, &Described::Tools(specs.clone()));
                        (inner, specs)
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
        };
        let tools = specs
            .into_iter()
            .map(|spec| {
                let grant = Grant::effective(&inner.policy, &spec.permissions);
                Arc::new(WasmTool {
                    plugin: inner.clone(),
                    guest_name: Arc::from(spec.name.as_str()),
                    registered: Arc::from(spec.name.as_str()),
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

    /// Gives every tool whose described name is in `contested` its qualified registry
    /// name `plugin__tool` (see [`crate::loader`]).
    pub(crate) fn qualify(&mut self, contested: &std::collections::HashSet<String>) {
        for t in &mut self.tools {
            if contested.contains(&t.spec.name) {
                *t = Arc::new(t.renamed(crate::loader::qualified_name(
                    &self.inner.name,
                    &t.spec.name,
                )));
            }
        }
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

async fn describe(inner: &Arc<PluginInner>) -> Result<Vec<ToolSpec>, DescribeFailure> {
    let pre = &inner.linked().map_err(DescribeFailure::Other)?.pre;
    let grant = Grant::default();
    let mut store = new_store(
        inner,
        &grant,
        false,
        None,
        "describe",
        DESCRIBE_TIMEOUT,
        None,
    )
    .map_err(DescribeFailure::Other)?;
    let run = async {
        let inst = pre.instantiate_async(&mut store).await?;
        inst.call_describe(&mut store).await
    };
    // The epoch callback stops a guest that spins; the timer stops one blocked in host
    // I/O (a WASI sleep or poll), where no wasm runs for the epoch check to see.
    let outcome = tokio::select! {
        r = run => Some(r),
        () = tokio::time::sleep(DESCRIBE_TIMEOUT) => None,
    };
    store.data().flush_output();
    let timeout = Rejection::Timeout {
        ms: DESCRIBE_TIMEOUT.as_millis() as u64,
    };
    let Some(res) = outcome else {
        return Err(DescribeFailure::Remembered(timeout));
    };
    let infos = res.map_err(|e| {
        let err = map_trap(
            "describe",
            &e,
            facts(
                &store,
                DESCRIBE_TIMEOUT,
                None,
                inner.engine.options().max_wasm_stack,
            ),
        );
        match err {
            ToolError::Timeout(..) => DescribeFailure::Remembered(timeout.clone()),
            other => DescribeFailure::Other(other.to_string()),
        }
    })?;
    check_described(&infos)
        .map_err(|message| DescribeFailure::Remembered(Rejection::TooLarge { message }))?;
    infos
        .into_iter()
        .map(|i| {
            let parameters: Value = serde_json::from_str(&i.parameters).map_err(|e| {
                DescribeFailure::Remembered(Rejection::Invalid {
                    message: format!(
                        "tool {}: parameters is not valid JSON: {e}",
                        quote(&i.name, describe_limits::MAX_NAME_BYTES)
                    ),
                })
            })?;
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
    /// The name the component knows the tool by (passed to its `call`).
    guest_name: Arc<str>,
    /// The name in the registry: the described name, or `plugin__tool` when another
    /// plugin describes a tool of the same name (see [`crate::loader`]).
    registered: Arc<str>,
    spec: ToolSpec,
    grant: Grant,
    /// Set by [`Plugin::refuse_tools`]: every call is refused with this message.
    refusal: Option<String>,
}

impl std::fmt::Debug for WasmTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmTool")
            .field("name", &self.registered)
            .field("plugin", &self.plugin.path)
            .finish_non_exhaustive()
    }
}

impl WasmTool {
    /// The same tool under another registry name (the component still gets its own name).
    pub(crate) fn renamed(&self, registered: String) -> WasmTool {
        WasmTool {
            plugin: self.plugin.clone(),
            guest_name: self.guest_name.clone(),
            registered: Arc::from(registered),
            spec: self.spec.clone(),
            grant: self.grant.clone(),
            refusal: self.refusal.clone(),
        }
    }

    /// The name the tool is registered under (the described name, or `plugin__tool`).
    pub fn registry_name(&self) -> &str {
        &self.registered
    }

    /// The name of the plugin (the component file's stem).
    pub fn plugin_name(&self) -> &str {
        &self.plugin.name
    }

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
                self.registered.to_string(),
                msg.clone(),
            ));
        }
        let policy = &self.plugin.policy;
        let timeout = policy.timeout;
        // Errors speak of the registry name (what the caller used); the component gets
        // the name it described.
        let name = &*self.registered;
        let guest_name = &*self.guest_name;
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
            inst.call_call(&mut store, guest_name, &args_text, &wit_ctx)
                .await
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
        &self.registered
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
