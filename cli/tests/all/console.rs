//! The operator console of the real binary (`serve --http --admin --console`), over plain
//! HTTP on 127.0.0.1: access, CSRF, the login limit, approving a held plugin, escaping of
//! a hostile component's markup, and the audit trail at 1 GB.
//!
//! The set-up ([`Work`]) is shared with the browser tests (`console_browser.rs`): plugin
//! `calc` approved, then replaced by another component that requests a folder (held), and
//! `hostile_html` (tests/fixtures), whose descriptions and errors are markup that would
//! run script if a page put it in as HTML.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use toolhost_testkit::built_plugins;
use toolhost_testkit::http::{Response, request};
use toolhost_testkit::serve::ServeHttp;

/// A work folder with the plugins, a token file and an audit file.
pub struct Work {
    /// Holds the folder.
    pub dir: tempfile::TempDir,
    /// `plugins/`.
    pub plugins: PathBuf,
    /// The operator token file (mode 0600).
    pub token_file: PathBuf,
    /// The token.
    pub token: String,
    /// The audit trail.
    pub audit: PathBuf,
}

/// The environment every command of a test gets: its own cache and data folders.
pub fn env(dir: &Path) -> Vec<(String, String)> {
    vec![
        (
            "XDG_CACHE_HOME".into(),
            dir.join("cache").display().to_string(),
        ),
        (
            "XDG_DATA_HOME".into(),
            dir.join("data").display().to_string(),
        ),
    ]
}

impl Work {
    /// `calc` approved then swapped for a component requesting a folder (held), and
    /// `hostile_html` unapproved.
    pub fn new() -> Work {
        let built = built_plugins(&["calc.wasm", "files.wasm", "fixtures/hostile_html.wasm"])
            .expect("the built plugins (cargo xtask plugins)");
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        let copy = |from: &str, to: &str| {
            std::fs::copy(built.join(from), plugins.join(to)).unwrap();
        };
        copy("calc.wasm", "calc.wasm");
        copy("calc.toml", "calc.toml");
        let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["approve", "calc", "--yes", "--plugins"])
            .arg(&plugins)
            .envs(env(dir.path()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Another component in its place, requesting a folder: held.
        copy("files.wasm", "calc.wasm");
        copy("files.toml", "calc.toml");
        copy("fixtures/hostile_html.wasm", "hostile_html.wasm");
        let token = "0123456789abcdef0123456789abcdef-console-test".to_string();
        let token_file = dir.path().join("operator.token");
        std::fs::write(&token_file, format!("{token}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let audit = dir.path().join("audit.jsonl");
        Work {
            dir,
            plugins,
            token_file,
            token,
            audit,
        }
    }

    /// `serve --http --admin 127.0.0.1:0 --console` on this folder, with `extra` flags.
    pub fn serve(&self, extra: &[&str]) -> (ServeHttp, String) {
        self.serve_with(extra, &[])
    }

    /// [`Work::serve`] with `more_env` in its environment too.
    pub fn serve_with(&self, extra: &[&str], more_env: &[(&str, &str)]) -> (ServeHttp, String) {
        let env = env(self.dir.path());
        let mut env: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        env.extend_from_slice(more_env);
        let mut args = vec![
            "--admin",
            "127.0.0.1:0",
            "--console",
            "--admin-token-file",
            self.token_file.to_str().unwrap(),
            "--audit",
            self.audit.to_str().unwrap(),
            "--plugins",
            self.plugins.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let s = ServeHttp::start(
            Path::new(env!("CARGO_BIN_EXE_toolhost")),
            self.dir.path(),
            &args,
            &env,
            "all tools loaded",
            Duration::from_secs(120),
        );
        let admin = s.admin_addr().expect("the admin address");
        (s, admin)
    }

    /// Writes `toolhost.toml` (the host config `serve` and the commands read) with `text`.
    pub fn configure(&self, text: &str) {
        std::fs::write(self.dir.path().join("toolhost.toml"), text).unwrap();
    }

    /// The lock's text.
    pub fn lock(&self) -> String {
        std::fs::read_to_string(self.plugins.join("toolhost.lock")).unwrap()
    }
}

/// `k=v&…`, percent-encoded.
pub(super) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            let v: String = v
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect();
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join("&")
}

pub(super) fn post(
    admin: &str,
    path: &str,
    cookie: Option<&str>,
    extra: &[(&str, &str)],
    body: &str,
) -> Response {
    let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
    let c;
    if let Some(cookie) = cookie {
        c = cookie.to_string();
        headers.push(("Cookie", &c));
    }
    headers.extend_from_slice(extra);
    request(admin, "POST", path, &headers, body).unwrap()
}

pub(super) fn get(admin: &str, path: &str, cookie: Option<&str>) -> Response {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("Cookie", c)).into_iter().collect();
    request(admin, "GET", path, &headers, "").unwrap()
}

/// `REQUEST_LINE` to `admin` with `Host: host`, on a connection of its own; the whole
/// answer.
fn raw_with_host(admin: &str, host: &str, request_line: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(admin).unwrap();
    write!(
        s,
        "{request_line} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Logs in; the `Cookie` header value.
pub(super) fn login(admin: &str, token: &str) -> String {
    let r = post(
        admin,
        "/console/login",
        None,
        &[],
        &form(&[("token", token)]),
    );
    assert_eq!(r.status, 303, "{} {}", r.head, r.body);
    let set = r.header("set-cookie").expect("a session cookie");
    set.split(';').next().unwrap().to_string()
}

/// The value of hidden input `name` in the form of `action` of the section of plugin
/// `plugin` on a page.
pub(super) fn form_field(page: &str, plugin: &str, action: &str, name: &str) -> String {
    section_field(page, "<section class=\"pending\"", plugin, action, name)
}

/// The value of hidden input `name` in the form of `action` of the section that opens
/// with `opening` and has `data-name="NAME"`.
fn section_field(page: &str, opening: &str, data_name: &str, action: &str, name: &str) -> String {
    let section = page
        .split(opening)
        .find(|s| s.contains(&format!("data-name=\"{data_name}\"")))
        .unwrap_or_else(|| panic!("no pending section of {data_name} in:\n{page}"));
    let f = section
        .split("<form")
        .find(|f| f.contains(&format!("action=\"{action}\"")))
        .expect("the form");
    let at = f
        .find(&format!("name=\"{name}\" value=\""))
        .expect("the field")
        + name.len()
        + 15;
    f[at..].split('"').next().unwrap().to_string()
}

#[test]
fn access_csrf_approval_and_escaping() {
    let work = Work::new();
    let (serve, admin) = work.serve(&[]);

    // Nothing without a session: pages answer 401 with the login form, the stream and
    // every action 401, and nothing changes.
    let lock_before = work.lock();
    for path in [
        "/console/sources",
        "/console/pending",
        "/console/audit",
        "/console/live",
        "/console/clients",
    ] {
        let r = get(&admin, path, None);
        assert_eq!(r.status, 401, "{path}: {}", r.head);
        assert!(r.body.contains("action=\"/console/login\""), "{path}");
    }
    assert_eq!(get(&admin, "/console/live/events", None).status, 401);
    let r = post(
        &admin,
        "/console/pending/approve",
        None,
        &[],
        &form(&[("csrf", "x"), ("name", "calc")]),
    );
    assert_eq!(r.status, 401, "{}", r.body);
    // A session id nobody was given (another console's, a forged one).
    let forged = format!(
        "toolhost_console_{}={}",
        admin.rsplit(':').next().unwrap(),
        "ab".repeat(32)
    );
    assert_eq!(get(&admin, "/console/sources", Some(&forged)).status, 401);
    // A name an attacker points at 127.0.0.1 (DNS rebinding): refused before anything.
    let rebound = raw_with_host(&admin, "evil.example:80", "GET /console/login");
    assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
    assert!(raw_with_host(&admin, "localhost", "GET /console/login").starts_with("HTTP/1.1 200"));
    // A login sent by another site: refused without spending a try.
    let r = post(
        &admin,
        "/console/login",
        None,
        &[("Sec-Fetch-Site", "cross-site")],
        &form(&[("token", &work.token)]),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    // A wrong token.
    let r = post(
        &admin,
        "/console/login",
        None,
        &[],
        &form(&[("token", "wrong-token-wrong-token-wrong-token")]),
    );
    assert_eq!(r.status, 401);
    assert!(r.header("set-cookie").is_none());

    // Log in: the cookie's attributes, and the page's security headers.
    let r = post(
        &admin,
        "/console/login",
        None,
        &[],
        &form(&[("token", &work.token)]),
    );
    assert_eq!(r.status, 303);
    let set = r.header("set-cookie").unwrap();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/console", "Max-Age="] {
        assert!(set.contains(attr), "{set}");
    }
    let cookie = set.split(';').next().unwrap().to_string();
    let sources = get(&admin, "/console/sources", Some(&cookie));
    assert_eq!(sources.status, 200);
    let csp = sources.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert_eq!(sources.header("x-frame-options").as_deref(), Some("DENY"));

    // The hostile component's markup is text: escaped, never a tag.
    let body = &sources.body;
    assert!(body.contains("data-name=\"hostile_html\""), "{body}");
    assert!(
        body.contains("&lt;script&gt;window.__pwned='script'&lt;/script&gt;"),
        "{body}"
    );
    for live in [
        "<script>window",
        "<img src=x",
        "<a href=\"javascript",
        "<style>body",
        "<svg onload",
        "<div style=\"width:expression",
    ] {
        assert!(
            !body.contains(live),
            "unescaped {live:?} in the sources page"
        );
    }
    assert!(body.contains("held"), "calc is held: {body}");

    // The pending page: calc's review with its diff, and the forms.
    let pending = get(&admin, "/console/pending", Some(&cookie)).body;
    assert!(pending.contains("Changes since the approval"), "{pending}");
    let field = |name: &str| form_field(&pending, "calc", "/console/pending/approve", name);
    let (nonce, digest, req) = (field("csrf"), field("digest"), field("request"));
    let approve_body = |csrf: &str| {
        form(&[
            ("csrf", csrf),
            ("name", "calc"),
            ("digest", &digest),
            ("request", &req),
        ])
    };
    // A forged nonce, another session's nonce, another origin: 403, nothing changes.
    let r = post(
        &admin,
        "/console/pending/approve",
        Some(&cookie),
        &[],
        &approve_body("00112233445566778899aabbccddeeff"),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let other = login(&admin, &work.token);
    let other_pending = get(&admin, "/console/pending", Some(&other)).body;
    let other_nonce = form_field(&other_pending, "calc", "/console/pending/approve", "csrf");
    assert_eq!(
        post(
            &admin,
            "/console/pending/approve",
            Some(&cookie),
            &[],
            &approve_body(&other_nonce)
        )
        .status,
        403
    );
    let r = post(
        &admin,
        "/console/pending/approve",
        Some(&cookie),
        &[("Origin", "http://evil.example")],
        &approve_body(&nonce),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let r = post(
        &admin,
        "/console/pending/approve",
        Some(&cookie),
        &[("Sec-Fetch-Site", "cross-site")],
        &approve_body(&nonce),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        work.lock(),
        lock_before,
        "a refused request changed the lock"
    );
    // A stale review: the digest shown is not the file's.
    let mut stale = approve_body(&nonce).replace("sha256%3A", "sha256%3A0");
    stale.push_str("&x=1");
    let r = post(
        &admin,
        "/console/pending/approve",
        Some(&cookie),
        &[],
        &stale,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(work.lock(), lock_before);

    // The real approval, same origin, with a narrower grant (the requested folder
    // unticked): the lock now approves the new component without it, and the watching
    // serve takes it up.
    assert!(
        pending.contains("name=\"keep\" value=\"read:0\""),
        "{pending}"
    );
    let nonce = form_field(
        &get(&admin, "/console/pending", Some(&cookie)).body,
        "calc",
        "/console/pending/approve",
        "csrf",
    );
    let r = post(
        &admin,
        "/console/pending/approve",
        Some(&cookie),
        &[("Origin", &format!("http://{admin}"))],
        &approve_body(&nonce),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("with a narrower grant"), "{}", r.body);
    let lock = work.lock();
    assert!(lock.contains(&digest), "{lock}");
    assert!(
        !lock.contains("data/files"),
        "the unticked folder was granted: {lock}"
    );
    // Replayed: refused.
    assert_eq!(
        post(
            &admin,
            "/console/pending/approve",
            Some(&cookie),
            &[],
            &approve_body(&nonce)
        )
        .status,
        403
    );
    let mut state = String::new();
    for _ in 0..600 {
        state = plugin_state(&admin, &cookie, "calc");
        if state == "approved" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(state, "approved", "{}", serve.stderr());
    // The action is in the audit trail, with the operator session.
    let trail = std::fs::read_to_string(&work.audit).unwrap();
    let action = trail
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["tool"] == "console.approve" && r["ok"] == true)
        .expect("the approval's record");
    assert_eq!(action["client"], "console");
    assert!(action["session"].as_str().unwrap().starts_with("console:"));
    assert_eq!(action["arguments"]["plugin"], "calc");

    // The clients page: the sessions and the execution slots in use.
    let clients = get(&admin, "/console/clients", Some(&cookie)).body;
    assert!(clients.contains("execution slots in use now"), "{clients}");
    assert!(
        clients.contains("<dt>tasks alive</dt><dd>0</dd>"),
        "{clients}"
    );
    // Log out: the session's cookie is refused from then on.
    let logout_nonce = sources
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        post(
            &admin,
            "/console/logout",
            Some(&cookie),
            &[],
            &form(&[("csrf", &logout_nonce)])
        )
        .status,
        303
    );
    assert_eq!(get(&admin, "/console/sources", Some(&cookie)).status, 401);
    drop(serve);
}

#[test]
fn wrong_tokens_are_rate_limited_and_sessions_expire() {
    let work = Work::new();
    let (serve, admin) = work.serve(&["--console-session-idle", "1s"]);
    let cookie = login(&admin, &work.token);
    // 1,000 wrong tokens: after the burst, 429 without comparing.
    let mut limited = 0;
    for i in 0..1000 {
        let r = post(
            &admin,
            "/console/login",
            None,
            &[],
            &form(&[("token", &format!("wrong-{i:040}"))]),
        );
        assert!(matches!(r.status, 401 | 429), "{}", r.status);
        if r.status == 429 {
            assert!(r.header("retry-after").is_some());
            limited += 1;
        }
    }
    assert!(limited >= 980, "only {limited} of 1000 were limited");
    assert_eq!(serve.stderr().matches("panicked").count(), 0);
    // The bucket refills: the right token works again after a while.
    std::thread::sleep(toolhost::console::LOGIN_REFILL + Duration::from_millis(200));
    let fresh = login(&admin, &work.token);
    // An idle session ends.
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(get(&admin, "/console/sources", Some(&cookie)).status, 401);
    assert_eq!(get(&admin, "/console/sources", Some(&fresh)).status, 401);
    // A non-loopback console without TLS in front is refused at start.
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--admin",
            "0.0.0.0:0",
            "--console",
            "--admin-token-file",
        ])
        .arg(&work.token_file)
        .args(["--no-audit", "--plugins"])
        .arg(&work.plugins)
        .envs(env(work.dir.path()))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));
}

/// Writes `bytes` of audit records into `path` (whole lines), tool `bulk_N`.
fn bulk_trail(path: &Path, bytes: u64) {
    use std::io::Write;
    let mut block = String::new();
    let mut i = 0u64;
    while block.len() < 1 << 20 {
        block.push_str(&format!(
            r#"{{"ts":"2026-12-01T00:00:00.000Z","call_id":"b{i}","invocation":{i},"session":"mcp","client":"bulk","tool":"bulk_{}","arguments":{{"pad":"{}"}},"decisions":[],"executed":true,"ok":true,"duration_ms":1.0,"truncated":false}}"#,
            i % 7,
            "x".repeat(100)
        ));
        block.push('\n');
        i += 1;
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut written = 0;
    while written < bytes {
        f.write_all(block.as_bytes()).unwrap();
        written += block.len() as u64;
    }
    f.flush().unwrap();
}

/// The peak resident memory of process `pid`, KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn a_gigabyte_audit_trail_pages_in_bounded_memory() {
    let work = Work::new();
    // The rotated file holds 1 GB; the current one gets the serve's own records.
    let rotated = PathBuf::from(format!("{}.1", work.audit.display()));
    bulk_trail(&rotated, 1 << 30);
    let (serve, admin) = work.serve(&[]);
    let cookie = login(&admin, &work.token);
    let before = peak_kib(serve.pid());
    // The newest page: 50 records of the rotated file, newest first.
    let page = get(&admin, "/console/audit", Some(&cookie));
    assert_eq!(page.status, 200);
    assert_eq!(
        page.body.matches("<tr class=\"record\"").count(),
        toolhost::console::PAGE,
        "{}",
        &page.body[..2000.min(page.body.len())]
    );
    // A filter nothing matches: one request reads at most MAX_SCAN and says how to go on.
    let r = get(
        &admin,
        "/console/audit?tool=never_called&client=nobody",
        Some(&cookie),
    );
    assert_eq!(r.status, 200);
    assert!(r.body.contains("id=\"older\""), "{}", r.body);
    // Follow the cursor a few pages into the trail: each page costs what it reads.
    let mut next = r
        .body
        .split("id=\"older\" href=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&");
    for _ in 0..3 {
        let r = get(&admin, &next, Some(&cookie));
        assert_eq!(r.status, 200);
        next = r
            .body
            .split("id=\"older\" href=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .replace("&amp;", "&");
    }
    let filtered = get(
        &admin,
        "/console/audit?tool=bulk_3&outcome=ok",
        Some(&cookie),
    );
    let rows = filtered.body.matches("<tr class=\"record\"").count();
    assert_eq!(rows, toolhost::console::PAGE);
    assert_eq!(
        filtered
            .body
            .matches("<td class=\"tool\"><code>bulk_3</code>")
            .count(),
        rows,
        "every row is of the tool filtered on"
    );
    let grown = peak_kib(serve.pid()).saturating_sub(before);
    eprintln!("1 GB trail: peak memory grew by {grown} KiB over 6 pages");
    assert!(grown < 64 * 1024, "the audit pages took {grown} KiB");
}

/// The value of hidden input `name` in the form of `action` of the pending section of MCP
/// server `server`.
pub(super) fn server_field(page: &str, server: &str, action: &str, name: &str) -> String {
    let data_name = format!("mcp:{server}");
    section_field(
        page,
        "<section class=\"pending server\"",
        &data_name,
        action,
        name,
    )
}

/// The names of the tools `serve` at `addr` lists to a client.
pub(super) fn tool_names(addr: &str) -> Vec<String> {
    let r = toolhost_testkit::http::mcp_2026(
        addr,
        "tools/list",
        None,
        serde_json::json!({}),
        serde_json::json!({}),
    )
    .unwrap();
    let m = toolhost_testkit::http::rpc_message(&r).unwrap();
    m["result"]["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A wrapped server whose tools were never approved (`require_approval = "all"`) is on
/// the pending page with its tools and lint; a decision on other definitions (a stale
/// digest) is refused and writes nothing; the approval pins them in the lock, the running
/// serve offers them at once, and the action is in the audit trail. A replayed form is
/// refused, and the approved tool is called.
#[test]
fn a_wrapped_servers_withheld_tools_are_approved_from_the_console() {
    let Some(python) = toolhost_testkit::peers::python() else {
        return;
    };
    let work = Work::new();
    work.configure(&format!(
        "[trust]\nrequire_approval = \"all\"\n\
             [mcp.servers.slow]\ncommand = {:?}\nargs = [{:?}]\ndefault_risk = \"read-only\"\n",
        python.display().to_string(),
        toolhost_testkit::peers::mcp_fixture("slow_server.py")
            .display()
            .to_string()
    ));
    let (serve, admin) = work.serve(&[]);
    let addr = serve.addr();
    assert!(
        !tool_names(&addr).contains(&"wait".to_string()),
        "an unapproved tool is offered"
    );
    let cookie = login(&admin, &work.token);
    let pending = get(&admin, "/console/pending", Some(&cookie)).body;
    assert!(pending.contains("data-name=\"mcp:slow\""), "{pending}");
    assert!(pending.contains("wait (never approved)"), "{pending}");
    assert!(
        pending.contains("Wait the given number of seconds"),
        "{pending}"
    );
    let field = |page: &str, name: &str| {
        server_field(page, "slow", "/console/pending/approve-server", name)
    };
    let digest = field(&pending, "digest");
    let origin = format!("http://{admin}");
    // A console action of this session, from the console's own origin.
    let act =
        |path: &str, body: &str| post(&admin, path, Some(&cookie), &[("Origin", &origin)], body);

    // Definitions other than those shown: refused, nothing written.
    let nonce = field(&pending, "csrf");
    let stale = form(&[
        ("csrf", &nonce),
        ("server", "slow"),
        ("digest", "sha256:0000"),
    ]);
    let r = act("/console/pending/approve-server", &stale);
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(!work.lock().contains("[mcp.slow]"), "{}", work.lock());

    // Denied first: recorded and shown, still withheld.
    let deny = form(&[
        (
            "csrf",
            &server_field(&pending, "slow", "/console/pending/deny-server", "csrf"),
        ),
        ("server", "slow"),
        ("digest", &digest),
    ]);
    let r = act("/console/pending/deny-server", &deny);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!tool_names(&addr).contains(&"wait".to_string()));

    // The approval of what was shown: pinned, and offered while serving.
    let page = get(&admin, "/console/pending", Some(&cookie)).body;
    assert!(page.contains("its tools stay withheld"), "{page}");
    let good = form(&[
        ("csrf", &field(&page, "csrf")),
        ("server", "slow"),
        ("digest", &digest),
    ]);
    let r = act("/console/pending/approve-server", &good);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(work.lock().contains("[mcp.slow]"), "{}", work.lock());
    let mut offered = false;
    for _ in 0..100 {
        if tool_names(&addr).contains(&"wait".to_string()) {
            offered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        offered,
        "the approved tool is not offered\n{}",
        serve.stderr()
    );
    let after = get(&admin, "/console/pending", Some(&cookie)).body;
    assert!(!after.contains("data-name=\"mcp:slow\""), "{after}");
    // Replayed: refused.
    let r = act("/console/pending/approve-server", &good);
    assert_eq!(r.status, 403, "{}", r.body);

    // In the audit trail: the refusal and the approval, with the operator session.
    let trail = std::fs::read_to_string(&work.audit).unwrap();
    let actions: Vec<serde_json::Value> = trail
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["tool"] == "console.approve" && r["arguments"]["server"] == "slow")
        .collect();
    assert_eq!(actions.len(), 2, "{trail}");
    assert!(
        trail
            .lines()
            .any(|l| l.contains("\"console.deny\"") && l.contains("\"slow\"")),
        "{trail}"
    );
    assert_eq!(actions[0]["ok"], false, "{trail}");
    assert_eq!(actions[1]["ok"], true, "{trail}");
    assert!(
        actions[1]["session"]
            .as_str()
            .unwrap()
            .starts_with("console:")
    );

    // The approved tool is called.
    let r = toolhost_testkit::http::mcp_2026(
        &addr,
        "tools/call",
        Some("wait"),
        serde_json::json!({"name": "wait", "arguments": {"seconds": 0}}),
        serde_json::json!({}),
    )
    .unwrap();
    let m = toolhost_testkit::http::rpc_message(&r).unwrap();
    assert!(m["result"].to_string().contains("waited"), "{m}");
}

/// The sources page's state of plugin `name` (as the console shows it).
pub(super) fn plugin_state(admin: &str, cookie: &str, name: &str) -> String {
    let page = get(
        admin,
        &format!("/console/sources?kind=plugin&q={name}"),
        Some(cookie),
    )
    .body;
    page.split("class=\"state\">")
        .nth(1)
        .unwrap_or("")
        .split('<')
        .next()
        .unwrap_or("")
        .to_string()
}

/// An approval given in the console applies at once through the reload's own ask, not
/// through a file event: under `--no-watch` (as when inotify is exhausted) nothing watches
/// the folder, yet the approved plugin is offered without a restart. A refused approval
/// asks for nothing.
#[test]
fn an_approval_applies_where_the_folder_is_not_watched() {
    let work = Work::new();
    let (serve, admin) = work.serve(&["--no-watch"]);
    let addr = serve.addr();
    let cookie = login(&admin, &work.token);
    let listed = |name: &str| tool_names(&addr).contains(&name.to_string());
    assert!(!listed("list_dir"), "the held plugin's tool is offered");
    assert!(plugin_state(&admin, &cookie, "calc").starts_with("held"));

    let pending = get(&admin, "/console/pending", Some(&cookie)).body;
    let field = |name: &str| form_field(&pending, "calc", "/console/pending/approve", name);
    let (digest, req) = (field("digest"), field("request"));
    let approve = |digest: &str| {
        let page = get(&admin, "/console/pending", Some(&cookie)).body;
        let nonce = form_field(&page, "calc", "/console/pending/approve", "csrf");
        post(
            &admin,
            "/console/pending/approve",
            Some(&cookie),
            &[("Origin", &format!("http://{admin}"))],
            &form(&[
                ("csrf", &nonce),
                ("name", "calc"),
                ("digest", digest),
                ("request", &req),
                ("keep", "read:0"),
            ]),
        )
    };
    // A stale digest: refused, nothing written, nothing reloaded.
    let r = approve("00");
    assert_eq!(r.status, 409, "{}", r.body);
    std::thread::sleep(Duration::from_secs(1));
    assert!(!listed("list_dir"));

    let r = approve(&digest);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("It applies within a second."), "{}", r.body);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !listed("list_dir") {
        assert!(
            std::time::Instant::now() < deadline,
            "the approval never applied:\n{}",
            serve.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(plugin_state(&admin, &cookie, "calc"), "approved");
    assert!(
        serve
            .stderr()
            .contains("the plugins folder is not watched; approvals given in the console apply"),
        "{}",
        serve.stderr()
    );
}
