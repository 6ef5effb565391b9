//! `toolhost lint [--plugins DIR] [--config FILE] [--json]`: reviews every tool
//! definition of the plugins folder and of the configured MCP servers with the rules of
//! `toolhost_lint` (documented in `docs/writing-plugins.md`, "Linting"), and the
//! definitions `approve`, `install` and `update` ask the operator to approve.
//!
//! Definitions are read the way `approve` reads them, without touching the lock: each
//! component is described with no capability ([`Candidate::load`], a few at a time), and
//! each enabled MCP server is started, asked for its tools and closed. A plugin that does
//! not load, or a server that does not answer, is a `load-failed` finding. The exit
//! status is 1 when there is any error-severity finding (for CI), else 0.
//!
//! Everything printed that came from a definition is escaped, the zero-width and tag
//! characters a terminal would not show included (`escape::reveal_line`, and
//! `reveal_json` after `term::json` for `--json`); the messages of the rules quote
//! definitions only through `lint::excerpt`, which does the same.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use futures::StreamExt;
use toolhost::config::HostConfig;
use toolhost::tools::escape;
use toolhost::trust::{Candidate, mcp_tool_def, plugin_name};
use toolhost_lint::{Counts, Finding, Rule, Subject, lint, lint_served, sort};
use toolhost_trust::ToolDef;

/// Arguments of `toolhost lint`.
#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// Print JSON (`findings`: rule, severity, source, tool, location, message, hint;
    /// `counts`; `sources`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also ask a model (the one `chat` uses) to judge each definition against a fixed
    /// rubric: catches paraphrase and other languages. Nothing is sent without it.
    #[arg(long)]
    pub judge: bool,
    #[command(flatten)]
    pub model: JudgeModelArgs,
}

/// The judge's model: as for `chat` (flags or `TOOLHOST_LLM_*`), plus its bounds.
#[derive(Debug, Clone, Args)]
pub struct JudgeModelArgs {
    /// The judge's API root (OpenAI-compatible or Anthropic), as for `chat`.
    #[arg(long, env = "TOOLHOST_LLM_BASE_URL")]
    pub base_url: Option<String>,
    /// The judge's model name, as for `chat`.
    #[arg(long, env = "TOOLHOST_LLM_MODEL")]
    pub model: Option<String>,
    /// The wire format: openai or anthropic (default: guessed from the base URL).
    #[arg(long, value_enum, env = "TOOLHOST_LLM_PROVIDER")]
    pub provider: Option<super::chat::ProviderKind>,
    /// The environment variable holding the judge's API key.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// The most tokens of prompts one run sends (definitions beyond it are not judged:
    /// `judge-failed`).
    #[arg(long, default_value_t = super::judge::DEFAULT_BUDGET)]
    pub judge_budget: usize,
    /// How long one judge request may take, in seconds.
    #[arg(long, default_value_t = super::judge::DEFAULT_TIMEOUT.as_secs())]
    pub judge_timeout: u64,
}

impl JudgeModelArgs {
    /// The judge of these settings: `Err` with what is missing.
    pub fn judge(&self) -> Result<super::judge::Judge, String> {
        let (Some(base_url), Some(model)) = (self.base_url.clone(), self.model.clone()) else {
            return Err("no judge model: give --base-url and --model (or set TOOLHOST_LLM_BASE_URL and TOOLHOST_LLM_MODEL), as for chat".into());
        };
        let provider = super::chat::ModelArgs {
            base_url,
            model,
            provider: self.provider,
            api_key_env: self.api_key_env.clone(),
            prompt_caching: false,
            input_examples_field: false,
        }
        .provider()
        .map_err(|e| format!("the judge's model: {e:#}"))?;
        Ok(super::judge::Judge::new(
            provider,
            self.judge_budget,
            std::time::Duration::from_secs(self.judge_timeout.max(1)),
        ))
    }

    /// The judge's settings from the environment only (for `[lint] judge = true`).
    pub fn from_env(budget: Option<usize>) -> JudgeModelArgs {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        JudgeModelArgs {
            base_url: var("TOOLHOST_LLM_BASE_URL"),
            model: var("TOOLHOST_LLM_MODEL"),
            provider: var("TOOLHOST_LLM_PROVIDER").and_then(|p| {
                <super::chat::ProviderKind as clap::ValueEnum>::from_str(&p, true).ok()
            }),
            api_key_env: None,
            judge_budget: budget.unwrap_or(super::judge::DEFAULT_BUDGET),
            judge_timeout: super::judge::DEFAULT_TIMEOUT.as_secs(),
        }
    }
}

/// The judge's findings over `subjects` (a `judge-failed` finding for each when no judge
/// can be made).
pub async fn judge_findings(model: &JudgeModelArgs, subjects: &[Subject]) -> Vec<Finding> {
    match model.judge() {
        Ok(judge) => judge.judge(subjects).await,
        Err(why) => subjects
            .iter()
            .map(|s| Finding::new(Rule::JudgeFailed, s, "", why.clone()))
            .collect(),
    }
}

/// The judge of `[lint] judge = true` (model from `TOOLHOST_LLM_*`) as the console asks it
/// on its pending page; a judge that is not configured says so as `judge-failed`, as in
/// `toolhost approve`.
pub fn console_judge(config: &HostConfig) -> Arc<dyn toolhost::console::DefinitionJudge> {
    Arc::new(ConsoleJudge(JudgeModelArgs::from_env(
        config.lint.judge_budget,
    )))
}

/// [`console_judge`]: the judge's settings, its model made at each call.
struct ConsoleJudge(JudgeModelArgs);

impl toolhost::console::DefinitionJudge for ConsoleJudge {
    fn judge<'a>(
        &'a self,
        subjects: &'a [Subject],
    ) -> futures::future::BoxFuture<'a, Vec<Finding>> {
        Box::pin(judge_findings(&self.0, subjects))
    }
}

/// The lint subjects of one source's definitions.
pub fn subjects(source: &str, defs: &[ToolDef]) -> Vec<Subject> {
    defs.iter()
        .map(|d| Subject::shown(source, d.clone()))
        .collect()
}

/// What one source gave: its subjects, or why it gave none; and the findings of what it
/// serves besides tools (an MCP server's prompts and resources).
struct Loaded {
    source: String,
    result: anyhow::Result<Vec<Subject>>,
    served: Vec<Finding>,
    served_count: usize,
}

/// The definitions of every plugin of `dir`, described a few at a time, in file order.
async fn plugin_subjects(host: &toolhost::Host, dir: &Path) -> anyhow::Result<Vec<Loaded>> {
    let files = toolhost::wasm::folder::plugin_files(dir)
        .map_err(|e| anyhow::anyhow!("reading the plugins folder: {e}"))?;
    let parallel = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    Ok(futures::stream::iter(files)
        .map(|wasm| async move {
            let name = plugin_name(&wasm);
            let source = format!("plugin:{name}");
            let result = Candidate::load(host, &name, &wasm)
                .await
                .map(|cand| subjects(&source, &cand.tools))
                .map_err(anyhow::Error::from);
            Loaded {
                source,
                result,
                served: Vec::new(),
                served_count: 0,
            }
        })
        .buffered(parallel)
        .collect()
        .await)
}

/// The definitions of every enabled MCP server of the config, asked all at once.
async fn mcp_subjects(config: &HostConfig) -> Vec<Loaded> {
    let servers = config
        .mcp
        .servers
        .iter()
        .filter(|(_, cfg)| !cfg.disabled)
        .map(|(server, cfg)| async move {
            let source = format!("mcp:{server}");
            let mut served = Vec::new();
            let mut served_count = 0;
            let result = super::servers::server_definitions(server, cfg, true)
                .await
                .map(|(tools, items)| {
                    served_count = items.len();
                    for (name, value) in &items {
                        served.extend(lint_served(&source, name, value));
                    }
                    let defs: Vec<ToolDef> = tools.iter().map(mcp_tool_def).collect();
                    subjects(&source, &defs)
                });
            Loaded {
                source,
                result,
                served,
                served_count,
            }
        });
    futures::future::join_all(servers).await
}

/// Runs `toolhost lint`.
pub async fn run(args: LintArgs) -> anyhow::Result<ExitCode> {
    let config = super::common::load_config(&args.host)?;
    let dir = super::common::plugins_dir(&args.host, &config);
    if args.host.plugins.is_some() && !dir.is_dir() {
        anyhow::bail!("no plugins folder {}", dir.display());
    }
    let host = super::common::host(&args.host, &config, false)?;
    let (plugins, servers) = tokio::join!(plugin_subjects(&host, &dir), mcp_subjects(&config));
    let mut all = Vec::new();
    let mut failed = Vec::new();
    let mut sources = Vec::new();
    let mut served = Vec::new();
    for loaded in plugins?.into_iter().chain(servers) {
        let read = loaded.served_count;
        served.extend(loaded.served);
        match loaded.result {
            Ok(s) => {
                sources.push(
                    serde_json::json!({"source": loaded.source, "tools": s.len(),
                    "prompts_and_resources": read}),
                );
                all.extend(s);
            }
            Err(e) => failed.push(Finding::about(
                Rule::LoadFailed,
                &loaded.source,
                "",
                "",
                format!("{e:#}"),
            )),
        }
    }
    let mut findings = lint(&all);
    findings.extend(failed);
    findings.extend(served);
    if args.judge {
        findings.extend(judge_findings(&args.model, &all).await);
    }
    sort(&mut findings);
    let counts = Counts::of(&findings);
    if args.json {
        let doc = serde_json::json!({
            "findings": findings,
            "counts": counts,
            "sources": sources,
        });
        println!(
            "{}",
            reveal_json(super::term::json(serde_json::to_string_pretty(&doc)?))
        );
    } else {
        print_findings(&findings);
        println!(
            "checked {} tool(s) of {} source(s): {}",
            all.len(),
            sources.len(),
            count_text(counts)
        );
    }
    Ok(if counts.errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Serialised JSON with the characters that hide text (`escape::is_invisible`: zero-width,
/// tag characters) written as `\uXXXX` escapes (UTF-16, a surrogate pair beyond the BMP),
/// like `term::json` does for the controls: a tool name in the findings reads on a
/// terminal as it is. The JSON means the same: outside strings it is plain ASCII.
fn reveal_json(serialised: String) -> String {
    use std::fmt::Write as _;
    if !serialised.chars().any(escape::is_invisible) {
        return serialised;
    }
    let mut out = String::with_capacity(serialised.len() + 16);
    for c in serialised.chars() {
        if escape::is_invisible(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// "2 error(s), 1 warning(s), 0 info".
fn count_text(c: Counts) -> String {
    format!(
        "{} error(s), {} warning(s), {} info",
        c.errors, c.warnings, c.infos
    )
}

/// Prints findings, one line each plus a line with the fix; untrusted parts escaped,
/// hidden characters shown (`escape::reveal_line`).
pub fn print_findings(findings: &[Finding]) {
    let cell = escape::reveal_line;
    for f in findings {
        let tool = if f.tool.is_empty() {
            cell(&f.source).into_owned()
        } else {
            format!("{}/{}", cell(&f.source), cell(&f.tool))
        };
        let at = if f.location.is_empty() {
            String::new()
        } else {
            format!(" {}", cell(&f.location))
        };
        println!(
            "{:7}  {}  {tool}{at}: {}\n         fix: {}",
            f.severity.as_str(),
            f.rule,
            cell(&f.message),
            f.hint
        );
    }
}

/// Shows the lint findings of what is about to be approved (one source's definitions),
/// with the judge's when `[lint] judge = true`. They inform the operator's decision; they
/// do not block it.
pub async fn show_for_approval(config: &HostConfig, subjects: &[Subject]) {
    let mut findings = lint(subjects);
    if config.lint.judge {
        let model = JudgeModelArgs::from_env(config.lint.judge_budget);
        findings.extend(judge_findings(&model, subjects).await);
        sort(&mut findings);
    }
    if findings.is_empty() {
        println!("  lint: no findings");
        return;
    }
    println!("  lint: {}", count_text(Counts::of(&findings)));
    print_findings(&findings);
}
