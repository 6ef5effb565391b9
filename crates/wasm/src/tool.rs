//! [`WasmTool`]: one tool a component described, an ordinary [`BaseTool`]. Every call
//! ([`WasmTool::run`]) gets a fresh `Store` and instance (see [`crate::store`], and
//! [`crate::spare`] for one built ahead), so calls share no state; the result is turned into a [`ToolOutput`], capped at
//! [`MAX_CANONICAL_BYTES`].

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;
use toolhost_core::tools::{
    BaseTool, Permission, ToolContext, ToolError, ToolMetadata, ToolOutput, ToolSource,
    truncate_render,
};

use crate::bindings;
use crate::component::PluginInner;
use crate::describe::ToolSpec;
use crate::grant::Grant;
use crate::limits::map_trap;
use crate::policy::Policy;
use crate::spare::{SpareSlot, Unprepared, prepare};
use crate::store::{CallSpec, facts};
use toolhost_core::tools::content::{ContentBlock, render_blocks};
use toolhost_core::tools::view::AppView;

/// Largest canonical JSON a call may return, bytes. Bigger results are truncated (the
/// canonical value becomes the truncated text) rather than failing the call.
pub const MAX_CANONICAL_BYTES: usize = 1 << 20;

/// One tool of a component. Implements [`BaseTool`]; goes into the `ToolRegistry` like
/// any other tool.
#[derive(Clone)]
pub struct WasmTool {
    /// The component it belongs to.
    pub(crate) plugin: Arc<PluginInner>,
    /// The name the component knows the tool by (passed to its `call`).
    pub(crate) guest_name: Arc<str>,
    /// The name in the registry: the described name, or `plugin__tool` when another
    /// plugin describes a tool of the same name (see [`crate::folder`]).
    pub(crate) registered: Arc<str>,
    /// The tool as described.
    pub(crate) spec: ToolSpec,
    /// The effective grant (declared ∩ policy).
    pub(crate) grant: Grant,
    /// Set by [`Plugin::refuse_tools`](crate::Plugin::refuse_tools): every call is
    /// refused with this message.
    pub(crate) refusal: Option<String>,
    /// The MCP App view its plugin ships for it (`NAME.ui/TOOL.html`, [`crate::views`]).
    pub(crate) view: Option<Arc<AppView>>,
    /// The next call's sandbox, when spare sandboxes are on ([`crate::spare`]).
    pub(crate) spare: Arc<SpareSlot>,
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
            view: self.view.clone(),
            spare: Arc::default(),
        }
    }

    /// The MCP App view its plugin ships for it, if any (`NAME.ui/TOOL.html`).
    pub fn view(&self) -> Option<&AppView> {
        self.view.as_deref()
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

    /// Runs the tool once, in a fresh sandbox. Every value of the plugin's
    /// `wasi:config/store` grant is replaced with `[redacted: KEY]` in the result and the
    /// error before anyone sees them (docs/secrets.md).
    pub async fn run(&self, args: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let r = &self.grant.redactor;
        match self.run_unredacted(args, ctx).await {
            Ok(out) => Ok(r.output(out)),
            Err(e) => Err(r.error(e)),
        }
    }

    async fn run_unredacted(
        &self,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if let Some(msg) = &self.refusal {
            return Err(ToolError::PermissionDenied(
                self.registered.to_string(),
                msg.clone(),
            ));
        }
        let policy = &self.plugin.policy;
        // Errors speak of the registry name (what the caller used); the component gets
        // the name it described.
        let name = &*self.registered;
        let guest_name = &*self.guest_name;
        let declared_network = self.spec.permissions.contains(&Permission::Network);
        let (engine, pre) = self
            .plugin
            .runnable()
            .map_err(|e| ToolError::failed(name, format!("the plugin cannot be loaded: {e}")))?;
        // The sandbox: the spare when there is one ([`crate::spare`]), else one built
        // now; either way instantiated with the tool's grant and never run.
        // The call's deadline is the registry's (the plugin's timeout cut to the
        // caller's); called outside a registry, the plugin's own timeout from now.
        let started = Instant::now();
        let own = started + policy.timeout();
        let deadline = ctx.deadline().map_or(own, |d| d.into_std().min(own));
        let timeout = deadline.saturating_duration_since(started);
        let max_stack = self.plugin.engine.options().max_wasm_stack;
        let (mut store, instance) = match self.spare.take(pre) {
            // Built ahead with no call in it: the call's context, deadline and fuel go in.
            Some(spare) => spare
                .arm(engine, Some(ctx.clone()), policy.fuel(), deadline)
                .map_err(|e| ToolError::failed(name, e.to_string()))?,
            None => {
                let call = CallSpec {
                    grant: &self.grant,
                    declared_network,
                    ctx: Some(ctx.clone()),
                    tool: name,
                    timeout,
                    fuel: policy.fuel(),
                };
                let prepared = tokio::select! {
                    r = prepare(&self.plugin, engine, pre, call, deadline) => r,
                    () = ctx.cancellation_token().cancelled() => {
                        return Err(ToolError::Cancelled(name.to_string()));
                    }
                };
                match prepared {
                    // Built for this call: context, deadline and fuel are in already.
                    Ok(p) => p.into_parts(),
                    Err(Unprepared::Store(e)) => {
                        return Err(ToolError::failed(name, e.to_string()));
                    }
                    Err(Unprepared::Trap(e, store)) => {
                        store.data().flush_output();
                        let facts = facts(&store, timeout, policy.fuel(), max_stack);
                        return Err(map_trap(name, &e, facts));
                    }
                    Err(Unprepared::Timeout(store)) => {
                        store.data().flush_output();
                        return Err(ToolError::Timeout(name.to_string(), timeout));
                    }
                }
            }
        };
        let wit_ctx = bindings::CallContext {
            session_id: ctx.session_id().to_string(),
            trace_id: ctx.trace_id().to_string(),
            call_id: ctx.call_id().to_string(),
        };
        let args_text = args.to_string();
        let run = async {
            pre.call(&mut store, instance, guest_name, &args_text, &wit_ctx)
                .await
        };
        // The epoch callback stops running wasm; this stops a guest blocked in host I/O
        // (a slow server, a pollable that never fires), where no wasm runs to be checked.
        let outcome = tokio::select! {
            r = run => Some(r),
            () = tokio::time::sleep_until(deadline.into()) => None,
            () = ctx.cancellation_token().cancelled() => {
                return Err(ToolError::Cancelled(name.to_string()));
            }
        };
        let Some(res) = outcome else {
            store.data().flush_output();
            return Err(ToolError::Timeout(name.to_string(), timeout));
        };
        store.data().flush_output();
        if res.is_ok() {
            // The guest ran: the tool is in use, so the next call's sandbox is made now.
            self.spare.refill(
                &self.plugin,
                &self.registered,
                &self.grant,
                declared_network,
                started,
            );
        }
        // The fuel the call used, on the registry's `execute` span (traces).
        if let Ok(left) = store.get_fuel() {
            let used = policy.fuel().unwrap_or(u64::MAX).saturating_sub(left);
            tracing::Span::current().record("toolhost.wasm.fuel_used", used);
        }
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
                facts(&store, timeout, policy.fuel(), max_stack),
            )),
            Ok(Err(guest)) => Err(match guest {
                bindings::ToolError::InvalidArguments(m) => ToolError::invalid_args(name, m),
                bindings::ToolError::ExecutionFailed(m) => ToolError::failed(name, with_denials(m)),
                bindings::ToolError::Denied(m) => ToolError::PermissionDenied(
                    name.to_string(),
                    format!("was refused: {}", with_denials(m)),
                ),
            }),
            Ok(Ok((out, blocks))) => Ok(to_output(name, out, blocks)),
        }
    }
}

/// The guest's output as a [`ToolOutput`]: `canonical` parsed as JSON when it is (kept
/// as text otherwise), both parts truncated at [`MAX_CANONICAL_BYTES`].
fn to_output(name: &str, out: bindings::ToolOutput, blocks: Vec<ContentBlock>) -> ToolOutput {
    // A 0.2.0 guest's content blocks: kept as they are (the registry checks and bounds
    // them); without a render text of its own, the model reads the blocks' summary.
    let render = match out.render {
        None if !blocks.is_empty() => Some(render_blocks(&blocks)),
        r => r,
    };
    let out = bindings::ToolOutput {
        canonical: out.canonical,
        render,
    };
    to_output_v1(name, out).with_content(blocks)
}

/// The 0.1.0 part of [`to_output`].
fn to_output_v1(name: &str, out: bindings::ToolOutput) -> ToolOutput {
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
            timeout: Some(self.plugin.policy.timeout()),
            risk: None,
            // The sandbox stops the call at the registry's deadline (epoch checks while
            // wasm runs, one timer while the guest waits on host I/O), so it can say
            // which limit stopped it and flush the guest's output.
            keeps_deadline: true,
            // Its view, tied to it by `_meta.ui.resourceUri` and served by `serve`.
            meta: self.view.as_ref().map(|v| v.tool_meta()),
            view: self.view.clone(),
            ..Default::default()
        }
    }

    async fn execute(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.run(&args, ctx).await
    }
}
