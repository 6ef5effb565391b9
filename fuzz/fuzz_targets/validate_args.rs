//! Fuzzes argument validation against arbitrary schemas through the real registry
//! (register a `DynamicTool` with the schema, invoke it with the arguments): registration
//! either compiles the schema or refuses it with a typed error, the invocation ends in a
//! record, and a validation error never quotes a secret (see `tools::redact`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolhost_core::tools::{DynamicTool, ToolOutput, ToolRegistry};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (schema, args) = text.split_once('\n').unwrap_or((text, "{}"));
    let (Ok(schema), Ok(args)) = (
        serde_json::from_str::<Value>(schema),
        serde_json::from_str::<Value>(args),
    ) else {
        return;
    };
    let registry = ToolRegistry::new();
    let tool = DynamicTool::builder("fuzzed")
        .description("A tool whose schema comes from the fuzzer")
        .parameters(schema)
        .handler(|_, _| async { Ok(ToolOutput::text("ok")) })
        .build_dyn();
    if registry.register(tool).is_err() {
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime");
    let secret = "hunter2-fuzz-secret";
    let inv = rt.block_on(registry.invoke_recorded("fuzzed", args));
    if let Err(e) = &inv.output {
        let _ = e.to_string();
    }
    // The same arguments with a secret under a secret key: never echoed.
    let mut with_secret = serde_json::json!({"password": secret});
    if let Value::Object(m) = &inv.input {
        for (k, v) in m {
            if k != "password" {
                with_secret[k] = v.clone();
            }
        }
    }
    let inv = rt.block_on(registry.invoke_recorded("fuzzed", with_secret));
    if let Err(e) = &inv.output {
        assert!(
            !e.to_string().contains(secret),
            "validation error leaks: {e}"
        );
    }
});
