//! Who the CLI asks about a destructive call (`docs/permissions.md`, "Approvals"):
//!
//! - [`TerminalApprover`] (`chat`, and `call` on a terminal): the person at the terminal
//!   answers `o` (once), `s` (this session), `a` (always, remembered in the data folder
//!   until `toolhost approvals revoke`) or `d REASON` (deny; the reason reaches the
//!   model). Without a terminal the answer is deny.
//! - [`NobodyToAsk`] (`serve`, and `call` without a terminal or `--yes`): denies, saying
//!   how the operator approves the tool ahead of time.
//!
//! Before either is asked, the registry checks this session's and the remembered
//! decisions, so a tool approved "always" runs in every command.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use toolhost::tools::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, ArgPattern};

/// Asks the person at the terminal.
pub struct TerminalApprover {
    /// Held while asking, so questions and streamed output do not interleave.
    pub console: Arc<Mutex<()>>,
}

/// An answer typed at the prompt: `o`, `s`, `a`, or `d` with an optional reason.
pub fn parse_answer(line: &str) -> ApprovalAnswer {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let decision = match word.to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => ApprovalDecision::AllowOnce,
        "s" | "session" => ApprovalDecision::AllowSession,
        "a" | "always" => ApprovalDecision::AllowAlways,
        _ => ApprovalDecision::Deny,
    };
    // Only an explicit deny carries a reason; an unclear answer is a plain deny.
    let explicit_deny = matches!(
        word.to_ascii_lowercase().as_str(),
        "d" | "deny" | "n" | "no"
    );
    let reason = (explicit_deny && !rest.trim().is_empty()).then(|| rest.trim().to_string());
    ApprovalAnswer {
        decision,
        reason,
        pattern: ArgPattern::default(),
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.answer(request).await.decision
    }

    async fn answer(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "  ✗ {} needs approval ({}), but stdin is not a terminal: denied",
                super::term::cell(&request.tool),
                super::term::cell(&request.reason)
            );
            return ApprovalAnswer {
                decision: ApprovalDecision::Deny,
                reason: Some("nobody could be asked (no terminal)".into()),
                pattern: ArgPattern::default(),
            };
        }
        let console = self.console.clone();
        let question = question(request);
        tokio::task::spawn_blocking(move || {
            let _guard = console.lock().unwrap_or_else(|e| e.into_inner());
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            match std::io::stdin().lock().read_line(&mut line) {
                Ok(n) if n > 0 => parse_answer(&line),
                _ => ApprovalDecision::Deny.into(),
            }
        })
        .await
        .unwrap_or_else(|_| ApprovalDecision::Deny.into())
    }
}

/// The approval question. It opens with `  ? toolhost approval:`, which a wrapped MCP
/// server's question at the same terminal cannot: those open with `  ? MCP server [NAME]`
/// and show the server's text only behind a gutter (`super::elicit`). Tool name, reason
/// and arguments are escaped onto one line each.
fn question(request: &ApprovalRequest) -> String {
    format!(
        "  ? {} run {} {}\n    ({})\n    allow [o]nce, for this [s]ession, [a]lways, or [d]eny (d REASON)? ",
        toolhost::mcp::attribution::APPROVAL_MARKER,
        super::term::cell(&request.tool),
        one_line(&request.arguments.to_string(), 200),
        one_line(&request.reason, 300),
    )
}

/// Denies, telling the operator how to approve ahead of time (`what` says why nobody can
/// be asked here).
pub struct NobodyToAsk {
    /// Why nobody can be asked, e.g. "`toolhost serve` cannot ask anyone".
    pub what: &'static str,
}

#[async_trait]
impl Approver for NobodyToAsk {
    async fn approve(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.answer(request).await.decision
    }

    async fn answer(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer {
            decision: ApprovalDecision::Deny,
            reason: Some(format!(
                "{}; the operator can approve it ahead with `toolhost approvals add {}`, or rate it in toolhost.toml",
                self.what, request.tool
            )),
            pattern: ArgPattern::default(),
        }
    }
}

/// `text` on one line (controls flattened, terminal escapes neutralised), cut to `max`
/// characters.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = super::term::cell(&flat).into_owned();
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_with_scope_and_reason() {
        assert_eq!(parse_answer("o\n").decision, ApprovalDecision::AllowOnce);
        assert_eq!(parse_answer(" S ").decision, ApprovalDecision::AllowSession);
        assert_eq!(
            parse_answer("always").decision,
            ApprovalDecision::AllowAlways
        );
        let d = parse_answer("d not on the production folder\n");
        assert_eq!(d.decision, ApprovalDecision::Deny);
        assert_eq!(d.reason.as_deref(), Some("not on the production folder"));
        // Anything unclear is a deny, without a reason.
        let x = parse_answer("maybe later");
        assert_eq!((x.decision, x.reason), (ApprovalDecision::Deny, None));
        assert_eq!(parse_answer("").decision, ApprovalDecision::Deny);
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }
}
