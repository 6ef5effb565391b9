//! The code-mode runner: runs a model's JavaScript in Boa, inside the fresh sandbox the
//! host made for this run, and hands every `tools.NAME(args)` call to the host
//! (`toolhost:code/host`), where it passes the registry's pipeline like a direct call.
//!
//! - The script is the body of an async function: `return` gives the result, `await`
//!   waits for a tool. Its return value comes back as JSON text.
//! - `tools` is a frozen object without a prototype holding one function per tool the
//!   run may call: nothing the script does to `Object.prototype` or to `tools` reaches
//!   the calls, and a name that is not a tool is `undefined` (a `TypeError` when called).
//! - A tool call starts at once on the host and returns a promise; `Promise.all` runs
//!   calls in parallel (the host's concurrency limit applies). The event loop here runs
//!   the engine's jobs, then waits on the host for any started call, settles its promise,
//!   and goes on until the script's promise settles.
//! - `console.log`, `console.info`, `console.warn` and `console.error` go to the host,
//!   which keeps a bounded head.
//!
//! The runner is a command (`main` unused): its export is `run`.

use std::cell::RefCell;
use std::collections::HashMap;

use boa_engine::builtins::promise::{PromiseState, ResolvingFunctions};
use boa_engine::object::builtins::JsPromise;
use boa_engine::object::{FunctionObjectBuilder, IntegrityLevel, ObjectInitializer};
use boa_engine::property::Attribute;
use boa_engine::{
    Context, JsError, JsNativeError, JsObject, JsResult, JsString, JsValue, NativeFunction, Source,
    js_string,
};

wit_bindgen::generate!({
    path: "../wit",
    world: "runner",
});

use toolhost::code::host;

// The promises of the calls started and not yet settled, by host handle.
thread_local! {
    static PENDING: RefCell<HashMap<u32, ResolvingFunctions>> = RefCell::new(HashMap::new());
}

struct Runner;

impl Guest for Runner {
    fn run(script: String, tools: Vec<String>) -> Result<String, String> {
        let mut ctx = Context::default();
        install(&mut ctx, &tools).map_err(|e| format!("cannot prepare the run: {e}"))?;
        // On one line with the opening, so line numbers in errors are the script's own.
        let wrapped = format!("(async () => {{{script}\n}})()");
        let value = ctx
            .eval(Source::from_bytes(wrapped.as_bytes()))
            .map_err(|e| describe(e, &mut ctx))?;
        let promise = value
            .as_object()
            .and_then(|o| JsPromise::from_object(o.clone()).ok())
            .ok_or_else(|| "the script did not run as an async function".to_string())?;
        loop {
            ctx.run_jobs().map_err(|e| describe(e, &mut ctx))?;
            match promise.state() {
                PromiseState::Fulfilled(v) => return to_json(&v, &mut ctx),
                PromiseState::Rejected(e) => {
                    return Err(describe(JsError::from_opaque(e), &mut ctx));
                }
                PromiseState::Pending => {}
            }
            let Some((handle, result)) = host::wait_any() else {
                return Err(
                    "the script waits for something that never happens: its promise is \
                            pending and no tool call is running"
                        .into(),
                );
            };
            let Some(settle) = PENDING.with(|p| p.borrow_mut().remove(&handle)) else {
                continue;
            };
            match result {
                Ok(text) => {
                    let json: serde_json::Value =
                        serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
                    let v = JsValue::from_json(&json, &mut ctx).unwrap_or(JsValue::undefined());
                    let _ = settle.resolve.call(&JsValue::undefined(), &[v], &mut ctx);
                }
                Err(message) => {
                    let err = JsNativeError::error()
                        .with_message(message)
                        .into_opaque(&mut ctx);
                    let _ = settle
                        .reject
                        .call(&JsValue::undefined(), &[err.into()], &mut ctx);
                }
            }
        }
    }
}

export!(Runner);

/// Defines `tools` and `console` in the global object.
fn install(ctx: &mut Context, tools: &[String]) -> JsResult<()> {
    let object = JsObject::with_null_proto();
    for name in tools {
        let call = NativeFunction::from_copy_closure_with_captures(
            |_, args, name: &JsString, ctx| start(name, args.first(), ctx),
            JsString::from(name.as_str()),
        );
        let f = FunctionObjectBuilder::new(ctx.realm(), call)
            .name(JsString::from(name.as_str()))
            .length(1)
            .build();
        object.create_data_property_or_throw(JsString::from(name.as_str()), f, ctx)?;
    }
    object.set_integrity_level(IntegrityLevel::Frozen, ctx)?;
    ctx.register_global_property(js_string!("tools"), object, Attribute::empty())?;

    let console = ObjectInitializer::new(ctx)
        .function(
            NativeFunction::from_fn_ptr(|_, a, c| log(0, a, c)),
            js_string!("log"),
            0,
        )
        .function(
            NativeFunction::from_fn_ptr(|_, a, c| log(0, a, c)),
            js_string!("info"),
            0,
        )
        .function(
            NativeFunction::from_fn_ptr(|_, a, c| log(1, a, c)),
            js_string!("warn"),
            0,
        )
        .function(
            NativeFunction::from_fn_ptr(|_, a, c| log(2, a, c)),
            js_string!("error"),
            0,
        )
        .build();
    console.set_integrity_level(IntegrityLevel::Frozen, ctx)?;
    ctx.register_global_property(js_string!("console"), console, Attribute::empty())?;
    Ok(())
}

/// `tools.NAME(args)`: starts the call on the host, returns its promise.
fn start(name: &JsString, args: Option<&JsValue>, ctx: &mut Context) -> JsResult<JsValue> {
    let args = match args {
        None => serde_json::Value::Object(Default::default()),
        Some(v) if v.is_undefined() => serde_json::Value::Object(Default::default()),
        Some(v) => v.to_json(ctx)?.unwrap_or(serde_json::Value::Null),
    };
    let name = name.to_std_string_escaped();
    let handle = host::start_call(&name, &args.to_string())
        .map_err(|why| JsNativeError::error().with_message(why))?;
    let (promise, resolvers) = JsPromise::new_pending(ctx);
    PENDING.with(|p| p.borrow_mut().insert(handle, resolvers));
    Ok(promise.into())
}

/// `console.*`: the arguments as text, separated by spaces.
fn log(level: u8, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let mut line = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            line.push(' ');
        }
        match a {
            v if v.is_string() => line.push_str(&v.to_string(ctx)?.to_std_string_escaped()),
            v => match v.to_json(ctx) {
                Ok(Some(j)) if v.is_object() => line.push_str(&j.to_string()),
                _ => line.push_str(&v.to_string(ctx)?.to_std_string_escaped()),
            },
        }
    }
    host::log(level, &line);
    Ok(JsValue::undefined())
}

/// The script's value as JSON text (`null` for `undefined`).
fn to_json(v: &JsValue, ctx: &mut Context) -> Result<String, String> {
    match v.to_json(ctx) {
        Ok(Some(j)) => Ok(j.to_string()),
        Ok(None) => Ok("null".into()),
        Err(e) => Err(format!(
            "the script's return value is not JSON: {}",
            describe(e, ctx)
        )),
    }
}

/// An error as the model reads it: `Name: message`, with the line when the engine knows
/// it.
fn describe(e: JsError, ctx: &mut Context) -> String {
    match e.try_native(ctx) {
        Ok(native) => native.to_string(),
        Err(_) => {
            // An engine error (a runtime limit such as the recursion limit) has no
            // JavaScript value: its own text says what happened.
            let shown = e.to_string();
            let Ok(v) = e.into_opaque(ctx) else {
                return shown;
            };
            match v.as_object() {
                Some(o) => {
                    let name = o.get(js_string!("name"), ctx).ok();
                    let message = o.get(js_string!("message"), ctx).ok();
                    match (name, message) {
                        (Some(n), Some(m)) if !m.is_undefined() => format!(
                            "{}: {}",
                            n.to_string(ctx)
                                .map(|s| s.to_std_string_escaped())
                                .unwrap_or_default(),
                            m.to_string(ctx)
                                .map(|s| s.to_std_string_escaped())
                                .unwrap_or_default()
                        ),
                        _ => v
                            .to_json(ctx)
                            .ok()
                            .flatten()
                            .map_or_else(|| "an error".into(), |j| format!("thrown: {j}")),
                    }
                }
                None => v
                    .to_string(ctx)
                    .map(|s| format!("thrown: {}", s.to_std_string_escaped()))
                    .unwrap_or_else(|_| "an error".into()),
            }
        }
    }
}

fn main() {}
