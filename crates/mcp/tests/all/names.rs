//! The registry's one naming rule across MCP servers, against two instances of
//! `@modelcontextprotocol/server-everything` (both list `echo`, `get-sum`, ...): a name two
//! servers describe belongs to neither, whichever connected first; a native tool keeps its
//! name; a server that goes away gives the other its plain names back; and every tool
//! still answers under the name it got.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_core::tools::{DynamicTool, ToolOutput, ToolRegistry};

use crate::support;

fn names(registry: &ToolRegistry) -> BTreeSet<String> {
    registry.list_tools().into_iter().collect()
}

/// Waits (at most 10 s) until `registry` holds `name`.
async fn until_listed(registry: &ToolRegistry, name: &str) {
    let t0 = Instant::now();
    while !registry.contains(name) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{name} never came: {:?}",
            names(registry)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The names the registry holds once servers `first` and `second` registered, in that
/// order, beside a native `echo`-less tool `get-env` (native, so it keeps its name).
async fn both_in_order(first: &str, second: &str) -> Option<(ToolRegistry, BTreeSet<String>)> {
    let registry = ToolRegistry::new();
    registry
        .register(
            DynamicTool::builder("get-env")
                .description("A native tool whose name the servers also describe")
                .handler(|_a, _c| async move { Ok(ToolOutput::text("native")) })
                .build_dyn(),
        )
        .unwrap();
    let a = support::everything_client(first).await?;
    let b = support::everything_client(second).await?;
    let ra = a.register_into(&registry).await.unwrap();
    assert!(ra.names.contains(&"echo".to_string()), "{:?}", ra.names);
    b.register_into(&registry).await.unwrap();
    // The first server was renamed before the second's registration returned.
    let got = names(&registry);
    a.close().await.unwrap();
    b.close().await.unwrap();
    Some((registry, got))
}

#[tokio::test]
async fn a_name_two_servers_describe_belongs_to_neither_whatever_the_order() {
    let Some((_, one)) = both_in_order("alpha", "beta").await else {
        return;
    };
    let Some((_, other)) = both_in_order("beta", "alpha").await else {
        return;
    };
    assert_eq!(one, other, "the order decided names");
    assert!(
        one.contains("alpha__echo") && one.contains("beta__echo") && !one.contains("echo"),
        "{one:?}"
    );
    // The native tool keeps its name; both servers' `get-env` are qualified.
    assert!(
        one.contains("get-env") && one.contains("alpha__get-env") && one.contains("beta__get-env"),
        "{one:?}"
    );
}

#[tokio::test]
async fn a_server_that_goes_away_gives_the_other_its_names_back() {
    let registry = ToolRegistry::new();
    let Some(stays) = support::everything_client("stays").await else {
        return;
    };
    let Some(squatter) = support::everything_client("squatter").await else {
        return;
    };
    stays.register_into(&registry).await.unwrap();
    squatter.register_into(&registry).await.unwrap();
    assert!(registry.contains("stays__echo") && registry.contains("squatter__echo"));
    // Both answer under the names they got.
    for name in ["stays__echo", "squatter__echo"] {
        let out = registry
            .invoke_recorded(name, json!({"message": "hi"}))
            .await
            .output
            .unwrap();
        assert!(out.render.contains("hi"), "{name}: {}", out.render);
    }
    squatter.close().await.unwrap();
    until_listed(&registry, "echo").await;
    assert!(!registry.contains("stays__echo"), "{:?}", names(&registry));
    // The good call still works under the plain name.
    support::sums_to_42(&registry).await;
    stays.close().await.unwrap();
}
