//! `toolhost eval CASES.toml`: tool-selection regression cases replayed through the real
//! loop against a model; prints a verdict per case and exits 1 when any case fails
//! (`docs/llm.md`, "Tool-selection evals"). Run it after every change of a tool
//! description.
//!
//! The tools the model calls really run. Destructive ones never do: the approver denies
//! every call that needs an approval, and the denial goes back to the model
//! (`OnDenied::Continue`), so the case is judged on what the model chose.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use toolhost::llm::eval::{EvalFile, run_case};
use toolhost::llm::{CycleConfig, OnDenied};
use toolhost::tools::{ApprovalDecision, StaticApprover};

use super::approver::one_line;

/// Arguments of `toolhost eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The cases file (TOML, `[[case]]` tables: name, prompt, expect_tool, args).
    cases: PathBuf,
    #[command(flatten)]
    host: super::HostArgs,
    #[command(flatten)]
    model: super::chat::ModelArgs,
    /// The most model requests per case.
    #[arg(long, default_value_t = 4)]
    max_turns: usize,
    /// Print the verdicts as JSON lines.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    audit: super::audit::AuditArgs,
}

/// Runs `toolhost eval`.
pub async fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.cases)
        .with_context(|| format!("reading {}", args.cases.display()))?;
    let file: EvalFile =
        toml::from_str(&text).with_context(|| format!("parsing {}", args.cases.display()))?;
    if file.cases.is_empty() {
        anyhow::bail!(
            "{} has no cases; write [[case]] tables with name, prompt and expect_tool",
            args.cases.display()
        );
    }
    let (registry, _problems) = super::common::build_registry(&args.host).await?;
    // The tools really run: the audit trail records them as it does for `chat`.
    let audit_config = super::common::load_config(&args.host)?.audit;
    super::audit::attach_default(&registry, &args.audit, &audit_config)?;
    registry.set_approver(Some(Arc::new(StaticApprover(ApprovalDecision::Deny))));
    let provider = args.model.provider()?;
    let config = CycleConfig {
        max_turns: Some(args.max_turns.max(1)),
        on_denied: OnDenied::Continue,
        ..CycleConfig::default()
    };
    let mut failed = 0usize;
    for case in &file.cases {
        let outcome = run_case(provider.clone(), &registry, case, &config).await;
        if !outcome.passed {
            failed += 1;
        }
        if args.json {
            println!("{}", super::term::json(serde_json::to_string(&outcome)?));
            continue;
        }
        let verdict = if outcome.passed { "PASS" } else { "FAIL" };
        println!("{verdict} {}", one_line(&outcome.name, 80));
        for p in &outcome.problems {
            println!("     {}", one_line(p, 200));
        }
        if let Some(e) = &outcome.error {
            println!(
                "     (the loop ended with: {})",
                one_line(&super::term::error(e), 200)
            );
        }
    }
    println!(
        "{} of {} case(s) passed",
        file.cases.len() - failed,
        file.cases.len()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
