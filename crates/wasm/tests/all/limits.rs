//! Limits: epoch deadline, fuel, memory, stack, output flood. Each runaway is stopped with
//! an error naming the limit, and the host keeps working.

use std::time::{Duration, Instant};

use serde_json::json;
use toolhost_core::tools::ToolError;

use crate::support::{call, err_text, still_works, with_policy};

#[tokio::test]
async fn infinite_loop_is_stopped_by_the_epoch_deadline_within_twice_the_deadline() {
    // Fuel at its maximum, so that only the deadline can stop the loop however fast the
    // machine burns instructions (the default budget lasts about 0.3 s on a fast one).
    let (reg, _d) = with_policy("hostile", "timeout_ms = 200\nfuel = 10000000000000\n").await;
    let start = Instant::now();
    let inv = call(&reg, "spin", json!({})).await;
    let elapsed = start.elapsed();
    assert!(
        matches!(&inv.output, Err(ToolError::Timeout(_, d)) if *d == Duration::from_millis(200)),
        "{}",
        inv.model_text()
    );
    assert!(err_text(&inv).contains("timed out after 200 ms"));
    assert!(
        elapsed < Duration::from_millis(400),
        "stopped after {elapsed:?}"
    );
    still_works(&reg).await;
}

#[tokio::test]
async fn infinite_loop_is_stopped_by_fuel() {
    let (reg, _d) = with_policy("hostile", "timeout_ms = 60000\nfuel = 50000000\n").await;
    let inv = call(&reg, "spin", json!({})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::LimitExceeded(..))),
        "{}",
        inv.model_text()
    );
    assert!(err_text(&inv).contains("ran out of fuel (limit 50000000)"));
    still_works(&reg).await;
}

#[tokio::test]
async fn without_a_fuel_key_a_spin_loop_runs_out_of_the_default_fuel_budget() {
    // No `fuel`: the default budget applies. The deadline is set far beyond what the
    // budget takes to burn on any machine (10 min against well under 10 s on a slow one),
    // so that the test names the one limit that can fire.
    let (reg, _d) = with_policy("hostile", "memory_mb = 64\ntimeout_ms = 600000\n").await;
    let inv = call(&reg, "spin", json!({})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::LimitExceeded(..))),
        "{}",
        inv.model_text()
    );
    let limit = toolhost_wasm::policy::DEFAULT_FUEL;
    assert!(
        err_text(&inv).contains(&format!("ran out of fuel (limit {limit})")),
        "{}",
        inv.model_text()
    );
    still_works(&reg).await;
}

#[tokio::test]
async fn memory_bomb_hits_the_memory_limit() {
    let (reg, _d) = with_policy("hostile", "memory_mb = 32\n").await;
    let inv = call(&reg, "membomb", json!({})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::LimitExceeded(..))),
        "{}",
        inv.model_text()
    );
    assert!(err_text(&inv).contains("memory limit 32 MiB exceeded"));
    still_works(&reg).await;
}

#[tokio::test]
async fn deep_recursion_is_a_trap_not_an_abort() {
    let (reg, _d) = with_policy("hostile", "").await;
    let inv = call(&reg, "recurse", json!({"depth": 100_000_000u64})).await;
    assert!(
        matches!(&inv.output, Err(ToolError::LimitExceeded(..))),
        "{}",
        inv.model_text()
    );
    assert!(err_text(&inv).contains("stack overflow"));
    // Shallow recursion is fine.
    let ok = call(&reg, "recurse", json!({"depth": 1000})).await;
    assert_eq!(ok.output.map(|o| o.canonical).ok(), Some(json!(1000)));
    still_works(&reg).await;
}

#[tokio::test]
async fn huge_output_is_truncated() {
    let (reg, _d) = with_policy("hostile", "output_kb = 16\n").await;
    let inv = call(&reg, "flood", json!({})).await;
    assert!(inv.truncated, "render text was not truncated");
    let out = inv.output.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.render.len() <= reg.max_result_bytes() + 200,
        "{}",
        out.render.len()
    );
    let canonical = out.canonical.as_str().map(str::len).unwrap_or(0);
    assert!(
        canonical <= toolhost_wasm::component::MAX_CANONICAL_BYTES + 200,
        "{canonical}"
    );
    still_works(&reg).await;
}
