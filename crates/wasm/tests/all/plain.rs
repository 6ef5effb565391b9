//! Plain WIT components (`tests/fixtures/plain_wit`, a Rust component implementing its
//! own world `demo:plain/plain`, never aware of toolhost): every exported function is a
//! tool with a schema derived from its WIT types and its doc comment as description;
//! arguments are checked before the call, results come back as JSON, `err` results as
//! tool errors; resource functions are refused by name; hostile sizes are bounded and a
//! good call still works after each.

use serde_json::{Value, json};
use toolhost_core::tools::{ToolContext, ToolError};
use toolhost_wasm::{Plugin, WasmTool};

use super::support;

async fn plugin() -> (Plugin, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    support::install(dir.path(), "plain_wit", None);
    let p = Plugin::load(support::engine(), &dir.path().join("plain_wit.wasm"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (p, dir)
}

fn tool<'a>(p: &'a Plugin, name: &str) -> &'a WasmTool {
    p.tools()
        .iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Runs a tool directly (no registry schema check first: the host's own checks).
async fn run(p: &Plugin, name: &str, args: Value) -> Result<Value, ToolError> {
    tool(p, name)
        .run(&args, &ToolContext::new("test", "test"))
        .await
        .map(|o| o.canonical)
}

#[tokio::test]
async fn every_exported_function_is_a_tool_with_its_docs_and_a_precise_schema() {
    let (p, _dir) = plugin().await;
    assert!(p.is_plain_wit());
    let mut names: Vec<&str> = p.tools().iter().map(|t| t.spec().name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "big-list",
            "big-string",
            "check-name",
            "count",
            "divide",
            "kinds_area",
            "kinds_echo",
            "kinds_ints",
            "kinds_maybe",
            "nothing",
            "reverse",
        ]
    );
    assert_eq!(
        tool(&p, "reverse").spec().description,
        "Reverses a piece of text."
    );
    assert_eq!(
        tool(&p, "kinds_area").spec().description,
        "The area of a shape."
    );
    // Resource functions are refused, each by name.
    let refused = p.refused_exports().join("\n");
    for f in [
        "`make-counter`",
        "`[constructor]counter`",
        "`[method]counter.get`",
    ] {
        assert!(refused.contains(f), "{f} not refused: {refused}");
    }
    assert!(refused.contains("resource"), "{refused}");

    let ints = &tool(&p, "kinds_ints").spec().parameters;
    assert_eq!(
        ints["properties"]["a"],
        json!({"type": "integer", "minimum": 0, "maximum": 255})
    );
    assert_eq!(
        ints["properties"]["h"],
        json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX})
    );
    assert_eq!(ints["properties"]["g"]["maximum"], json!(u64::MAX));
    assert_eq!(ints["required"].as_array().map(Vec::len), Some(8));

    let echo = &tool(&p, "kinds_echo").spec().parameters["properties"]["value"];
    assert_eq!(echo["type"], "object");
    assert_eq!(echo["additionalProperties"], false);
    assert_eq!(echo["required"].as_array().map(Vec::len), Some(14));
    let f = &echo["properties"];
    assert_eq!(
        f["letter"],
        json!({"type": "string", "minLength": 1, "maxLength": 1})
    );
    assert_eq!(
        f["color"],
        json!({"type": "string", "enum": ["red", "green", "blue"]})
    );
    assert_eq!(f["perms"]["uniqueItems"], true);
    assert_eq!(f["pair"]["prefixItems"].as_array().map(Vec::len), Some(2));
    assert_eq!(f["shape"]["oneOf"].as_array().map(Vec::len), Some(3));
    assert_eq!(f["maybe"]["anyOf"][0], json!({"type": "null"}));

    // Option parameters may be absent; others are required.
    let maybe = &tool(&p, "kinds_maybe").spec().parameters;
    assert_eq!(maybe["required"], json!([]));
    let divide = &tool(&p, "divide").spec().parameters;
    assert_eq!(divide["required"], json!(["a", "b"]));
}

#[tokio::test]
async fn values_of_every_kind_round_trip_through_the_guest() {
    let (p, _dir) = plugin().await;
    let everything = json!({
        "flag": true,
        "letter": "ß",
        "text": "hé \u{1F600}",
        "ratio": 0.5,
        "names": ["a", "b"],
        "bytes": [0, 255],
        "pair": [7, "seven"],
        "at": {"x": 1.5, "y": -2.0},
        "shape": {"tag": "rect", "value": {"x": 2.0, "y": 3.0}},
        "color": "green",
        "perms": ["read", "exec"],
        "maybe": null,
        "outcome": {"tag": "err", "value": "bad"},
        "nested": [null, {"x": 0.0, "y": 1.0}],
    });
    let out = run(&p, "kinds_echo", json!({"value": everything})).await;
    assert_eq!(out.ok(), Some(everything));

    let bounds = json!({
        "a": 255, "b": -128, "c": 65535, "d": -32768,
        "e": 4294967295u32, "f": -2147483648i32,
        "g": u64::MAX, "h": i64::MIN,
    });
    let out = run(&p, "kinds_ints", bounds).await;
    assert_eq!(
        out.ok(),
        Some(json!([
            255,
            -128,
            65535,
            -32768,
            4294967295u32,
            -2147483648i32,
            u64::MAX,
            i64::MIN
        ]))
    );

    for (args, want) in [
        (json!({}), json!([null, null])),
        (json!({"a": null, "b": null}), json!([null, null])),
        (
            json!({"a": 0, "b": {"some": null}}),
            json!([0, {"some": null}]),
        ),
        (json!({"b": {"some": "x"}}), json!([null, {"some": "x"}])),
    ] {
        let out = run(&p, "kinds_maybe", args.clone()).await;
        assert_eq!(out.ok(), Some(want), "{args}");
    }

    let area = run(&p, "kinds_area", json!({"s": {"tag": "empty"}})).await;
    assert_eq!(area.ok(), Some(json!(0.0)));
    let out = run(&p, "reverse", json!({"text": "abc"})).await;
    assert_eq!(out.ok(), Some(json!("cba")));
}

#[tokio::test]
async fn results_ok_err_and_none() {
    let (p, _dir) = plugin().await;
    assert_eq!(
        run(&p, "divide", json!({"a": 7, "b": 2})).await.ok(),
        Some(json!(3))
    );
    match run(&p, "divide", json!({"a": 7, "b": 0})).await {
        Err(ToolError::ExecutionFailed(_, m)) => assert_eq!(m, "cannot divide 7 by zero"),
        other => panic!("expected a tool error, got {other:?}"),
    }
    assert_eq!(
        run(&p, "check-name", json!({"name": "x"})).await.ok(),
        Some(Value::Null)
    );
    match run(&p, "check-name", json!({"name": ""})).await {
        Err(ToolError::ExecutionFailed(_, m)) => assert_eq!(m, "the name is empty"),
        other => panic!("expected a tool error, got {other:?}"),
    }
    assert_eq!(run(&p, "nothing", json!({})).await.ok(), Some(Value::Null));
}

#[tokio::test]
async fn bad_arguments_are_argument_errors_before_the_call() {
    let (p, _dir) = plugin().await;
    let ints = |a: Value| json!({"a": a, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0});
    let bad = [
        (
            "kinds_ints",
            ints(json!(256)),
            "`a`: 256 is out of range (0 to 255)",
        ),
        (
            "kinds_ints",
            ints(json!(-1)),
            "`a`: -1 is out of range (0 to 255)",
        ),
        (
            "kinds_ints",
            ints(json!(1.5)),
            "`a`: expected an integer, got 1.5",
        ),
        ("kinds_ints", ints(json!("1")), "`a`: expected an integer"),
        ("divide", json!({"a": 1}), "the parameter `b` is missing"),
        (
            "divide",
            json!({"a": 1, "b": 1, "c": 1}),
            "unknown parameter \"c\"",
        ),
        (
            "kinds_area",
            json!({"s": {"tag": "hexagon"}}),
            "unknown case \"hexagon\"",
        ),
        (
            "kinds_area",
            json!({"s": {"tag": "circle"}}),
            "this case needs a `value`",
        ),
        (
            "kinds_area",
            json!({"s": {"tag": "rect", "value": {"x": 1.0}}}),
            "`s.value`: the field `y` is missing",
        ),
        (
            "kinds_maybe",
            json!({"b": "x"}),
            "expected null or {\"some\": value}",
        ),
        ("reverse", json!([1]), "must be a JSON object"),
    ];
    for (name, args, want) in bad {
        match run(&p, name, args.clone()).await {
            Err(ToolError::InvalidArguments(_, m)) => {
                assert!(m.contains(want), "{name} {args}: {m}")
            }
            other => panic!("{name} {args}: expected an argument error, got {other:?}"),
        }
    }
    // Through the registry (its schema check first), an enum case that does not exist.
    let (reg, _dir) = support::with_policy("plain_wit", "").await;
    let mut everything = json!({
        "flag": true, "letter": "a", "text": "", "ratio": 0.0, "names": [], "bytes": [],
        "pair": [0, ""], "at": {"x": 0.0, "y": 0.0}, "shape": {"tag": "empty"},
        "color": "purple", "perms": [], "maybe": null, "outcome": {"tag": "ok", "value": 1},
        "nested": [],
    });
    let inv = support::call(&reg, "kinds_echo", json!({"value": everything.clone()})).await;
    assert!(
        matches!(inv.output, Err(ToolError::InvalidArguments(..))),
        "{}",
        inv.model_text()
    );
    everything["color"] = json!("blue");
    let inv = support::call(&reg, "kinds_echo", json!({"value": everything})).await;
    assert!(inv.is_ok(), "{}", inv.model_text());
}

#[tokio::test]
async fn hostile_sizes_are_bounded_both_ways_and_a_good_call_still_works() {
    let (p, _dir) = plugin().await;
    let good = || async { run(&p, "reverse", json!({"text": "ok"})).await.ok() };

    // Results: a 2 MB string, a list of 300 000 numbers: over the 1 MiB result cap.
    for (name, n) in [("big-string", 2_000_000), ("big-list", 300_000)] {
        match run(&p, name, json!({"n": n})).await {
            Err(ToolError::ExecutionFailed(_, m)) => assert!(m.contains("too large"), "{m}"),
            other => panic!("{name}: expected a bounded failure, got {other:?}"),
        }
        assert_eq!(good().await, Some(json!("ko")));
    }
    // Under the cap they work.
    assert_eq!(
        run(&p, "big-list", json!({"n": 3})).await.ok(),
        Some(json!([0, 1, 2]))
    );

    // Arguments: too many values, too much text, too deep.
    let many: Vec<Value> = (0..150_000).map(|_| json!("")).collect();
    match run(&p, "count", json!({"items": many})).await {
        Err(ToolError::InvalidArguments(_, m)) => assert!(m.contains("too large"), "{m}"),
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert_eq!(good().await, Some(json!("ko")));
    let huge = "x".repeat(5 << 20);
    match run(&p, "reverse", json!({"text": huge})).await {
        Err(ToolError::InvalidArguments(_, m)) => assert!(m.contains("too large"), "{m}"),
        other => panic!("expected an argument error, got {other:?}"),
    }
    // Deeper than JSON parsing allows (128), and deeper than any WIT type here.
    let mut deep = json!("x");
    for _ in 0..1000 {
        deep = json!([deep]);
    }
    match run(&p, "count", json!({"items": deep})).await {
        Err(ToolError::InvalidArguments(_, m)) => assert!(m.contains("recursion"), "{m}"),
        other => panic!("expected an argument error, got {other:?}"),
    }
    let mut deep = json!("x");
    for _ in 0..100 {
        deep = json!([deep]);
    }
    match run(&p, "count", json!({"items": [deep]})).await {
        Err(ToolError::InvalidArguments(_, m)) => {
            assert!(m.contains("`items[0]`: expected a string"), "{m}")
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert_eq!(
        run(&p, "count", json!({"items": ["a", "b"]})).await.ok(),
        Some(json!(2))
    );
}

#[tokio::test]
async fn a_cached_plain_component_lists_the_same_tools() {
    let (first, dir) = plugin().await;
    let again = Plugin::load(support::engine(), &dir.path().join("plain_wit.wasm"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(again.is_plain_wit());
    let specs = |p: &Plugin| {
        p.tools()
            .iter()
            .map(|t| t.spec().clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(specs(&first), specs(&again));
    assert_eq!(first.refused_exports(), again.refused_exports());
    assert_eq!(
        run(&again, "divide", json!({"a": 9, "b": 3})).await.ok(),
        Some(json!(3))
    );
}

#[tokio::test]
async fn a_plain_component_importing_wasi_http_reaches_only_what_its_request_file_allows() {
    let a = crate::net::server("from A").await;
    let b = crate::net::server("from B").await;
    let fetch = |reg: &toolhost_core::tools::ToolRegistry, port: u16| {
        let reg = reg.clone();
        async move {
            support::call(
                &reg,
                "fetch",
                json!({"authority": format!("127.0.0.1:{port}")}),
            )
            .await
        }
    };
    let policy = format!("network = [\"http://127.0.0.1:{a}\"]\n");
    let (reg, _d) = support::with_policy("plain_http", &policy).await;
    // Its import of wasi:http is its declaration of network.
    let spec = reg.get("fetch").map(|t| t.required_permissions());
    assert_eq!(spec, Some(vec![toolhost_core::tools::Permission::Network]));
    let ok = fetch(&reg, a).await;
    assert_eq!(ok.output.map(|o| o.canonical).ok(), Some(json!("from A")));
    let denied = fetch(&reg, b).await;
    let text = support::err_text(&denied);
    assert!(text.contains("denied"), "{text}");
    let ok = fetch(&reg, a).await;
    assert!(ok.is_ok(), "{}", ok.model_text());

    // Without a request file: nothing is reachable.
    let (reg, _d) = support::with_policy("plain_http", "").await;
    let text = support::err_text(&fetch(&reg, a).await);
    assert!(text.contains("denied"), "{text}");
}

/// A hand-written component (WAT) whose functions lie about their results: a `char` that
/// is a surrogate, an `enum` discriminant past its cases, a string pointing outside its
/// memory; and one whose parameter type nests deeper than the host accepts.
fn liar_wat() -> String {
    let mut deep = "u8".to_string();
    for _ in 0..40 {
        deep = format!("(list {deep})");
    }
    format!(
        r#"(component
        (core module $m
            (memory (export "mem") 1)
            (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 1024)
            (func (export "bad-char") (result i32) i32.const 0xD800)
            (func (export "bad-enum") (result i32) i32.const 7)
            (func (export "bad-string") (result i32)
                (i32.store (i32.const 0) (i32.const 0xFFFFFF00))
                (i32.store (i32.const 4) (i32.const 1000))
                i32.const 0)
            (func (export "deep") (param i32 i32))
            (func (export "good") (result i32) i32.const 65)
        )
        (core instance $i (instantiate $m))
        (type $e (enum "a" "b"))
        (export $e2 "e" (type $e))
        (func $bc (result char) (canon lift (core func $i "bad-char")))
        (export "bad-char" (func $bc))
        (func $be (result $e2) (canon lift (core func $i "bad-enum")))
        (export "bad-enum" (func $be))
        (func $bs (result string)
            (canon lift (core func $i "bad-string") (memory (core memory $i "mem")) (realloc (core func $i "realloc"))))
        (export "bad-string" (func $bs))
        (func $d (param "p" {deep})
            (canon lift (core func $i "deep") (memory (core memory $i "mem")) (realloc (core func $i "realloc"))))
        (export "deep" (func $d))
        (func $g (result char) (canon lift (core func $i "good")))
        (export "good" (func $g))
    )"#
    )
}

#[tokio::test]
async fn results_that_break_their_type_fail_the_call_and_a_good_call_still_works() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("liar.wasm");
    let bytes = wat::parse_str(liar_wat()).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
    let p = Plugin::load(support::engine(), &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(p.is_plain_wit());
    // Too deep a type: not a tool, named.
    let refused = p.refused_exports().join("\n");
    assert!(
        refused.contains("`deep`") && refused.contains("nested more than 32 levels"),
        "{refused}"
    );
    for name in ["bad-char", "bad-enum", "bad-string"] {
        match run(&p, name, json!({})).await {
            Err(ToolError::ExecutionFailed(_, m)) => {
                assert!(m.starts_with("the plugin failed: "), "{name}: {m}")
            }
            other => panic!("{name}: expected a failed call, got {other:?}"),
        }
        assert_eq!(run(&p, "good", json!({})).await.ok(), Some(json!("A")));
    }
}

#[tokio::test]
async fn a_plain_component_importing_what_the_host_lacks_is_refused_by_name() {
    let wat = r#"(component
        (import "my:logger/log" (instance $log (export "log" (func (param "msg" string)))))
        (core module $m (func (export "f") (result i32) i32.const 1))
        (core instance $i (instantiate $m))
        (func $f (result u32) (canon lift (core func $i "f")))
        (export "f" (func $f))
    )"#;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("needs_logger.wasm");
    let bytes = wat::parse_str(wat).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
    match Plugin::load(support::engine(), &path).await {
        Err(e @ toolhost_wasm::PluginError::PlainWit { .. }) => {
            let m = e.to_string();
            assert!(m.contains("my:logger/log"), "{m}");
            assert!(!m.contains("toolhost:tool world"), "{m}");
        }
        other => panic!("expected a plain WIT refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn two_plain_components_with_the_same_function_names_go_through_the_collision_rule() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    support::install(dir.path(), "plain_wit", None);
    std::fs::copy(support::wasm("plain_wit"), dir.path().join("other.wasm"))
        .unwrap_or_else(|e| panic!("{e}"));
    let reg = support::registry(dir.path()).await;
    assert!(!reg.contains("reverse"));
    assert!(!reg.contains("kinds_echo"));
    for name in ["plain_wit__reverse", "other__reverse", "other__kinds_area"] {
        assert!(reg.contains(name), "{name} missing");
    }
    let inv = support::call(&reg, "other__reverse", json!({"text": "ab"})).await;
    assert_eq!(inv.output.map(|o| o.canonical).ok(), Some(json!("ba")));
    let inv = support::call(
        &reg,
        "plain_wit__kinds_area",
        json!({"s": {"tag": "empty"}}),
    )
    .await;
    assert_eq!(inv.output.map(|o| o.canonical).ok(), Some(json!(0.0)));
}

#[tokio::test]
async fn interface_functions_are_named_by_the_documented_rule() {
    let long = "a".repeat(60);
    let wat = format!(
        r#"(component
        (core module $m (func (export "f") (result i32) i32.const 7))
        (core instance $i (instantiate $m))
        (func $f (result u32) (canon lift (core func $i "f")))
        (instance $a (export "go" (func $f)))
        (instance $b (export "go" (func $f)) (export "stop" (func $f)))
        (instance $c (export "{long}" (func $f)))
        (export "a:x/util@1.0.0" (instance $a))
        (export "b:y/util" (instance $b))
        (export "tools" (instance $c))
        (export "ping" (func $f))
    )"#
    );
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("names.wasm");
    let bytes = wat::parse_str(wat).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
    let p = Plugin::load(support::engine(), &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut names: Vec<&str> = p.tools().iter().map(|t| t.spec().name.as_str()).collect();
    names.sort_unstable();
    // `util_go` twice: both qualified with their package; `util_stop` is unique.
    assert_eq!(names, ["a-x-util_go", "b-y-util_go", "ping", "util_stop"]);
    let refused = p.refused_exports().join("\n");
    assert!(refused.contains("is over 64 characters"), "{refused}");
    assert_eq!(run(&p, "a-x-util_go", json!({})).await.ok(), Some(json!(7)));
    assert_eq!(run(&p, "ping", json!(null)).await.ok(), Some(json!(7)));
}

#[tokio::test]
async fn a_plain_function_that_spins_is_stopped_by_the_limits() {
    let wat = r#"(component
        (core module $m
            (func (export "spin") (loop $l (br $l)))
            (func (export "ok") (result i32) i32.const 1))
        (core instance $i (instantiate $m))
        (func $spin (canon lift (core func $i "spin")))
        (export "spin" (func $spin))
        (func $ok (result bool) (canon lift (core func $i "ok")))
        (export "ok" (func $ok))
    )"#;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("spinner.wasm");
    let bytes = wat::parse_str(wat).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.path().join("spinner.toml"), "timeout_ms = 300\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let p = Plugin::load(support::engine(), &path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let t0 = std::time::Instant::now();
    match run(&p, "spin", json!({})).await {
        Err(ToolError::Timeout(..)) => {}
        Err(ToolError::ExecutionFailed(_, m)) if m.contains("fuel") => {}
        other => panic!("expected the call to be stopped, got {other:?}"),
    }
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(run(&p, "ok", json!({})).await.ok(), Some(json!(true)));
}
