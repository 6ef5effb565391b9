//! Part of a wrapped MCP server's withheld tools approved from the console, against
//! server-everything (a server nobody here wrote) under `require_approval = "all"`: the
//! ticked tool is pinned and offered at once, the others stay withheld and listed as
//! pending; a choice of nothing, or of a tool the server does not withhold (markup
//! included), is refused and writes nothing; the approved tool is then called.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use super::console::{Work, form, get, login, post, server_field, tool_names};

/// The values of the `tool` checkboxes of server `server`'s approval form on `page`.
fn offered_choices(page: &str, server: &str) -> Vec<String> {
    let Some(section) = page
        .split("<section class=\"pending server\"")
        .find(|s| s.contains(&format!("data-name=\"mcp:{server}\"")))
    else {
        return Vec::new();
    };
    section
        .split("name=\"tool\" value=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(str::to_string)
        .collect()
}

/// The tools the lock's text `lock` pins for MCP server `server`.
fn pinned_tools<'a>(lock: &'a str, server: &str) -> Vec<&'a str> {
    let table = format!("[mcp.{server}.tools]");
    lock.split_once(table.as_str())
        .map_or("", |(_, r)| r)
        .lines()
        .take_while(|l| !l.starts_with('['))
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim_matches('"')))
        .collect()
}

/// The console's set-up with server-everything wrapped under `require_approval = "all"`
/// (`None`: the peer is missing, which fails in CI).
fn everything_unapproved() -> Option<Work> {
    let everything = toolhost_testkit::peers::everything()?;
    let work = Work::new();
    work.configure(&format!(
        "[trust]\nrequire_approval = \"all\"\n\
         [mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
         default_risk = \"read-only\"\n",
        everything.display().to_string()
    ));
    Some(work)
}

#[test]
fn part_of_a_servers_withheld_tools_is_approved_and_the_rest_stay_withheld() {
    let Some(work) = everything_unapproved() else {
        return;
    };
    let (serve, admin) = work.serve(&[]);
    let addr = serve.addr();
    let cookie = login(&admin, &work.token);
    let origin = format!("http://{admin}");
    let act = |body: &str| {
        post(
            &admin,
            "/console/pending/approve-server",
            Some(&cookie),
            &[("Origin", &origin)],
            body,
        )
    };
    let page = get(&admin, "/console/pending", Some(&cookie)).body;
    let withheld = offered_choices(&page, "everything");
    assert!(
        withheld.len() >= 3 && withheld.contains(&"echo".to_string()),
        "{page}"
    );
    assert!(!tool_names(&addr).contains(&"echo".to_string()));
    let digest = server_field(
        &page,
        "everything",
        "/console/pending/approve-server",
        "digest",
    );
    let with = |page: &str, tools: &[&str]| {
        let nonce = server_field(
            page,
            "everything",
            "/console/pending/approve-server",
            "csrf",
        );
        let mut pairs = vec![
            ("csrf", nonce.as_str()),
            ("server", "everything"),
            ("digest", digest.as_str()),
            ("choose", "1"),
        ];
        pairs.extend(tools.iter().map(|t| ("tool", *t)));
        form(&pairs)
    };

    // Nothing ticked: refused, nothing written.
    let r = act(&with(&page, &[]));
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(!work.lock().contains("[mcp.everything]"), "{}", work.lock());
    // A tool the server does not withhold, in markup: refused, shown as text.
    let page = get(&admin, "/console/pending", Some(&cookie)).body;
    let r = act(&with(&page, &["echo", "<img src=x onerror=alert(1)>"]));
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("&lt;img src=x"), "{}", r.body);
    assert!(!r.body.contains("<img src=x"), "{}", r.body);
    assert!(!work.lock().contains("[mcp.everything]"), "{}", work.lock());

    // Only echo: pinned alone, offered at once; the rest stay withheld and pending.
    let page = get(&admin, "/console/pending", Some(&cookie)).body;
    let r = act(&with(&page, &["echo"]));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Still withheld:"), "{}", r.body);
    let lock = work.lock();
    assert_eq!(pinned_tools(&lock, "everything"), ["echo"], "{lock}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !tool_names(&addr).contains(&"echo".to_string()) {
        assert!(std::time::Instant::now() < deadline, "{}", serve.stderr());
        std::thread::sleep(Duration::from_millis(100));
    }
    let names = tool_names(&addr);
    let rest: Vec<&String> = withheld.iter().filter(|t| *t != "echo").collect();
    assert!(rest.iter().all(|t| !names.contains(t)), "{names:?}");
    let page = get(&admin, "/console/pending", Some(&cookie)).body;
    let still = offered_choices(&page, "everything");
    assert_eq!(still.len(), rest.len(), "{page}");
    assert!(!still.contains(&"echo".to_string()), "{page}");

    // The approved tool is called.
    let r = toolhost_testkit::http::mcp_2026(
        &addr,
        "tools/call",
        Some("echo"),
        serde_json::json!({"name": "echo", "arguments": {"message": "partly approved"}}),
        serde_json::json!({}),
    )
    .unwrap();
    let m = toolhost_testkit::http::rpc_message(&r).unwrap();
    assert!(m["result"].to_string().contains("partly approved"), "{m}");
}

/// The same choice from the command line: `toolhost approve mcp:SERVER --tool NAME` pins
/// only that withheld tool; a tool the server does not withhold is refused and writes
/// nothing; `--tool` without `mcp:` is refused.
#[test]
fn approve_mcp_with_tool_pins_only_the_chosen_tool() {
    let Some(work) = everything_unapproved() else {
        return;
    };
    let approve = |extra: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("approve")
            .args(extra)
            .args(["--yes", "--plugins"])
            .arg(&work.plugins)
            .current_dir(work.dir.path())
            .envs(super::console::env(work.dir.path()))
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let before = work.lock();
    let (ok, text) = approve(&["mcp:everything", "--tool", "no-such-tool"]);
    assert!(
        !ok && text.contains("does not withhold no-such-tool"),
        "{text}"
    );
    let (ok, text) = approve(&["calc", "--tool", "echo"]);
    assert!(!ok && text.contains("give mcp:SERVER"), "{text}");
    assert_eq!(work.lock(), before);

    let (ok, text) = approve(&["mcp:everything", "--tool", "echo"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("approved these tools of mcp server everything: echo"),
        "{text}"
    );
    let lock = work.lock();
    assert_eq!(pinned_tools(&lock, "everything"), ["echo"], "{lock}");
}
