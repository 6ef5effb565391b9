//! `toolhost chat`: a conversation with an OpenAI-compatible model that can call the tools
//! of the plugins folder and the configured MCP servers.
//!
//! - Text streams as the model writes it; each tool call shows as `→ name {args}` and its
//!   result as `← name (12 ms) result`, cut to one line.
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
use toolhost::llm::{CycleConfig, LlmCycle, LlmError, OpenAiProvider, StreamEvent};
use toolhost::tools::ToolRegistry;

use super::approver::one_line;

/// Arguments of `toolhost chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The API root of an OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp, LM
    /// Studio), e.g. http://localhost:11434/v1.
    #[arg(long, env = "TOOLHOST_LLM_BASE_URL")]
    base_url: String,
    /// The model name, e.g. qwen3:4b or gpt-4o-mini.
    #[arg(long, env = "TOOLHOST_LLM_MODEL")]
    model: String,
    /// The environment variable holding the API key (unset: no key, fine for local servers).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    api_key_env: String,
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
    #[command(flatten)]
    audit: super::audit::AuditArgs,
}

/// Runs `toolhost chat`.
pub async fn run(args: ChatArgs) -> anyhow::Result<ExitCode> {
    let (registry, _problems) = super::common::build_registry(&args.host).await?;
    // The audit trail, on by default (docs/permissions.md, "Audit trail").
    let audit_config = super::common::load_config(&args.host)?.audit;
    super::audit::attach_default(&registry, &args.audit, &audit_config)?;
    let console = Arc::new(Mutex::new(()));
    registry.set_approver(Some(Arc::new(super::approver::TerminalApprover {
        console: console.clone(),
    })));
    let provider = OpenAiProvider::without_key(&args.base_url, &args.model)?
        .with_api_key_env(&args.api_key_env)?;
    let config = CycleConfig {
        max_turns: Some(args.max_turns.max(1)),
        system_prompt: args.system.clone(),
        tool_tags: args.tags.clone(),
        ..CycleConfig::default()
    };
    let mut cycle = LlmCycle::new(provider, config);

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
            args.model,
            toolhost::tools::redact::scrub_urls(&args.base_url)
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
    while let Some(ev) = stream.next().await {
        let _guard = console.lock().unwrap_or_else(|e| e.into_inner());
        match ev {
            Ok(StreamEvent::AssistantTextDelta { text }) => {
                let _ = write!(out, "{}", super::term::text(&text));
                let _ = out.flush();
                mid_line = !text.ends_with('\n');
            }
            Ok(StreamEvent::ToolExecutionStarted { name, input, .. }) => {
                if mid_line {
                    let _ = writeln!(out);
                    mid_line = false;
                }
                eprintln!("  → {name} {}", one_line(&input.to_string(), 120));
            }
            Ok(StreamEvent::ToolExecutionCompleted {
                name,
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
    true
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
