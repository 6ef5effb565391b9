//! `toolhost chat`: a conversation with a model (OpenAI-compatible or Anthropic) that can
//! call the tools of the plugins folder and the configured MCP servers.
//!
//! - Text streams as the model writes it; each tool call shows as `→ name {args}` and its
//!   result as `← name (12 ms) result`, cut to one line. While a tool runs, its progress
//!   reports show as one live line on stderr (rewritten in place on a terminal), escaped:
//!   the text comes from the tool.
//! - After each answer, stderr shows the tokens the provider reported for it and for the
//!   whole conversation.
//! - `--on-deny continue` gives a permission denial to the model as `denied: REASON`
//!   instead of ending the answer; `--token-budget N` compacts the history to fit N tokens
//!   (`docs/llm.md`).
//! - Destructive tools ask the person at the terminal: allow once, for this session,
//!   always (remembered until `toolhost approvals revoke`), or deny with a reason
//!   (`cli/approver.rs`). Without a terminal (or with stdin closed) the answer is deny.
//! - `--prompt TEXT` sends one prompt, prints the answer, and exits (for scripts); without
//!   it, each line read from stdin is a prompt, until EOF or `/exit`.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use clap::Args;
use futures::StreamExt;
use toolhost::llm::{
    AnthropicProvider, ChatProvider, CycleConfig, LlmCycle, LlmError, OnDenied, OpenAiProvider,
    StreamEvent, Usage,
};
use toolhost::tools::ToolRegistry;

use super::approver::one_line;

/// Arguments of `toolhost chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    host: super::HostArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Send this one prompt, print the answer, exit.
    #[arg(long)]
    prompt: Option<String>,
    /// A system prompt.
    #[arg(long)]
    system: Option<String>,
    /// The most model requests per prompt.
    #[arg(long, default_value_t = 10)]
    max_turns: usize,
    /// Offer only tools with one of these tags (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Which tools each turn offers: `all`; `search`: the `--search-k` tools a search of
    /// the conversation ranks first (plus those the model has been calling; a tool the
    /// model names that was not offered still runs); `code`: `run_code` alone, a script
    /// that calls the tools in a sandbox (docs/code-mode.md).
    #[arg(long = "tools", value_name = "MODE", default_value = "all")]
    selection: SelectionArg,
    /// With `--tools search`: how many ranked tools each turn offers (1 to 50).
    #[arg(long, value_name = "K", default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=50))]
    search_k: u8,
    /// What a permission denial does: `stop` ends the answer with an error; `continue`
    /// tells the model "denied: REASON" and lets it go on.
    #[arg(long, value_enum, default_value_t = OnDeny::Stop)]
    on_deny: OnDeny,
    /// Compact the history to fit this many tokens before each request (old large tool
    /// results become markers, then the oldest turns go). Default: never compact.
    #[arg(long)]
    token_budget: Option<usize>,
    /// Whether the model must call a tool in the first request of each prompt: `auto`
    /// (the model decides), `none`, `required`, or a tool's name. The requests after it
    /// are `auto`, so the model can answer (`none` holds for all).
    #[arg(long, value_name = "CHOICE", default_value = "auto")]
    tool_choice: String,
    /// Ask the model for one tool call at a time (OpenAI `parallel_tool_calls: false`,
    /// Anthropic `disable_parallel_tool_use`).
    #[arg(long)]
    no_parallel_tool_calls: bool,
    /// Offer only these tools, by name (comma-separated); a call of another is unknown.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    active_tools: Option<Vec<String>>,
    /// A JSON Schema file the final answer must meet: the answer is read as JSON and
    /// validated; one that fails goes back to the model (twice at most).
    #[arg(long, value_name = "FILE")]
    answer_schema: Option<std::path::PathBuf>,
    #[command(flatten)]
    audit: super::audit::AuditArgs,
}

/// What `--tool-choice` names.
fn tool_choice(arg: &str) -> toolhost::llm::ToolChoice {
    use toolhost::llm::ToolChoice;
    match arg {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        tool => ToolChoice::Tool(tool.to_string()),
    }
}

/// What `--on-deny` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnDeny {
    /// End the answer with an error.
    Stop,
    /// Give the model the denial and go on.
    Continue,
}

/// Which wire format the model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderKind {
    /// OpenAI Chat Completions (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}

/// Where the model is: shared by `chat` and `eval`.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// The API root, e.g. http://localhost:11434/v1 (OpenAI-compatible) or
    /// https://api.anthropic.com.
    #[arg(long, env = "TOOLHOST_LLM_BASE_URL")]
    pub base_url: String,
    /// The model name, e.g. qwen3:4b, gpt-4o-mini or claude-sonnet-4-5.
    #[arg(long, env = "TOOLHOST_LLM_MODEL")]
    pub model: String,
    /// The wire format: openai or anthropic (default: anthropic when the base URL is
    /// api.anthropic.com, else openai).
    #[arg(long, value_enum, env = "TOOLHOST_LLM_PROVIDER")]
    pub provider: Option<ProviderKind>,
    /// The environment variable holding the API key (default OPENAI_API_KEY, or
    /// ANTHROPIC_API_KEY for anthropic; unset: no key, fine for local servers).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Use Anthropic's prompt cache (the tools, the system prompt and the history are
    /// marked for it; the token line shows what was read from it). OpenAI caches long
    /// prompts by itself.
    #[arg(long)]
    pub prompt_caching: bool,
    /// Send tools' input examples in Anthropic's `input_examples` field (a beta of its
    /// API); without it they are folded into the descriptions, as for OpenAI.
    #[arg(long)]
    pub input_examples_field: bool,
}

impl ModelArgs {
    /// The provider kind: the flag, else guessed from the base URL.
    pub fn kind(&self) -> ProviderKind {
        self.provider.unwrap_or_else(|| {
            let host = self
                .base_url
                .split("://")
                .nth(1)
                .and_then(|rest| rest.split(['/', ':']).next())
                .unwrap_or("");
            if host == "anthropic.com" || host.ends_with(".anthropic.com") {
                ProviderKind::Anthropic
            } else {
                ProviderKind::Openai
            }
        })
    }

    /// The provider these arguments name.
    pub fn provider(&self) -> anyhow::Result<Arc<dyn ChatProvider>> {
        Ok(match self.kind() {
            ProviderKind::Openai => Arc::new(
                OpenAiProvider::without_key(&self.base_url, &self.model)?
                    .with_api_key_env(self.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY"))?,
            ),
            ProviderKind::Anthropic => {
                let provider = AnthropicProvider::without_key(&self.base_url, &self.model)?
                    .with_api_key_env(
                        self.api_key_env
                            .as_deref()
                            .unwrap_or(toolhost::llm::DEFAULT_ANTHROPIC_KEY_ENV),
                    )?
                    .with_prompt_caching(self.prompt_caching);
                let provider = if self.input_examples_field {
                    provider.with_input_examples_field()?
                } else {
                    provider
                };
                Arc::new(provider)
            }
        })
    }
}

/// Runs `toolhost chat`.
pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    let (registry, _problems) = super::common::build_registry(&args.host).await?;
    // A named choice or active tool the registry does not hold would only fail at the
    // provider (or offer nothing): said here, with what there is.
    let named = std::iter::once(&args.tool_choice)
        .filter(|c| !["auto", "none", "required"].contains(&c.as_str()))
        .chain(args.active_tools.iter().flatten());
    for name in named {
        if !registry.contains(name) {
            anyhow::bail!(
                "no tool named '{}': the tools are {}",
                super::term::text(name),
                registry.list_tools().join(", ")
            );
        }
    }
    if matches!(args.selection, SelectionArg::Code) {
        // Code mode's runner on an engine of its own (through the same compile cache).
        let engine = toolhost::wasm::WasmEngine::new()?;
        let runner =
            tokio::task::spawn_blocking(move || toolhost::code::CodeRunner::new(&engine)).await??;
        registry.register(Arc::new(toolhost::code::RunCodeTool::new(
            runner,
            registry.clone(),
            toolhost::code::RunLimits::default(),
        )))?;
    }
    // The audit trail, on by default (docs/permissions.md, "Audit trail").
    let audit_config = super::common::load_config(&args.host)?.audit;
    super::audit::attach_default(&registry, &args.audit, &audit_config)?;
    let console = Arc::new(Mutex::new(()));
    registry.set_approver(Some(Arc::new(super::approver::TerminalApprover {
        console: console.clone(),
    })));
    let provider = args.model.provider()?;
    let config = CycleConfig {
        max_turns: Some(args.max_turns.max(1)),
        system_prompt: args.system.clone(),
        tool_tags: args.tags.clone(),
        tool_selection: match args.selection {
            SelectionArg::All => toolhost::llm::ToolSelection::All,
            SelectionArg::Search => toolhost::llm::ToolSelection::Search {
                k: usize::from(args.search_k),
            },
            SelectionArg::Code => toolhost::llm::ToolSelection::CodeMode,
        },
        on_denied: match args.on_deny {
            OnDeny::Stop => OnDenied::Stop,
            OnDeny::Continue => OnDenied::Continue,
        },
        token_budget: args.token_budget,
        tool_choice: tool_choice(&args.tool_choice),
        parallel_tool_calls: args.no_parallel_tool_calls.then_some(false),
        active_tools: args.active_tools.clone(),
        answer_schema: match &args.answer_schema {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                Some(serde_json::from_str(&text).with_context(|| {
                    format!("{} is not JSON (a JSON Schema is wanted)", path.display())
                })?)
            }
            None => None,
        },
        ..CycleConfig::default()
    };
    let mut cycle = LlmCycle::with_provider(provider, config);

    if let Some(prompt) = &args.prompt {
        let ok = turn(&mut cycle, prompt, &registry, &console).await;
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }

    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!(
            "toolhost chat: {} tool(s), model {} at {}. Type a message; /exit or Ctrl-D to quit.",
            registry.len(),
            args.model.model,
            toolhost::tools::redact::scrub_urls(&args.model.base_url)
        );
    }
    loop {
        if interactive {
            eprint!("> ");
            let _ = std::io::stderr().flush();
        }
        let line = read_line().await.context("reading stdin")?;
        let Some(line) = line else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/exit" || line == "/quit" {
            break;
        }
        turn(&mut cycle, line, &registry, &console).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// One prompt through the loop, printing as it goes. Returns whether it succeeded.
async fn turn(
    cycle: &mut LlmCycle,
    prompt: &str,
    registry: &ToolRegistry,
    console: &Mutex<()>,
) -> bool {
    let mut stream = cycle.submit_stream_with_tools(prompt, registry);
    let mut out = std::io::stdout();
    let mut mid_line = false;
    let live = std::io::stderr().is_terminal();
    let mut progress_shown = false;
    let mut usage: Option<(Usage, Usage)> = None;
    let mut answer_usage = Usage::default();
    while let Some(ev) = stream.next().await {
        let _guard = console.lock().unwrap_or_else(|e| e.into_inner());
        if progress_shown && !matches!(ev, Ok(StreamEvent::ToolExecutionProgress { .. })) {
            if live {
                // Clear the live line before anything else is printed.
                eprint!("\r\x1b[2K");
            }
            progress_shown = false;
        }
        match ev {
            Ok(StreamEvent::ToolExecutionProgress {
                tool_name: name,
                progress,
                total,
                message,
                ..
            }) => {
                let line = progress_line(&name, progress, total, message.as_deref());
                if live {
                    eprint!("\r\x1b[2K{line}");
                    let _ = std::io::stderr().flush();
                } else {
                    eprintln!("{line}");
                }
                progress_shown = live;
            }
            Ok(StreamEvent::Usage { turn, conversation }) => {
                answer_usage.add(&turn);
                usage = Some((answer_usage, conversation));
            }
            Ok(StreamEvent::AnswerRejected { problem }) => {
                // The model's text: escaped and cut before it reaches the terminal.
                eprintln!(
                    "  [answer rejected, asking again: {}]",
                    super::approver::one_line(&problem, 200)
                );
            }
            Ok(StreamEvent::Compacted(r)) => {
                eprintln!(
                    "  [history compacted: {} → {} tokens; {} result(s) replaced, {} message(s) dropped{}]",
                    r.tokens_before,
                    r.tokens_after,
                    r.results_replaced,
                    r.messages_dropped,
                    if r.over_budget {
                        "; still over the budget"
                    } else {
                        ""
                    }
                );
            }
            Ok(StreamEvent::AssistantTextDelta { text }) => {
                let _ = write!(out, "{}", super::term::text(&text));
                let _ = out.flush();
                mid_line = !text.ends_with('\n');
            }
            Ok(StreamEvent::ToolExecutionStarted {
                tool_name: name,
                input,
                ..
            }) => {
                if mid_line {
                    let _ = writeln!(out);
                    mid_line = false;
                }
                eprintln!("  → {name} {}", one_line(&input.to_string(), 120));
            }
            Ok(StreamEvent::ToolExecutionCompleted {
                tool_name: name,
                output,
                duration,
                ..
            }) => {
                let (mark, text) = match &output {
                    Ok(t) => ("←", t),
                    Err(t) => ("✗", t),
                };
                eprintln!(
                    "  {mark} {name} ({} ms) {}",
                    duration.as_millis(),
                    one_line(text, 160)
                );
            }
            Ok(StreamEvent::TurnComplete { .. }) => {}
            Err(e) => {
                if mid_line {
                    let _ = writeln!(out);
                }
                eprintln!("error: {}", super::term::error(&e.to_string()));
                if let LlmError::MaxTurns { .. } = e {
                    eprintln!("hint: raise --max-turns, or ask for less at once");
                }
                return false;
            }
        }
    }
    if mid_line {
        let _ = writeln!(out);
    }
    if let Some((answer, conversation)) = usage {
        let cached = match answer.cached_tokens {
            0 => String::new(),
            n => format!(" ({n} cached)"),
        };
        eprintln!(
            "  [tokens: {} in{cached}, {} out; conversation {}]",
            answer.prompt_tokens, answer.completion_tokens, conversation.total_tokens
        );
    }
    true
}

/// The live line of a running tool: `  … name 3/10 message`, escaped and cut (the
/// name and message come from the tool).
fn progress_line(name: &str, progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let amount = match total {
        Some(t) if t > 0.0 => format!("{progress}/{t}"),
        _ => format!("{progress}"),
    };
    let msg = message.map(|m| one_line(m, 80)).unwrap_or_default();
    format!("  … {} {amount} {msg}", one_line(name, 40))
        .trim_end()
        .to_string()
}

/// Reads one line from stdin without blocking the runtime. `None` at EOF.
async fn read_line() -> std::io::Result<Option<String>> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let n = std::io::stdin().lock().read_line(&mut line)?;
        Ok(if n == 0 { None } else { Some(line) })
    })
    .await
    .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_line_is_one_escaped_bounded_line() {
        let evil = format!(
            "\x1b]0;pwned\x07\u{202e}\r\nfake prompt> {}",
            "x".repeat(500)
        );
        let line = progress_line(&evil, 3.0, Some(10.0), Some(&evil));
        assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
        assert!(!line.contains('\u{202e}'), "{line:?}");
        assert!(line.chars().count() < 140, "{line}");
        assert!(line.contains("3/10"));
        assert_eq!(progress_line("fetch", 2.0, None, None), "  … fetch 2");
    }

    #[test]
    fn the_provider_is_guessed_from_the_base_url() {
        let args = |url: &str| ModelArgs {
            base_url: url.into(),
            model: "m".into(),
            provider: None,
            api_key_env: None,
            prompt_caching: false,
            input_examples_field: false,
        };
        assert_eq!(
            args("https://api.anthropic.com").kind(),
            ProviderKind::Anthropic
        );
        assert_eq!(
            args("https://api.openai.com/v1").kind(),
            ProviderKind::Openai
        );
        assert_eq!(
            args("http://anthropic.com.evil.example/v1").kind(),
            ProviderKind::Openai
        );
        let forced = ModelArgs {
            provider: Some(ProviderKind::Anthropic),
            ..args("http://127.0.0.1:8080")
        };
        assert_eq!(forced.kind(), ProviderKind::Anthropic);
    }
}

/// `chat --tools`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum SelectionArg {
    /// Every tool, every turn.
    All,
    /// The tools a search of the conversation ranks first.
    Search,
    /// `run_code` alone: the model writes one script that calls the tools.
    Code,
}
