//! `toolhost call TOOL 'JSON'`: runs one tool through the registry pipeline and prints
//! its render text, or the error (exit code 1).

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use std::io::IsTerminal;
use std::sync::Arc;

use toolhost::mcp::{LocalLogin, LocalUser};
use toolhost::tools::{ApprovalDecision, Approver, StaticApprover, ToolCall, ToolContext};

/// Arguments of `toolhost call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The tool name (see `toolhost list`).
    pub tool: String,
    /// The arguments, a JSON object.
    #[arg(default_value = "{}")]
    pub json: String,
    /// Print the whole invocation record (canonical JSON, duration) as JSON.
    #[arg(long)]
    pub json_output: bool,
    /// Approve this call if the tool is destructive (without it, a terminal is asked, and
    /// with no terminal the call is denied). A wrapped MCP server's questions during the
    /// call (elicitation) are asked on the terminal too; with no terminal they are refused.
    #[arg(long)]
    pub yes: bool,
    /// When a server asks for more OAuth scope during the call (HTTP 403
    /// `insufficient_scope`), or refuses the stored login when toolhost connects (HTTP
    /// 401: expired beyond refresh, or the server moved to another authorization server):
    /// `browser` shows the authorization URL (and opens a browser) and waits for the
    /// login, then goes on; `headless` follows the URL's redirects without a person
    /// (automation, for authorization servers that approve without asking); `never`
    /// fails, saying what to do. Default: `browser` on a terminal, else `never`.
    #[arg(long, value_enum, value_name = "HOW")]
    pub login: Option<LoginMode>,
    /// Append this call's audit record (one JSON line) to FILE; off by default for
    /// one-shot calls (see docs/permissions.md, "Audit trail").
    #[arg(long, value_name = "FILE")]
    pub audit: Option<std::path::PathBuf>,
}

/// How `toolhost call` logs in again when a server asks for more scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoginMode {
    /// Show the authorization URL, open a browser and wait.
    Browser,
    /// Follow the authorization URL's redirects without a person.
    Headless,
    /// Do not log in again; fail with what to do.
    Never,
}

/// The registry for the call. A server that refused its stored login when toolhost
/// connected (HTTP 401) is logged in to again, when `login` allows, and everything is
/// loaded once more; a second refusal stays a warning, as any server that is down.
async fn registry_logged_in(
    args: &CallArgs,
    login: LoginMode,
) -> anyhow::Result<toolhost::tools::ToolRegistry> {
    let (registry, _problems, report) =
        super::common::build_registry_with_trust(&args.host).await?;
    if login == LoginMode::Never || report.mcp_unauthorized.is_empty() {
        return Ok(registry);
    }
    let config = super::common::load_config(&args.host)?;
    let refused: Vec<&String> = report
        .mcp_unauthorized
        .iter()
        .filter(|name| super::mcp::uses_stored_login(&config, name))
        .collect();
    if refused.is_empty() {
        return Ok(registry);
    }
    let how = super::mcp::LoginHow {
        headless: login == LoginMode::Headless,
        no_browser: false,
        timeout: std::time::Duration::from_secs(300),
        scopes: Vec::new(),
    };
    for name in refused {
        eprintln!("MCP server {name} refused the stored login: logging in again");
        super::mcp::log_in(&args.host, name, &how).await?;
    }
    drop(registry);
    Ok(super::common::build_registry(&args.host).await?.0)
}

/// Runs `toolhost call`.
pub async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments: serde_json::Value = serde_json::from_str(&args.json)
        .with_context(|| format!("the arguments are not valid JSON: {}", args.json))?;
    let terminal = std::io::stdin().is_terminal();
    let login = args.login.unwrap_or(if terminal {
        LoginMode::Browser
    } else {
        LoginMode::Never
    });
    let registry = registry_logged_in(&args, login).await?;
    let console: Arc<std::sync::Mutex<()>> = Arc::default();
    let approver: Arc<dyn Approver> = if args.yes {
        Arc::new(StaticApprover(ApprovalDecision::AllowOnce))
    } else if terminal {
        Arc::new(super::approver::TerminalApprover {
            console: console.clone(),
        })
    } else {
        Arc::new(super::approver::NobodyToAsk {
            what: "there is no terminal to ask (pass --yes to approve this call)",
        })
    };
    registry.set_approver(Some(approver));
    if let Some(path) = &args.audit {
        let config = super::common::load_config(&args.host)?.audit;
        super::audit::attach(&registry, path.clone(), &config)?;
    }
    let mut ctx = ToolContext::new("cli", "cli");
    let mut user = if terminal {
        super::elicit::terminal_user(console)
    } else {
        LocalUser::default()
    };
    match login {
        LoginMode::Browser => {
            let open = std::io::stderr().is_terminal();
            user = user.with_login(LocalLogin::Person(Arc::new(move |url: &str| {
                eprintln!(
                    "The MCP server asks for more authorization; to log in, open this URL in a \
                     browser:\n\n  {}\n",
                    super::term::text(url)
                );
                if open {
                    super::mcp::open_browser(url);
                }
            })));
        }
        LoginMode::Headless => user = user.with_login(LocalLogin::Headless),
        LoginMode::Never => {}
    }
    ctx = ctx.with(user);
    let inv = registry
        .invoke_call(ToolCall::new(&args.tool, arguments), &ctx)
        .await;
    if args.json_output {
        let out = match &inv.output {
            Ok(o) => serde_json::json!({"ok": true, "canonical": o.canonical, "render": o.render,
                "duration_ms": inv.duration.as_secs_f64() * 1000.0, "truncated": inv.truncated}),
            Err(e) => serde_json::json!({"ok": false,
                "error": toolhost::tools::redact::scrub_urls(&e.to_string()), "kind": e.kind(),
                "duration_ms": inv.duration.as_secs_f64() * 1000.0}),
        };
        println!("{}", super::term::json(serde_json::to_string_pretty(&out)?));
    }
    match &inv.output {
        Ok(o) => {
            if !args.json_output {
                println!("{}", super::term::text(&o.render));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            if !args.json_output {
                eprintln!("error: {}", super::term::error(&e.to_string()));
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
