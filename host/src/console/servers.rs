//! The console's review of wrapped MCP servers whose tools are withheld (their definitions
//! changed since approval, or were never approved under `require_approval = "all"`): their
//! part of the pending page, and two actions. Approve pins the tools as the server lists
//! them now (the same approval as `toolhost approve mcp:SERVER`), and the running `serve`
//! offers them at once. Deny records the decision; the tools stay withheld.
//!
//! Everything shown came from the server (names, descriptions, schemas), so it is text
//! in maud's escaped markup; a decision names the digest of the definitions shown, and
//! definitions that changed since get 409 with nothing written.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::{Authed, Console, field, html as page, pages};
use crate::trust::HeldServer;

/// Most servers reviewed for one view of the pending page.
const MAX_SHOWN: usize = 20;

/// Why each withheld tool is withheld, as text.
fn withheld_text(h: &HeldServer) -> String {
    let each: Vec<String> = h
        .withheld
        .iter()
        .map(|(tool, state)| {
            let why = match state {
                toolhost_trust::McpToolState::Changed => "changed since approval",
                toolhost_trust::McpToolState::Unapproved => "never approved",
                toolhost_trust::McpToolState::Offered => "offered",
            };
            format!("{} ({why})", toolhost_trust::clean(tool))
        })
        .collect();
    format!("withheld: {}", each.join(", "))
}

/// The lint subjects of the server's definitions as it lists them now.
pub(super) fn subjects(h: &HeldServer) -> Vec<toolhost_lint::Subject> {
    let source = format!("mcp:{}", h.server);
    h.defs
        .iter()
        .map(|d| toolhost_lint::Subject::shown(&source, d.clone()))
        .collect()
}

/// The servers with tools withheld, as many as the pending page shows.
pub(super) fn held(c: &Console) -> Vec<HeldServer> {
    match &c.0.opts.mcp {
        Some(board) => board.held().into_iter().take(MAX_SHOWN).collect(),
        None => Vec::new(),
    }
}

/// The pending page's part for the servers `held`, with lint's and the judge's findings
/// (`judged`, of every source of the page), and whether there is any; a failed nonce is
/// the error response.
pub(super) fn section(
    c: &Console,
    a: &Authed,
    held: &[HeldServer],
    judged: &[toolhost_lint::Finding],
) -> Result<(Markup, bool), Box<Response>> {
    let mut parts = Vec::with_capacity(held.len());
    for h in held {
        let nonces = match (c.nonce(&a.session), c.nonce(&a.session)) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(r), _) | (_, Err(r)) => return Err(r),
        };
        let name = format!("mcp:{}", h.server);
        let denied =
            c.0.denied
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .find(|(n, d, _)| *n == name && *d == h.digest)
                .map(|(_, _, why)| why.clone());
        let findings = super::review::with_judged(
            toolhost_lint::lint(&subjects(h)),
            judged,
            &format!("mcp:{}", h.server),
        );
        parts.push(html! {
            section.pending.server data-name=(name) {
                h2 { (name) }
                p.state { (withheld_text(h)) }
                @if let Some(d) = &denied { p.notice { (d) } }
                h3 { "Tools as the server lists them now" }
                ul.tools { @for d in &h.defs { li { code { (d.name) } ": " (d.description) } } }
                @if let Some(diff) = h.diff.as_ref().filter(|d| !d.is_empty()) {
                    h3 { "Changes since the approval" } pre.diff { (diff) }
                }
                h3 { "Lint" }
                @if findings.is_empty() { p { "no findings" } }
                ul.findings { @for (sev, tool, msg) in &findings { li { span.(sev) { (sev) } " " code { (tool) } ": " (msg) } } }
                form method="post" action="/console/pending/approve-server" class="approve" {
                    input type="hidden" name="csrf" value=(nonces.0);
                    input type="hidden" name="server" value=(h.server);
                    input type="hidden" name="digest" value=(h.digest);
                    input type="hidden" name="choose" value="1";
                    h3 { "Approve these withheld tools" }
                    ul.grant {
                        @for (tool, _) in &h.withheld {
                            li { label { input type="checkbox" name="tool" value=(tool) checked; " " code { (tool) } } }
                        }
                    }
                    button type="submit" class="approve" { "Approve its tools" }
                }
                form method="post" action="/console/pending/deny-server" class="deny" {
                    input type="hidden" name="csrf" value=(nonces.1);
                    input type="hidden" name="server" value=(h.server);
                    input type="hidden" name="digest" value=(h.digest);
                    button type="submit" class="deny" { "Deny" }
                }
            }
        });
    }
    let any = !parts.is_empty();
    Ok((html! { @for p in parts { (p) } }, any))
}

/// A page saying `text`, after an action.
fn said(
    c: &Console,
    s: &super::auth::SessionView,
    status: StatusCode,
    title: &str,
    text: &str,
) -> Response {
    page(
        status,
        pages::message(
            title,
            "/console/pending",
            &c.nonce(s).unwrap_or_default(),
            text,
            "/console/pending",
        ),
    )
}

/// Approves the tools of the form's `server` as they were shown (`digest`): those ticked
/// of the withheld ones when the form offers a choice (`choose`), else all.
pub(super) async fn approve(super::Post { c, s, form }: super::Post) -> Response {
    let server = field(&form, "server").unwrap_or("").to_string();
    let digest = field(&form, "digest").unwrap_or("").to_string();
    let only: Option<Vec<String>> = field(&form, "choose").is_some().then(|| {
        form.iter()
            .filter(|(k, _)| k == "tool")
            .map(|(_, v)| v.clone())
            .collect()
    });
    let args = serde_json::json!({"server": server, "digest": digest, "tools": only});
    let Some(board) = c.0.opts.mcp.clone() else {
        return (StatusCode::NOT_FOUND, "no MCP servers on this serve\n").into_response();
    };
    match board.approve(&server, &digest, only.as_deref()) {
        Ok(tools) => {
            c.record(&s, "console.approve", args, true, None);
            tracing::info!(server = %toolhost_trust::clean(&server), session = %s.label, "console: MCP server's tools approved");
            let still: Vec<String> = board
                .held()
                .into_iter()
                .filter(|h| h.server == server)
                .flat_map(|h| h.withheld.into_iter().map(|(t, _)| t))
                .collect();
            let text = format!(
                "Approved the tools of mcp:{server} ({}): the lock pins them, and serve offers them now.{}",
                tools.join(", "),
                if still.is_empty() {
                    String::new()
                } else {
                    format!(" Still withheld: {}.", still.join(", "))
                }
            );
            said(&c, &s, StatusCode::OK, "Approved", &text)
        }
        Err(e) => {
            let status = match e {
                crate::trust::McpApproveError::Unknown(_) => StatusCode::NOT_FOUND,
                crate::trust::McpApproveError::Changed(_)
                | crate::trust::McpApproveError::NotWithheld(..) => StatusCode::CONFLICT,
                crate::trust::McpApproveError::NoneChosen(_) => StatusCode::UNPROCESSABLE_ENTITY,
                crate::trust::McpApproveError::NotListed(_) => StatusCode::SERVICE_UNAVAILABLE,
                crate::trust::McpApproveError::Write(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            c.record(&s, "console.approve", args, false, Some(e.to_string()));
            said(&c, &s, status, "Not approved", &e.to_string())
        }
    }
}

/// Denies the tools of the form's `server` as shown: recorded, and they stay withheld.
pub(super) async fn deny(super::Post { c, s, form }: super::Post) -> Response {
    let server = field(&form, "server").unwrap_or("").to_string();
    let digest = field(&form, "digest").unwrap_or("").to_string();
    let known =
        c.0.opts
            .mcp
            .as_ref()
            .is_some_and(|b| b.held().iter().any(|h| h.server == server));
    if !known {
        return (
            StatusCode::NOT_FOUND,
            "no such server with tools withheld\n",
        )
            .into_response();
    }
    c.record(
        &s,
        "console.deny",
        serde_json::json!({"server": server, "digest": digest}),
        true,
        None,
    );
    c.remember_denial(
        &format!("mcp:{server}"),
        digest,
        &s,
        "its tools stay withheld",
    );
    tracing::info!(server = %toolhost_trust::clean(&server), session = %s.label, "console: MCP server's tools denied");
    let text = format!(
        "Denied mcp:{server}: its tools stay withheld. The decision is in the audit trail."
    );
    said(&c, &s, StatusCode::OK, "Denied", &text)
}
