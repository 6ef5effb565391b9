//! Plain WIT components: a component that does not implement toolhost's `tool` world but
//! exports ordinary WIT functions (`export fetch: func(url: string) -> result<string,
//! string>`) is a toolbox, each exported function a tool (see `docs/writing-plugins.md`,
//! "Plain WIT components"). This module finds the functions ([`derive`]), names them
//! (the rule below), derives each one's parameter schema from its WIT types
//! (`schema.rs`), its description from the component's own doc comments (`docs.rs`), and
//! calls one ([`call`]): JSON arguments checked and converted to component values
//! (`value.rs`) before any guest code runs, the result converted back to JSON.
//!
//! **Names.** A function exported at world level keeps its WIT name (`reverse`,
//! `check-name`). A function of an exported interface is `INTERFACE_FUNCTION`, the
//! interface's short name (`kinds` for `demo:plain/kinds@0.1.0`) then `_` then the
//! function name: WIT names are kebab-case, so the `_` cannot be part of either and the
//! name cannot contain the `__` of a qualified name. When two exports of one component
//! would get the same name, each interface function among them is named
//! `NAMESPACE-PACKAGE-INTERFACE_FUNCTION` instead; a function still without a unique
//! name, or with one over 64 characters, is refused. Across plugins the loader's
//! collision rule applies as for any tool (`crate::folder`).
//!
//! **Permissions.** Such a component declares none. What it *could* use follows from
//! its imports: `wasi:filesystem` → read and write (never delete),
//! `wasi:http/outgoing-handler` or `wasi:sockets` → network (cached with the tools). At
//! load each tool is taken to declare the part of that which its request file `NAME.toml`
//! asks for ([`declared`]; the request as written, not only its approved part, so an
//! unapproved request shows as needing approval): a component without a request file
//! declares nothing, so it
//! needs no permission of the host policy and gets no capability; one whose request file
//! asks for a folder or a host declares read, write or network, which the operator's
//! approval and the host policy then decide like any plugin's.
//!
//! The derived tools are a pure function of the component's bytes, cached by its digest
//! like `describe()` output; no guest code runs to list them.

pub(crate) mod docs;
pub(crate) mod schema;
pub(crate) mod value;

use std::collections::BTreeMap;

use serde_json::Value;
use toolhost_core::tools::{Permission, is_valid_tool_name};
use wasmtime::component::{Component, InstancePre, Type, Val, types::ComponentItem};
use wasmtime::{Engine, Store};

use crate::bindings::toolhost::tool::types as v1;
use crate::describe::{ToolSpec, describe_limits};
use crate::sandbox::HostState;
use crate::versions::CallResult;

use self::value::{Budget, to_json, to_val};

/// The bounds of plain WIT tools, both ways.
pub mod limits {
    /// Deepest nesting of a WIT type (and of a value) a tool accepts; a function with a
    /// deeper parameter or result type is refused.
    pub const MAX_TYPE_DEPTH: usize = 32;
    /// Most values (scalars and containers) in one call's arguments.
    pub const MAX_ARG_VALUES: usize = 100_000;
    /// Most bytes of text (strings, map keys) in one call's arguments.
    pub const MAX_ARG_BYTES: usize = 4 << 20;
    /// Largest result, bytes of canonical JSON (the cap of every wasm tool's result);
    /// over it the call fails with a tool error rather than being truncated mid-value.
    pub const MAX_RESULT_BYTES: usize = crate::tool::MAX_CANONICAL_BYTES;
}

/// One tool of a plain component: its spec and the export it calls.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PlainTool {
    /// The tool.
    pub(crate) spec: ToolSpec,
    /// The function: `FUNC` at world level, `INTERFACE#FUNC` inside an exported
    /// interface (WIT names never hold `#`).
    pub(crate) export: String,
}

/// What the loader derived from a plain component (cached by its digest).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PlainDescribed {
    /// The tools.
    pub(crate) tools: Vec<PlainTool>,
    /// Each exported function that is not a tool, and why (shown by `inspect`).
    pub(crate) refused: Vec<String>,
}

/// A plain component linked against the host.
#[derive(Clone)]
pub(crate) struct PlainPre {
    /// The pre-linked component.
    pub(crate) pre: InstancePre<HostState>,
}

/// Whether `component` is meant as a plain WIT component: it exports at least one
/// function, and neither a world-level `describe` or `call` nor a `toolhost:tool`
/// interface (a component with those is held to the `tool` world, and told why it does
/// not fit).
pub(crate) fn is_plain(engine: &Engine, component: &Component) -> bool {
    let ty = component.component_type();
    let mut any_func = false;
    for (name, item) in ty.exports(engine) {
        if name.starts_with("toolhost:tool/") {
            return false;
        }
        match item.ty {
            ComponentItem::ComponentFunc(_) => {
                if name == "describe" || name == "call" {
                    return false;
                }
                any_func = true;
            }
            ComponentItem::ComponentInstance(i) => {
                any_func |= i
                    .exports(engine)
                    .any(|(_, e)| matches!(e.ty, ComponentItem::ComponentFunc(_)));
            }
            _ => {}
        }
    }
    any_func
}

/// What the tools of a component importing `imports` could use (see the module docs).
pub(crate) fn permissions_from_imports<'a>(
    imports: impl IntoIterator<Item = &'a str>,
) -> Vec<Permission> {
    let (mut fs, mut net) = (false, false);
    for name in imports {
        fs |= name.starts_with("wasi:filesystem/");
        net |= name.starts_with("wasi:http/outgoing-handler") || name.starts_with("wasi:sockets/");
    }
    let mut p = Vec::new();
    if fs {
        p.extend([Permission::Read, Permission::Write]);
    }
    if net {
        p.push(Permission::Network);
    }
    p
}

/// What a tool that could use `possible` declares under `policy` (its request file, or
/// the approved grant): the part of `possible` the policy offers something for.
pub(crate) fn declared(policy: &crate::policy::Policy, possible: &[Permission]) -> Vec<Permission> {
    let wants = |p: &Permission| match p {
        Permission::Read => !policy.caps.read.is_empty(),
        Permission::Write => !policy.caps.write.is_empty(),
        Permission::Network => !policy.caps.network.is_empty() || policy.caps.sockets,
        _ => false,
    };
    possible.iter().filter(|p| wants(p)).cloned().collect()
}

/// One exported function found in the component type.
struct Candidate {
    /// The instance export it is in (`None` at world level).
    iface: Option<String>,
    /// The function's name.
    func: String,
    /// Its type.
    ty: wasmtime::component::types::ComponentFunc,
}

impl Candidate {
    fn export(&self) -> String {
        match &self.iface {
            Some(i) => format!("{i}#{}", self.func),
            None => self.func.clone(),
        }
    }

    /// How messages name it: `` `f` `` or `` `f` of `a:b/c` ``.
    fn display(&self) -> String {
        match &self.iface {
            Some(i) => format!("`{}` of `{i}`", self.func),
            None => format!("`{}`", self.func),
        }
    }

    /// The tool name: short, or qualified with the package.
    fn name(&self, qualified: bool) -> String {
        match &self.iface {
            None => self.func.clone(),
            Some(i) => {
                let (pkg, short) = split_iface(i);
                match pkg {
                    Some(pkg) if qualified => {
                        format!("{}-{short}_{}", pkg.replace(':', "-"), self.func)
                    }
                    _ => format!("{short}_{}", self.func),
                }
            }
        }
    }
}

/// `ns:pkg/iface@1.0.0` → (`Some("ns:pkg")`, `iface`); a plain name → (`None`, name).
fn split_iface(name: &str) -> (Option<&str>, &str) {
    let no_version = name.split_once('@').map_or(name, |(n, _)| n);
    match no_version.rsplit_once('/') {
        Some((pkg, short)) => (Some(pkg), short),
        None => (None, no_version),
    }
}

/// Derives the tools of a plain component from its type and, when `bytes` (the
/// component file) are given, its doc comments. `Err` when it exports no function at
/// all.
pub(crate) fn derive(
    engine: &Engine,
    component: &Component,
    bytes: Option<&[u8]>,
) -> Result<PlainDescribed, String> {
    let docs = bytes.map(docs::read).unwrap_or_default();
    let ty = component.component_type();
    let permissions = permissions_from_imports(ty.imports(engine).map(|(n, _)| n));
    let mut candidates = Vec::new();
    for (name, item) in ty.exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(f) => candidates.push(Candidate {
                iface: None,
                func: name.to_string(),
                ty: f,
            }),
            ComponentItem::ComponentInstance(i) => {
                for (fname, e) in i.exports(engine) {
                    if let ComponentItem::ComponentFunc(f) = e.ty {
                        candidates.push(Candidate {
                            iface: Some(name.to_string()),
                            func: fname.to_string(),
                            ty: f,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    if candidates.is_empty() {
        return Err("it exports no function".into());
    }
    let mut refused = Vec::new();
    let mut usable = Vec::new();
    for c in candidates {
        match check(&c) {
            Ok(()) => usable.push(c),
            Err(why) => refused.push(format!("{}: {why}", c.display())),
        }
    }
    // Names: short unless two exports share one, then qualified; still shared: refused.
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for c in &usable {
        *count.entry(c.name(false)).or_default() += 1;
    }
    let named: Vec<(String, Candidate)> = usable
        .into_iter()
        .map(|c| {
            let short = c.name(false);
            let name = if count.get(&short).copied().unwrap_or(0) > 1 {
                c.name(true)
            } else {
                short
            };
            (name, c)
        })
        .collect();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (n, _) in &named {
        *count.entry(n.as_str()).or_default() += 1;
    }
    let mut tools = Vec::new();
    for (name, c) in &named {
        if count.get(name.as_str()).copied().unwrap_or(0) > 1 {
            refused.push(format!(
                "{}: another export of this component gets the same tool name `{name}`",
                c.display()
            ));
            continue;
        }
        if !is_valid_tool_name(name) {
            refused.push(format!(
                "{}: its tool name `{name}` is over 64 characters",
                c.display()
            ));
            continue;
        }
        if tools.len() >= describe_limits::MAX_TOOLS {
            refused.push(format!(
                "{}: the component has more than {} functions",
                c.display(),
                describe_limits::MAX_TOOLS
            ));
            continue;
        }
        match spec(name, c, &docs, &permissions) {
            Ok(spec) => tools.push(PlainTool {
                spec,
                export: c.export(),
            }),
            Err(why) => refused.push(format!("{}: {why}", c.display())),
        }
    }
    Ok(PlainDescribed { tools, refused })
}

/// Whether a function can be a tool: not a resource constructor, method or static
/// function, not async, every parameter and the result of a type with a JSON form.
fn check(c: &Candidate) -> Result<(), String> {
    if c.func.starts_with('[') {
        return Err(
            "a resource's constructor, method or static function is not a tool (resources are not supported)"
                .into(),
        );
    }
    if c.ty.async_() {
        return Err("async functions are not supported".into());
    }
    for (name, ty) in c.ty.params() {
        schema::schema(&ty, 1).map_err(|schema::Unsupported(why)| {
            format!("parameter `{name}` is {why}; functions that take or return resources, futures or streams are not tools")
        })?;
    }
    for ty in c.ty.results() {
        schema::schema(&ty, 1).map_err(|schema::Unsupported(why)| {
            format!("its result is {why}; functions that take or return resources, futures or streams are not tools")
        })?;
    }
    Ok(())
}

/// The spec of a usable function.
fn spec(
    name: &str,
    c: &Candidate,
    docs: &docs::Docs,
    permissions: &[Permission],
) -> Result<ToolSpec, String> {
    let parameters = schema::parameters(c.ty.params()).map_err(|schema::Unsupported(w)| w)?;
    let size = serde_json::to_vec(&parameters).map_or(usize::MAX, |v| v.len());
    if size > describe_limits::MAX_SCHEMA_BYTES {
        return Err(format!(
            "its parameter schema is {size} bytes, at most {} allowed",
            describe_limits::MAX_SCHEMA_BYTES
        ));
    }
    let documented = match &c.iface {
        None => docs.world_func(&c.func),
        Some(i) => docs.iface_func(split_iface(i).1, &c.func),
    };
    let signature = format!(
        "{}({}){}",
        c.func,
        c.ty.params()
            .map(|(n, t)| format!("{n}: {}", schema::wit_name(&t)))
            .collect::<Vec<_>>()
            .join(", "),
        c.ty.results()
            .next()
            .map(|t| format!(" -> {}", schema::wit_name(&t)))
            .unwrap_or_default()
    );
    let fallback = match &c.iface {
        None => format!("Calls the WIT function `{signature}`."),
        Some(i) => format!("Calls the WIT function `{signature}` of `{i}`."),
    };
    let description = match documented.map(str::trim) {
        Some(d) if d.chars().count() >= 10 => d.to_string(),
        Some(d) if !d.is_empty() => format!("{d} ({fallback})"),
        _ => fallback,
    };
    Ok(ToolSpec {
        name: name.to_string(),
        description: cut(description, describe_limits::MAX_DESCRIPTION_BYTES),
        parameters,
        permissions: permissions.to_vec(),
        tags: vec!["wit".into()],
    })
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(mut s: String, max: usize) -> String {
    let end = toolhost_core::tools::render::head(&s, max).len();
    s.truncate(end);
    s
}

/// Converts the JSON arguments of a call of `export` to component values: an argument
/// error (`Err`) names the parameter and the place inside it.
fn arguments(
    engine: &Engine,
    component: &Component,
    export: &str,
    args: &Value,
) -> Result<Vec<Val>, String> {
    let ty = component.component_type();
    let func = match export.split_once('#') {
        Some((iface, func)) => match ty.get_export(engine, iface).map(|e| e.ty) {
            Some(ComponentItem::ComponentInstance(i)) => match i.get_export(engine, func) {
                Some(e) => match e.ty {
                    ComponentItem::ComponentFunc(f) => Some(f),
                    _ => None,
                },
                None => None,
            },
            _ => None,
        },
        None => match ty.get_export(engine, export).map(|e| e.ty) {
            Some(ComponentItem::ComponentFunc(f)) => Some(f),
            _ => None,
        },
    };
    let Some(func) = func else {
        return Err(format!("the component has no function {export:?}"));
    };
    let empty = serde_json::Map::new();
    let obj = match args {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return Err(format!(
                "the arguments must be a JSON object, got {}",
                toolhost_core::tools::json_kind(other)
            ));
        }
    };
    let params: Vec<(String, Type)> = func.params().map(|(n, t)| (n.to_string(), t)).collect();
    if let Some(extra) = obj.keys().find(|k| params.iter().all(|(n, _)| n != *k)) {
        let known: Vec<String> = params.iter().map(|(n, _)| format!("`{n}`")).collect();
        return Err(format!(
            "unknown parameter {:?}; the parameters are {}",
            extra.chars().take(40).collect::<String>(),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ));
    }
    let mut budget = Budget::arguments();
    params
        .iter()
        .map(|(name, ty)| match obj.get(name) {
            Some(v) => to_val(v, ty, name, &mut budget).map_err(|e| e.0),
            None if matches!(ty, Type::Option(_)) => Ok(Val::Option(None)),
            None => Err(format!("the parameter `{name}` is missing")),
        })
        .collect()
}

/// Calls `export` of a plain component, instantiated as `instance` in `store` and never
/// called, with the JSON `arguments`: checks and converts them (an error is
/// `InvalidArguments`, before any guest code runs), calls the function, and turns its result into the output
/// (a `result`'s `err` becomes `ExecutionFailed` with the error value as its message).
pub(crate) async fn call(
    pre: &PlainPre,
    store: &mut Store<HostState>,
    instance: wasmtime::component::Instance,
    export: &str,
    arguments_json: &str,
) -> wasmtime::Result<CallResult> {
    let args: Value = match serde_json::from_str(arguments_json) {
        Ok(v) => v,
        Err(e) => {
            return Ok(Err(v1::ToolError::InvalidArguments(format!(
                "not JSON: {e}"
            ))));
        }
    };
    let engine = store.engine().clone();
    let params = match arguments(&engine, pre.pre.component(), export, &args) {
        Ok(p) => p,
        Err(m) => return Ok(Err(v1::ToolError::InvalidArguments(m))),
    };
    drop(args);
    let index = match export.split_once('#') {
        Some((iface, func)) => instance
            .get_export_index(&mut *store, None, iface)
            .and_then(|i| instance.get_export_index(&mut *store, Some(&i), func)),
        None => instance.get_export_index(&mut *store, None, export),
    };
    let Some(func) = index.and_then(|i| instance.get_func(&mut *store, i)) else {
        return Err(wasmtime::Error::msg(format!(
            "the component has no function {export:?}"
        )));
    };
    let n = func.ty(&*store).results().len();
    let mut results = vec![Val::Bool(false); n];
    func.call_async(&mut *store, &params, &mut results).await?;
    drop(params);
    let mut budget = Budget {
        values: usize::MAX,
        bytes: limits::MAX_RESULT_BYTES,
    };
    let out = match results.first() {
        None => Ok(Value::Null),
        Some(Val::Result(Ok(None))) => Ok(Value::Null),
        Some(Val::Result(Ok(Some(v)))) => to_json(v, &mut budget),
        Some(Val::Result(Err(e))) => {
            let message = match e.as_deref() {
                None => Ok("the function returned an error (with no details)".to_string()),
                Some(Val::String(s)) => Ok(cut(s.clone(), limits::MAX_RESULT_BYTES)),
                Some(v) => to_json(v, &mut budget).map(|j| j.to_string()),
            };
            return Ok(Err(v1::ToolError::ExecutionFailed(match message {
                Ok(m) => m,
                Err(e) => e.0,
            })));
        }
        Some(v) => to_json(v, &mut budget),
    };
    Ok(match out {
        Ok(v) => Ok((
            v1::ToolOutput {
                canonical: v.to_string(),
                render: None,
            },
            Vec::new(),
        )),
        Err(e) => Err(v1::ToolError::ExecutionFailed(e.0)),
    })
}
