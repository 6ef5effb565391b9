//! The console's sources and pending pages and its two actions, approve and deny
//! (docs/console.md, "Pages"): what each plugin, native source and wrapped server offers
//! under the trust model, and the review of each plugin not approved as it is, decided
//! through the one approval route of `toolhost approve` ([`crate::trust::review_plugin`]).

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::{Authed, Console, field, html, pages};
use crate::tools::ToolSource;
use crate::trust::TrustState;

/// Query of the sources page.
#[derive(Debug, Deserialize, Default)]
pub(super) struct SourcesQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    kind: String,
}

fn state_text(t: &crate::trust::PluginTrust) -> String {
    match &t.state {
        TrustState::Approved => "approved".into(),
        TrustState::Updated { .. } => "approved (update accepted)".into(),
        TrustState::Unapproved if t.loaded => "unapproved: runs with no capability".into(),
        TrustState::Unapproved => "unapproved: not loaded".into(),
        TrustState::Changed { withheld } => format!("changed: withheld {}", withheld.join(", ")),
        TrustState::Held { reason, .. } => format!("held: {reason}"),
    }
}

/// A second opinion on tool definitions: the operator's judge model (`[lint] judge`),
/// asked on the pending page as `toolhost approve` asks it. Its findings inform the
/// decision and block nothing; what it says is untrusted text, shown escaped.
pub trait DefinitionJudge: Send + Sync {
    /// Findings on `subjects` (`judge-flagged`, or `judge-failed` where it gave no usable
    /// verdict), within the judge's own token budget and deadline for the whole call.
    fn judge<'a>(
        &'a self,
        subjects: &'a [toolhost_lint::Subject],
    ) -> futures::future::BoxFuture<'a, Vec<toolhost_lint::Finding>>;
}

/// The longest the pending page waits for the judge: a judge that is slow or silent
/// costs the page its verdicts (`judge-failed`), never the page. Verdicts given before
/// then are cached, so the next view asks only for the rest.
pub const JUDGE_PAGE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// The judge's findings on every source of the pending page, asked in one call (so one
/// page view spends at most one token budget), within [`JUDGE_PAGE_DEADLINE`].
async fn judged(
    judge: Option<&dyn DefinitionJudge>,
    subjects: &[toolhost_lint::Subject],
) -> Vec<toolhost_lint::Finding> {
    let Some(j) = judge.filter(|_| !subjects.is_empty()) else {
        return Vec::new();
    };
    match tokio::time::timeout(JUDGE_PAGE_DEADLINE, j.judge(subjects)).await {
        Ok(findings) => findings,
        Err(_) => subjects
            .iter()
            .map(|s| {
                toolhost_lint::Finding::new(
                    toolhost_lint::Rule::JudgeFailed,
                    s,
                    "",
                    format!(
                        "the judge did not answer within {} s; reload the page to ask again",
                        JUDGE_PAGE_DEADLINE.as_secs()
                    ),
                )
            })
            .collect(),
    }
}

/// `findings` with those of `judged` about `source` added, sorted, as the pages show
/// them: (severity, tool, message).
pub(super) fn with_judged(
    mut findings: Vec<toolhost_lint::Finding>,
    judged: &[toolhost_lint::Finding],
    source: &str,
) -> Vec<(String, String, String)> {
    findings.extend(judged.iter().filter(|f| f.source == source).cloned());
    toolhost_lint::sort(&mut findings);
    findings
        .into_iter()
        .map(|f| (f.severity.as_str().to_string(), f.tool, f.message))
        .collect()
}

fn findings_of(source: &str, tools: &[pages::ToolRow]) -> Vec<(String, String, String)> {
    let subjects: Vec<toolhost_lint::Subject> = tools
        .iter()
        .map(|t| {
            toolhost_lint::Subject::shown(
                source,
                crate::tools::shown::ShownTool::new(
                    t.name.clone(),
                    t.description.clone(),
                    t.parameters.clone(),
                    t.permissions.clone(),
                ),
            )
        })
        .collect();
    findings_in(&subjects)
}

/// Lint's findings on `subjects`, sorted, as the pages show them: (severity, tool,
/// message).
fn findings_in(subjects: &[toolhost_lint::Subject]) -> Vec<(String, String, String)> {
    with_judged(toolhost_lint::lint(subjects), &[], "")
}

pub(super) async fn sources(
    State(c): State<Console>,
    a: Authed,
    Query(q): Query<SourcesQuery>,
) -> Response {
    let opts = &c.0.opts;
    let lock = toolhost_trust::Lock::load(&toolhost_trust::Lock::path_in(&opts.plugins_dir))
        .unwrap_or_default();
    let entries = opts.registry.entries();
    let row_tool = |e: &crate::tools::ToolEntry| pages::ToolRow {
        name: e.name().to_string(),
        description: e.description().to_string(),
        permissions: e
            .permissions()
            .iter()
            .map(|p| p.as_str().to_string())
            .collect(),
        parameters: e.parameters().clone(),
        view: e
            .metadata()
            .view
            .as_ref()
            .map(|v| (v.uri.clone(), v.digest.clone())),
    };
    let mut rows = Vec::new();
    for (t, plugin) in opts.board.snapshot() {
        let path = t.path.display().to_string();
        let tools: Vec<pages::ToolRow> = entries
            .iter()
            .filter(|e| matches!(e.source(), ToolSource::Wasm { path: p } if *p == path))
            .map(|e| row_tool(e))
            .collect();
        let entry = lock.plugins.get(&t.name);
        rows.push(pages::SourceRow {
            kind: "plugin",
            name: t.name.clone(),
            state: state_text(&t),
            version: t
                .version
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            signer: entry.and_then(|e| e.signer.clone()).unwrap_or_default(),
            grant: t.effective.as_ref().map(|g| g.lines()).unwrap_or_default(),
            imports: plugin
                .as_ref()
                .and_then(|p| p.imports().ok().map(<[String]>::to_vec))
                .unwrap_or_default(),
            findings: findings_of(&format!("plugin:{}", t.name), &tools),
            tools,
        });
    }
    let native: Vec<pages::ToolRow> = entries
        .iter()
        .filter(|e| matches!(e.source(), ToolSource::Native))
        .map(|e| row_tool(e))
        .collect();
    if !native.is_empty() {
        rows.push(pages::SourceRow {
            kind: "native",
            name: "built in".into(),
            state: "trusted (compiled into toolhost)".into(),
            version: String::new(),
            signer: String::new(),
            grant: Vec::new(),
            imports: Vec::new(),
            findings: Vec::new(),
            tools: native,
        });
    }
    let mut servers: std::collections::BTreeMap<String, Vec<pages::ToolRow>> = Default::default();
    for e in &entries {
        if let ToolSource::Mcp { server } = e.source() {
            servers.entry(server.clone()).or_default().push(row_tool(e));
        }
    }
    for (server, tools) in servers {
        let pinned = lock.mcp.contains_key(&server);
        rows.push(pages::SourceRow {
            kind: "mcp",
            findings: findings_of(&format!("mcp:{server}"), &tools),
            name: server,
            state: if pinned {
                "pinned (tool definitions approved)"
            } else {
                "not pinned"
            }
            .into(),
            version: String::new(),
            signer: String::new(),
            grant: Vec::new(),
            imports: Vec::new(),
            tools,
        });
    }
    let needle = q.q.to_lowercase();
    rows.retain(|r| q.kind.is_empty() || r.kind == q.kind);
    if !needle.is_empty() {
        rows.retain(|r| {
            r.name.to_lowercase().contains(&needle)
                || r.tools.iter().any(|t| {
                    t.name.to_lowercase().contains(&needle)
                        || t.description.to_lowercase().contains(&needle)
                })
        });
    }
    html(
        StatusCode::OK,
        pages::sources(&a.logout, &rows, &q.q, &q.kind),
    )
}

/// Most plugins reviewed for one view of the pending page.
pub const MAX_PENDING_SHOWN: usize = 20;

fn request_hash(request: &toolhost_trust::Capabilities) -> String {
    toolhost_trust::canon::sha256(
        serde_json::to_string(request)
            .unwrap_or_default()
            .as_bytes(),
    )
}

/// The request's capabilities one a line, each with its form key.
fn request_items(r: &toolhost_trust::Capabilities) -> Vec<(String, String)> {
    let mut out = Vec::new();
    out.extend(
        r.read
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("read:{i}"), format!("read {f}"))),
    );
    out.extend(
        r.write
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("write:{i}"), format!("write {f}"))),
    );
    out.extend(
        r.network
            .iter()
            .enumerate()
            .map(|(i, n)| (format!("network:{i}"), format!("network {n}"))),
    );
    if r.sockets {
        out.push(("sockets".into(), "sockets".into()));
    }
    out.extend(
        r.env
            .iter()
            .enumerate()
            .map(|(i, e)| (format!("env:{i}"), format!("env {e}"))),
    );
    out.extend(
        r.config
            .iter()
            .enumerate()
            .map(|(i, k)| (format!("config:{i}"), format!("config {k}"))),
    );
    out
}

/// The request with only the items whose keys are in `keep`.
fn narrowed(r: &toolhost_trust::Capabilities, keep: &[&str]) -> toolhost_trust::Capabilities {
    fn pick<T: Clone>(keep: &[&str], kind: &str, v: &[T]) -> Vec<T> {
        v.iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(&format!("{kind}:{i}").as_str()))
            .map(|(_, x)| x.clone())
            .collect()
    }
    let mut g = r.clone();
    g.read = pick(keep, "read", &r.read);
    g.write = pick(keep, "write", &r.write);
    g.network = pick(keep, "network", &r.network);
    g.env = pick(keep, "env", &r.env);
    g.config = pick(keep, "config", &r.config);
    g.sockets = r.sockets && keep.contains(&"sockets");
    g
}

pub(super) async fn pending(State(c): State<Console>, a: Authed) -> Response {
    let opts = &c.0.opts;
    let waiting: Vec<_> = opts
        .board
        .snapshot()
        .into_iter()
        .filter(|(t, _)| !matches!(t.state, TrustState::Approved | TrustState::Updated { .. }))
        .take(MAX_PENDING_SHOWN)
        .collect();
    let mut rows = Vec::new();
    // Each reviewed plugin's lint findings and subjects, for the judge's one call below.
    let mut reviewed: Vec<(usize, Vec<toolhost_lint::Finding>)> = Vec::new();
    let mut subjects: Vec<toolhost_lint::Subject> = Vec::new();
    for (t, _) in waiting {
        let nonces = match (c.nonce(&a.session), c.nonce(&a.session)) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(r), _) | (_, Err(r)) => return *r,
        };
        let mut row = pages::PendingRow {
            name: t.name.clone(),
            state: state_text(&t),
            digest: String::new(),
            request_hash: String::new(),
            summary: String::new(),
            release: String::new(),
            diff: String::new(),
            findings: Vec::new(),
            request: Vec::new(),
            refusal: None,
            denied: None,
            nonces,
            reviewable: false,
        };
        match crate::trust::review_plugin(&opts.host, &opts.plugins_dir, &opts.trust_keys, &t.name)
            .await
        {
            Ok(r) if r.already_approved() => continue,
            Ok(r) => {
                row.digest.clone_from(&r.candidate.digest);
                row.request_hash = request_hash(&r.candidate.request);
                row.summary = r.candidate.summary();
                row.release.clone_from(&r.release.text);
                row.diff = r.diff.as_ref().map(ToString::to_string).unwrap_or_default();
                let source = format!("plugin:{}", t.name);
                subjects.extend(
                    r.candidate
                        .tools
                        .iter()
                        .map(|d| toolhost_lint::Subject::shown(&source, d.clone())),
                );
                reviewed.push((rows.len(), r.findings.clone()));
                row.request = request_items(&r.candidate.request);
                row.refusal.clone_from(&r.release.refusal);
                row.denied =
                    c.0.denied
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .iter()
                        .find(|(n, d, _)| *n == t.name && *d == r.candidate.digest)
                        .map(|(_, _, why)| why.clone());
                row.reviewable = true;
            }
            Err(e) => row.state = format!("{}; cannot be reviewed: {e}", row.state),
        }
        rows.push(row);
    }
    let held = super::servers::held(&c);
    subjects.extend(held.iter().flat_map(super::servers::subjects));
    let judged = judged(opts.judge.as_deref(), &subjects).await;
    for (i, findings) in reviewed {
        if let Some(row) = rows.get_mut(i) {
            let source = format!("plugin:{}", row.name);
            row.findings = with_judged(findings, &judged, &source);
        }
    }
    let (servers, any_server) = match super::servers::section(&c, &a, &held, &judged) {
        Ok(s) => s,
        Err(r) => return *r,
    };
    html(
        StatusCode::OK,
        pages::pending(&a.logout, &rows, servers, any_server),
    )
}

pub(super) async fn approve(super::Post { c, s, form }: super::Post) -> Response {
    let opts = &c.0.opts;
    let name = field(&form, "name").unwrap_or("");
    let digest = field(&form, "digest").unwrap_or("");
    let keep: Vec<&str> = form
        .iter()
        .filter(|(k, _)| k == "keep")
        .map(|(_, v)| v.as_str())
        .collect();
    let allow_downgrade = field(&form, "allow_downgrade") == Some("1");
    let args = serde_json::json!({
        "plugin": name, "digest": digest, "keep": keep, "allow_downgrade": allow_downgrade,
    });
    let fail = |status: StatusCode, why: String| {
        c.record(
            &s,
            "console.approve",
            args.clone(),
            false,
            Some(why.clone()),
        );
        html(
            status,
            pages::message(
                "Not approved",
                "/console/pending",
                &c.nonce(&s).unwrap_or_default(),
                &why,
                "/console/pending",
            ),
        )
    };
    let review =
        match crate::trust::review_plugin(&opts.host, &opts.plugins_dir, &opts.trust_keys, name)
            .await
        {
            Ok(r) => r,
            Err(e) => return fail(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        };
    if review.candidate.digest != digest
        || request_hash(&review.candidate.request) != field(&form, "request").unwrap_or("")
    {
        return fail(
            StatusCode::CONFLICT,
            format!(
                "{name} changed since the page was shown (component or request); review it again"
            ),
        );
    }
    let request = &review.candidate.request;
    match opts
        .permissions
        .denied_folders(&request.read, &request.write)
    {
        Ok(refused) if refused.is_empty() => {}
        Ok(refused) => {
            return fail(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "the request names folders that may never be granted: {}",
                    refused.join("; ")
                ),
            );
        }
        Err(e) => return fail(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
    }
    let all = request_items(request).len();
    let grant = (keep.len() < all).then(|| narrowed(request, &keep));
    match review.approve(&opts.plugins_dir, grant, allow_downgrade) {
        Ok(lock) => {
            c.record(&s, "console.approve", args, true, None);
            tracing::info!(plugin = %toolhost_trust::clean(name), session = %s.label, "console: plugin approved");
            let when = match &opts.reloads {
                Some(reloads) => {
                    reloads.plugin(name);
                    "It applies within a second."
                }
                None => "It applies at the next start of this serve.",
            };
            let text = format!(
                "Approved {name}{} in {}. {when}",
                if keep.len() < all {
                    " with a narrower grant"
                } else {
                    ""
                },
                lock.display()
            );
            html(
                StatusCode::OK,
                pages::message(
                    "Approved",
                    "/console/pending",
                    &c.nonce(&s).unwrap_or_default(),
                    &text,
                    "/console/sources",
                ),
            )
        }
        Err(e) => fail(StatusCode::CONFLICT, e.to_string()),
    }
}

pub(super) async fn deny(super::Post { c, s, form }: super::Post) -> Response {
    let name = field(&form, "name").unwrap_or("").to_string();
    let digest = field(&form, "digest").unwrap_or("").to_string();
    if !c
        .0
        .opts
        .board
        .snapshot()
        .iter()
        .any(|(t, _)| t.name == name)
    {
        return (StatusCode::NOT_FOUND, "no such plugin\n").into_response();
    }
    c.record(
        &s,
        "console.deny",
        serde_json::json!({"plugin": name, "digest": digest}),
        true,
        None,
    );
    c.remember_denial(&name, digest, &s, "it stays unapproved");
    tracing::info!(plugin = %toolhost_trust::clean(&name), session = %s.label, "console: plugin denied");
    let text = format!(
        "Denied {name}: it stays as it is (not approved). The decision is in the audit trail."
    );
    html(
        StatusCode::OK,
        pages::message(
            "Denied",
            "/console/pending",
            &c.nonce(&s).unwrap_or_default(),
            &text,
            "/console/pending",
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrower_grant_keeps_only_the_ticked_items_and_is_within_the_request() {
        let r = toolhost_trust::Capabilities {
            read: vec![
                toolhost_trust::Folder::from(std::path::Path::new("/a")),
                toolhost_trust::Folder::from(std::path::Path::new("/b")),
            ],
            env: vec!["HOME".into()],
            ..Default::default()
        };
        let items = request_items(&r);
        assert_eq!(items.len(), 3);
        let g = narrowed(&r, &["read:1"]);
        assert_eq!(g.read.len(), 1);
        assert!(g.env.is_empty());
        assert!(g.within(&r));
    }
}
