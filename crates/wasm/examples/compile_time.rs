//! Measures what a first compile costs per code generator: compiles each component given
//! (no cache) with the engine settings toolhost uses (component model, fuel, epochs),
//! with Cranelift (the default) and with Winch (the baseline compiler `serve` compiles a
//! cold component with first, see docs/design.md "Compile tiers"), each with and without
//! parallel compilation of the component's functions, and prints the seconds per
//! component (best of `RUNS`, default 1).
//!
//! `cargo run --release -p toolhost-wasm --example compile_time -- A.wasm B.wasm ...`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use wasmtime::{Config, Engine, Strategy, component::Component};

fn engine(strategy: Strategy, parallel: bool) -> Result<Engine, String> {
    let mut c = Config::new();
    c.wasm_component_model(true)
        .consume_fuel(true)
        .epoch_interruption(true)
        .strategy(strategy)
        .parallel_compilation(parallel);
    Engine::new(&c).map_err(|e| format!("{e:#}"))
}

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let files: Vec<String> = std::env::args().skip(1).collect();
    // An engine that cannot be built is printed as such and the other lines stand.
    let setups = [
        ("cranelift", Strategy::Cranelift),
        ("winch", Strategy::Winch),
    ];
    for (name, strategy) in setups {
        for parallel in [true, false] {
            let engine = match engine(strategy, parallel) {
                Ok(e) => e,
                Err(e) => {
                    println!("{name} parallel={parallel}: no engine: {e}");
                    continue;
                }
            };
            for f in &files {
                let bytes = std::fs::read(f).unwrap();
                let mut best = f64::MAX;
                let mut err = None;
                for _ in 0..runs {
                    let t = Instant::now();
                    match Component::new(&engine, &bytes) {
                        Ok(_) => best = best.min(t.elapsed().as_secs_f64()),
                        Err(e) => {
                            err = Some(format!("{e:#}").lines().next().unwrap_or("").to_string());
                            break;
                        }
                    }
                }
                let short = std::path::Path::new(f)
                    .file_name()
                    .unwrap()
                    .to_string_lossy();
                match err {
                    Some(e) => println!("{name:9} parallel={parallel:5} {short:18} failed: {e}"),
                    None => println!("{name:9} parallel={parallel:5} {short:18} {best:8.3} s"),
                }
            }
        }
    }
}
