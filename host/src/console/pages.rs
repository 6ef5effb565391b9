//! The console's HTML (docs/console.md), written with `maud`, which escapes every
//! interpolated value: whatever a plugin, a server, a client or a model put in a name, a
//! description, an argument or an error is text on the page, never markup. No value from
//! outside is ever placed in a `href`, `src`, `style` or event attribute; links are built
//! from the console's own paths with their parameters percent-encoded. The pages load
//! one stylesheet and one script of the console's own (`/console/static/…`), and the
//! Content-Security-Policy refuses inline scripts and styles, so even markup that got
//! through would not run.

use maud::{DOCTYPE, Markup, html};

use super::audit_view::{Cursor, Filter, Page};
use super::live::Snapshot;
use crate::tools::audit::AuditRecord;

/// The console's pages, for the navigation bar.
const NAV: &[(&str, &str)] = &[
    ("/console/sources", "Sources"),
    ("/console/pending", "Pending"),
    ("/console/audit", "Audit"),
    ("/console/live", "Live"),
    ("/console/clients", "Clients"),
];

/// A page of the console: title, navigation (with `current` marked), the logout form
/// (with its CSRF nonce) and `body`.
pub fn layout(title: &str, current: &str, logout_nonce: Option<&str>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "toolhost · " (title) }
                link rel="stylesheet" href="/console/static/console.css";
                script src="/console/static/console.js" defer {}
            }
            body {
                header {
                    strong { "toolhost console" }
                    nav {
                        @for (href, name) in NAV {
                            @if *href == current {
                                a href=(href) aria-current="page" { (name) }
                            } @else {
                                a href=(href) { (name) }
                            }
                        }
                    }
                    @if let Some(n) = logout_nonce {
                        form method="post" action="/console/logout" class="logout" {
                            input type="hidden" name="csrf" value=(n);
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The login page, with a message (a wrong token, an expired session).
pub fn login(message: Option<&str>) -> Markup {
    layout(
        "Log in",
        "",
        None,
        html! {
            @if let Some(m) = message { p.error role="alert" { (m) } }
            form method="post" action="/console/login" {
                label for="token" { "Operator token" }
                input id="token" type="password" name="token" autocomplete="current-password" required;
                button type="submit" id="login" { "Log in" }
            }
        },
    )
}

/// A short text shown in place of a page (a done action, an error).
pub fn message(title: &str, current: &str, logout: &str, text: &str, back: &str) -> Markup {
    layout(
        title,
        current,
        Some(logout),
        html! { p.notice role="status" { (text) } p { a href=(back) { "Back" } } },
    )
}

/// One tool as the sources page lists it.
#[derive(Debug, Clone)]
pub struct ToolRow {
    /// Registered name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Declared permissions.
    pub permissions: Vec<String>,
    /// Its parameters' JSON Schema (for lint).
    pub parameters: serde_json::Value,
    /// The MCP App view it ships: its `ui://` URI and the page's digest (a plugin's
    /// `NAME.ui/TOOL.html`, pinned by the approval).
    pub view: Option<(String, String)>,
}

/// One source (plugin, native, MCP server) as the sources page lists it.
#[derive(Debug, Clone)]
pub struct SourceRow {
    /// `plugin`, `native` or `mcp`.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// Trust state (`approved`, `held: …`, …).
    pub state: String,
    /// Release version, if any.
    pub version: String,
    /// Signer key id, if any.
    pub signer: String,
    /// The grant in force, one line per capability.
    pub grant: Vec<String>,
    /// What the component imports (plugins only).
    pub imports: Vec<String>,
    /// Its tools.
    pub tools: Vec<ToolRow>,
    /// Lint findings: (severity, tool, message).
    pub findings: Vec<(String, String, String)>,
}

/// The sources page, filtered by `q` and `kind` (already applied to `rows`).
pub fn sources(logout: &str, rows: &[SourceRow], q: &str, kind: &str) -> Markup {
    let body = html! {
        form method="get" action="/console/sources" class="filter" {
            input type="search" name="q" value=(q) placeholder="name or description";
            select name="kind" {
                @for k in ["", "plugin", "native", "mcp"] {
                    option value=(k) selected[k == kind] { @if k.is_empty() { "any kind" } @else { (k) } }
                }
            }
            button type="submit" { "Filter" }
        }
        @if rows.is_empty() { p { "No source matches." } }
        @for s in rows {
            section.source data-kind=(s.kind) data-name=(s.name) {
                h2 { span.kind { (s.kind) } " " (s.name) }
                dl {
                    dt { "trust" } dd.state { (s.state) }
                    @if !s.version.is_empty() { dt { "version" } dd { (s.version) } }
                    @if !s.signer.is_empty() { dt { "signer" } dd { code { (s.signer) } } }
                    @if s.kind == "plugin" {
                        dt { "grant" }
                        dd { @if s.grant.is_empty() { "no capability" } @else { ul { @for g in &s.grant { li { code { (g) } } } } } }
                        dt { "imports" }
                        dd { @if s.imports.is_empty() { "—" } @else { ul.imports { @for i in &s.imports { li { code { (i) } } } } } }
                    }
                }
                table.tools {
                    thead { tr { th { "tool" } th { "permissions" } th { "description" } } }
                    tbody {
                        @for t in &s.tools {
                            tr {
                                td.name { code { (t.name) } }
                                td { (t.permissions.join(", ")) }
                                td.description {
                                    (t.description)
                                    @if let Some((uri, digest)) = &t.view {
                                        div.view { "view " code { (uri) } " " code.digest { (digest) } }
                                    }
                                }
                            }
                        }
                    }
                }
                @if !s.findings.is_empty() {
                    details.findings open {
                        summary { "lint: " (s.findings.len()) " finding(s)" }
                        ul { @for (sev, tool, msg) in &s.findings { li { span.(sev) { (sev) } " " code { (tool) } ": " (msg) } } }
                    }
                }
            }
        }
    };
    layout("Sources and tools", "/console/sources", Some(logout), body)
}

/// One pending plugin as the pending page shows it.
#[derive(Debug, Clone)]
pub struct PendingRow {
    /// Plugin name.
    pub name: String,
    /// Why it is pending (held, changed, unapproved, or why it cannot be reviewed).
    pub state: String,
    /// The digest reviewed (sent back with the decision).
    pub digest: String,
    /// The hash of the request reviewed (sent back with the decision).
    pub request_hash: String,
    /// The summary (request, tools), escaped text.
    pub summary: String,
    /// Version and signer against the approval.
    pub release: String,
    /// What changed since the approval.
    pub diff: String,
    /// Lint findings: (severity, tool, message).
    pub findings: Vec<(String, String, String)>,
    /// The request, one capability a line: (field key, line), for narrowing.
    pub request: Vec<(String, String)>,
    /// The release rule's refusal (approve only with "allow downgrade").
    pub refusal: Option<String>,
    /// The operator's earlier denial of this very file, if any.
    pub denied: Option<String>,
    /// CSRF nonces of its two forms.
    pub nonces: (String, String),
    /// Whether it could be reviewed at all (a file that does not load cannot be approved).
    pub reviewable: bool,
}

/// The pending page: the plugins, then `servers` (the MCP servers with tools withheld,
/// `any_server` when there is one).
pub fn pending(logout: &str, rows: &[PendingRow], servers: Markup, any_server: bool) -> Markup {
    let body = html! {
        @if rows.is_empty() && !any_server { p #nothing-pending { "Nothing is waiting for approval." } }
        @for p in rows {
            section.pending data-name=(p.name) {
                h2 { (p.name) }
                p.state { (p.state) }
                @if let Some(d) = &p.denied { p.notice { (d) } }
                @if p.reviewable {
                    pre.summary { (p.summary) }
                    pre.release { (p.release) }
                    @if !p.diff.is_empty() { h3 { "Changes since the approval" } pre.diff { (p.diff) } }
                    h3 { "Lint" }
                    @if p.findings.is_empty() { p { "no findings" } }
                    ul.findings { @for (sev, tool, msg) in &p.findings { li { span.(sev) { (sev) } " " code { (tool) } ": " (msg) } } }
                    form method="post" action="/console/pending/approve" class="approve" {
                        input type="hidden" name="csrf" value=(p.nonces.0);
                        input type="hidden" name="name" value=(p.name);
                        input type="hidden" name="digest" value=(p.digest);
                        input type="hidden" name="request" value=(p.request_hash);
                        @if !p.request.is_empty() {
                            fieldset {
                                legend { "Grant (untick to approve a narrower grant)" }
                                @for (key, line) in &p.request {
                                    label { input type="checkbox" name="keep" value=(key) checked; " " code { (line) } }
                                }
                            }
                        }
                        @if let Some(r) = &p.refusal {
                            p.error { (r) }
                            label { input type="checkbox" name="allow_downgrade" value="1"; " accept this release deliberately" }
                        }
                        button type="submit" class="approve" { "Approve" }
                    }
                    form method="post" action="/console/pending/deny" class="deny" {
                        input type="hidden" name="csrf" value=(p.nonces.1);
                        input type="hidden" name="name" value=(p.name);
                        input type="hidden" name="digest" value=(p.digest);
                        button type="submit" class="deny" { "Deny" }
                    }
                }
            }
        }
        (servers)
    };
    layout("Pending approval", "/console/pending", Some(logout), body)
}

/// `/console/audit?…` with the filter and a cursor, parameters percent-encoded.
fn audit_link(f: &Filter, from: Option<Cursor>) -> String {
    let mut q = url_encode_pairs(&[
        ("client", &f.client),
        ("tool", &f.tool),
        ("outcome", &f.outcome),
        ("since", &f.since),
        ("until", &f.until),
    ]);
    if let Some(c) = from {
        q.push_str("&from=");
        q.push_str(&c.to_param());
    }
    format!("/console/audit?{q}")
}

/// `k=v&…` of the non-empty pairs, each percent-encoded (everything but unreserved
/// characters), so a value cannot end the parameter or the attribute.
pub fn url_encode_pairs(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", percent(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn percent(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The audit page.
pub fn audit(logout: &str, f: &Filter, page: &Page, note: Option<&str>) -> Markup {
    let body = html! {
        form method="get" action="/console/audit" class="filter" {
            input name="client" value=(f.client) placeholder="client";
            input name="tool" value=(f.tool) placeholder="tool contains";
            select name="outcome" {
                @for o in ["", "ok", "error", "denied"] {
                    option value=(o) selected[o == f.outcome] { @if o.is_empty() { "any outcome" } @else { (o) } }
                }
            }
            input name="since" value=(f.since) placeholder="since 2026-12-07T03:00";
            input name="until" value=(f.until) placeholder="until";
            button type="submit" id="filter" { "Filter" }
        }
        @if let Some(n) = note { p.notice { (n) } }
        table.audit {
            thead { tr { th { "time" } th { "client" } th { "tool" } th { "outcome" } th { "ms" } th { "arguments" } } }
            tbody {
                @for (at, r) in &page.records {
                    tr.record {
                        td { a href={ "/console/audit/entry?at=" (at.to_param()) } { (r.ts) } }
                        td.client { (r.client.as_deref().unwrap_or("")) }
                        td.tool { code { (r.tool) } }
                        td.outcome { (outcome(r)) }
                        td { (format!("{:.1}", r.duration_ms)) }
                        td.arguments { code { (short(&r.arguments.to_string(), 200)) } }
                    }
                }
            }
        }
        @if page.records.is_empty() { p { "No record matches." } }
        @if let Some(next) = page.next { p { a #older href=(audit_link(f, Some(next))) { "Older records" } } }
    };
    layout("Audit trail", "/console/audit", Some(logout), body)
}

fn outcome(r: &AuditRecord) -> String {
    match (&r.denied_by, r.ok, &r.error_kind) {
        (Some(by), _, _) => format!("denied by {by}"),
        (None, true, _) => "ok".into(),
        (None, false, Some(k)) => k.clone(),
        (None, false, None) => "error".into(),
    }
}

/// `text` cut to `max` characters, with `…` when cut.
pub fn short(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// One audit record in full.
pub fn audit_entry(logout: &str, r: &AuditRecord) -> Markup {
    let full = serde_json::to_string_pretty(r).unwrap_or_default();
    let body = html! {
        dl {
            dt { "time" } dd { (r.ts) }
            dt { "client" } dd { (r.client.as_deref().unwrap_or("")) }
            dt { "session" } dd { (r.session) }
            dt { "tool" } dd { code { (r.tool) } }
            dt { "outcome" } dd { (outcome(r)) }
            @if let Some(e) = &r.error { dt { "error" } dd { (e) } }
        }
        h2 { "Permission decisions" }
        @if r.decisions.is_empty() { p { "none recorded" } }
        ol.decisions {
            @for d in &r.decisions {
                li { code { (d.by) } ": " (d.decision) @if let Some(why) = &d.reason { " (" (why) ")" } }
            }
        }
        h2 { "Record" }
        pre.record { (full) }
    };
    layout("Audit record", "/console/audit", Some(logout), body)
}

/// The live page: filled from the first snapshot, then by the event stream.
pub fn live(logout: &str, s: &Snapshot) -> Markup {
    let body = html! {
        p { "Calls per second over the last minute; updated every second." }
        svg #chart viewBox="0 0 600 120" width="600" height="120" role="img" aria-label="calls per second" {
            polyline #chart-line fill="none" stroke="currentColor" stroke-width="2" points=(chart_points(&s.per_second)) {}
        }
        p { "Calls since start: " span #total { (s.total) } }
        table #tools {
            thead { tr { th { "tool" } th { "calls" } th { "errors" } th { "denials" } th { "p50 ms" } th { "p95 ms" } th { "p99 ms" } } }
            tbody {
                @for t in &s.tools {
                    tr { td { code { (t.tool) } } td { (t.calls) } td { (t.errors) } td { (t.denials) }
                         td { (format!("{:.1}", t.p50_ms)) } td { (format!("{:.1}", t.p95_ms)) } td { (format!("{:.1}", t.p99_ms)) } }
                }
            }
        }
        h2 { "Recent calls" }
        table #recent {
            thead { tr { th { "#" } th { "tool" } th { "client" } th { "outcome" } th { "ms" } } }
            tbody {
                @for c in s.recent.iter().rev() {
                    tr { td { (c.seq) } td { code { (c.tool) } } td { (c.client) } td { (c.outcome) } td { (format!("{:.1}", c.ms)) } }
                }
            }
        }
    };
    layout("Live calls", "/console/live", Some(logout), body)
}

/// The SVG polyline points of per-second counts on a 600×120 chart.
pub fn chart_points(per_second: &[u64]) -> String {
    let max = per_second.iter().copied().max().unwrap_or(0).max(1) as f64;
    let step = 600.0 / (per_second.len().max(2) - 1) as f64;
    per_second
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "{:.1},{:.1}",
                i as f64 * step,
                118.0 - (*n as f64 / max) * 116.0
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One client line of the clients page.
#[derive(Debug, Clone)]
pub struct ClientRow {
    /// The client's label.
    pub client: String,
    /// Calls it made since start.
    pub calls: u64,
    /// Of which failed.
    pub errors: u64,
}

/// The clients page: the HTTP sessions, the configured clients and what each called.
pub fn clients(
    logout: &str,
    sessions: &[(String, String)],
    configured: &[(String, String)],
    rows: &[ClientRow],
) -> Markup {
    let body = html! {
        h2 { "MCP sessions" }
        dl { @for (k, v) in sessions { dt { (k) } dd { (v) } } }
        h2 { "Configured clients" }
        @if configured.is_empty() { p { "No [serve.clients] in the config: all callers are one tenant per token or address." } }
        table #configured { tbody { @for (name, share) in configured { tr { td { code { (name) } } td { (share) } } } } }
        h2 { "Calls by client" }
        table #by-client {
            thead { tr { th { "client" } th { "calls" } th { "errors" } } }
            tbody { @for r in rows { tr { td { code { (r.client) } } td { (r.calls) } td { (r.errors) } } } }
        }
    };
    layout("Clients", "/console/clients", Some(logout), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_everywhere_it_is_shown() {
        let row = SourceRow {
            kind: "mcp",
            name: "<img src=x onerror=alert(1)>".into(),
            state: "approved".into(),
            version: String::new(),
            signer: String::new(),
            grant: vec![],
            imports: vec![],
            tools: vec![ToolRow {
                name: "t\"><script>alert(1)</script>".into(),
                description: "<a href=\"javascript:alert(1)\" style=\"x:expression(1)\">x</a>"
                    .into(),
                permissions: vec![],
                parameters: serde_json::Value::Null,
                view: Some((
                    "ui://p/t.html\"><script>alert(2)</script>".into(),
                    "sha256:00".into(),
                )),
            }],
            findings: vec![],
        };
        let page = sources("n", &[row], "\"><script>", "").into_string();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(!page.contains("<img src=x"), "{page}");
        assert!(!page.contains("<a href=\"javascript"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!page.contains("<script>alert(2)"), "{page}");
        assert!(page.contains("view <code>ui://p/t.html"), "{page}");
        assert_eq!(
            url_encode_pairs(&[("tool", "a&b=\"c\" d"), ("x", "")]),
            "tool=a%26b%3D%22c%22%20d"
        );
    }
}
