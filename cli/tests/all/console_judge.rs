//! The operator's judge model on the console's pending page (`[lint] judge = true`), as
//! `toolhost approve` asks it: a scripted judge on 127.0.0.1 (only its choices are
//! scripted) flags the hostile component's definitions with a reason full of markup; the
//! page shows the verdict beside lint's findings, as text; one page view is one judge call,
//! and a second view is answered from the cache; the benign plugin is then approved.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::Ordering;

use super::console::{Work, form, form_field, get, login, post};

/// The scripted judge's choice: an injection where a definition sets `__pwned`, with a
/// reason that is itself markup; else benign.
fn judging(defs: &[(usize, String)]) -> Option<String> {
    let verdicts: Vec<serde_json::Value> = defs
        .iter()
        .map(|(id, d)| {
            let bad = d.contains("__pwned");
            serde_json::json!({"id": id, "verdict": if bad { "injection" } else { "benign" },
                "reason": if bad { "JUDGE-MARK <script>window.__pwned='judge'</script>" } else { "describes the tool" }})
        })
        .collect();
    Some(serde_json::json!({ "verdicts": verdicts }).to_string())
}

/// The pending section of source `name` on `page`.
fn section<'a>(page: &'a str, name: &str) -> &'a str {
    page.split("<section class=\"pending")
        .find(|s| s.contains(&format!("data-name=\"{name}\"")))
        .unwrap_or_else(|| panic!("no pending section of {name} in:\n{page}"))
}

/// The console's set-up with `[lint] judge = true` and a scripted judge answering with
/// `answer`: the work, the running serve, the admin address and the judge's request count.
fn judged_console(
    answer: super::lint::JudgeAnswer,
) -> (
    Work,
    toolhost_testkit::serve::ServeHttp,
    String,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    let (url, asked) = super::lint::scripted_judge(answer);
    let work = Work::new();
    work.configure("[lint]\njudge = true\n");
    let (serve, admin) = work.serve_with(
        &[],
        &[
            ("TOOLHOST_LLM_BASE_URL", url.as_str()),
            ("TOOLHOST_LLM_MODEL", "judge"),
            ("TOOLHOST_LLM_PROVIDER", "openai"),
        ],
    );
    (work, serve, admin, asked)
}

/// Approves `calc` with its folder, from the form of the pending page `page`.
fn approve_calc(admin: &str, cookie: &str, page: &str) -> toolhost_testkit::http::Response {
    let field = |name: &str| form_field(page, "calc", "/console/pending/approve", name);
    post(
        admin,
        "/console/pending/approve",
        Some(cookie),
        &[("Origin", &format!("http://{admin}"))],
        &form(&[
            ("csrf", &field("csrf")),
            ("name", "calc"),
            ("digest", &field("digest")),
            ("request", &field("request")),
            ("keep", "read:0"),
        ]),
    )
}

#[test]
fn the_judge_is_asked_on_the_pending_page_and_its_answer_is_text() {
    let (work, serve, admin, asked) = judged_console(judging);
    let cookie = login(&admin, &work.token);
    assert_eq!(asked.load(Ordering::SeqCst), 0, "asked before any page");

    let page = get(&admin, "/console/pending", Some(&cookie)).body;
    let calls = asked.load(Ordering::SeqCst);
    assert_eq!(
        calls,
        1,
        "one page view, one judge call:\n{}",
        serve.stderr()
    );
    let hostile = section(&page, "hostile_html");
    assert!(
        hostile.contains("the judge (judge) rates it an attempt to steer the model: JUDGE-MARK"),
        "{hostile}"
    );
    assert!(
        hostile.contains("JUDGE-MARK &lt;script&gt;"),
        "the judge's markup is not escaped: {hostile}"
    );
    assert!(!page.contains("<script>window.__pwned='judge'"), "{page}");
    let calc = section(&page, "calc");
    assert!(!calc.contains("the judge (judge)"), "{calc}");

    // Verdicts are cached: the next view asks nothing.
    let again = get(&admin, "/console/pending", Some(&cookie)).body;
    assert!(again.contains("JUDGE-MARK"));
    assert_eq!(asked.load(Ordering::SeqCst), calls);

    // The judge informs and blocks nothing: the benign plugin is approved.
    let r = approve_calc(&admin, &cookie, &again);
    assert_eq!(r.status, 200, "{}", r.body);
}

/// A judge that never answers costs the page its verdicts, not the page: after
/// `JUDGE_PAGE_DEADLINE` the pending page is served with `judge-failed` findings, and the
/// plugin is then approved.
#[test]
fn a_silent_judge_does_not_hold_the_pending_page() {
    let (work, _serve, admin, asked) = judged_console(|_| None);
    let cookie = login(&admin, &work.token);
    let r = get(&admin, "/console/pending", Some(&cookie));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(asked.load(Ordering::SeqCst) >= 1);
    let calc = section(&r.body, "calc");
    assert!(
        calc.contains("the judge did not answer within 20 s"),
        "{calc}"
    );
    let approved = approve_calc(&admin, &cookie, &r.body);
    assert_eq!(approved.status, 200, "{}", approved.body);
}
