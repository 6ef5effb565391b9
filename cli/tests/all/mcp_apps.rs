//! An MCP App through `serve` exactly as directly: the MCP Apps SDK's own example server
//! (`@modelcontextprotocol/server-basic-vanillajs`, ext-apps; nobody here wrote it),
//! asked directly and through `serve --stdio` by a client that declares the
//! `io.modelcontextprotocol/ui` extension. The tool's UI link (`_meta.ui.resourceUri`),
//! its title and output schema, the `ui://` view listed and read (HTML, MIME type,
//! `_meta`), and a call's `structuredContent` are the same both ways.
//!
//! And in a real browser (`cli/tests/browser/app_host.py`: headless Chromium driven by
//! selenium): the view read through `serve --http` runs in a scripts-only sandboxed
//! iframe, says hello to its host (`ui/initialize`), and its own button's `tools/call`
//! reaches the wrapped server through the host's bridge and `serve`; the view shows the
//! time the server returned.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolhost_testkit::jsonrpc::StdioClient;
use toolhost_testkit::peers;

/// The handshake of a client that renders MCP Apps.
fn initialize(client: &mut StdioClient) -> Value {
    let init = client.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25",
            "capabilities": {"extensions": {"io.modelcontextprotocol/ui":
                {"mimeTypes": ["text/html;profile=mcp-app"]}}},
            "clientInfo": {"name": "apps-host", "version": "0"}}),
    );
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    init
}

/// What an App host asks: the tool, the view listed and read, a call.
struct Seen {
    tool: Value,
    resource: Value,
    contents: Value,
    call: Value,
}

fn ask(client: &mut StdioClient) -> Seen {
    let tools = client.request(1, "tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "get-time"))
        .unwrap_or_else(|| panic!("no get-time in {tools}"))
        .clone();
    let uri = tool["_meta"]["ui"]["resourceUri"]
        .as_str()
        .unwrap_or_else(|| panic!("no UI link on {tool}"))
        .to_string();
    let list = client.request(2, "resources/list", json!({}));
    let resource = list["result"]["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["uri"] == uri.as_str()))
        .unwrap_or_else(|| panic!("the view {uri} is not listed: {list}"))
        .clone();
    let read = client.request(3, "resources/read", json!({"uri": uri}));
    let contents = read["result"]["contents"][0].clone();
    let call = client.call(4, "get-time", json!({}));
    Seen {
        tool,
        resource,
        contents,
        call: call["result"].clone(),
    }
}

#[test]
fn the_ext_apps_example_server_through_serve_is_as_direct() {
    let Some(app) = peers::apps_basic() else {
        return;
    };
    let mut direct = StdioClient::spawn(
        Command::new("node")
            .arg(&app)
            .arg("--stdio")
            .stderr(Stdio::null()),
    );
    initialize(&mut direct);
    let want = ask(&mut direct);
    drop(direct);
    assert_eq!(
        want.contents["mimeType"], "text/html;profile=mcp-app",
        "{}",
        want.contents
    );

    let dir = toolhost_testkit::temp_dir("mcp-apps");
    let config = dir.join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp.servers.apps]\ncommand = \"node\"\nargs = [{:?}, \"--stdio\"]\n\
             default_risk = \"read-only\"\n",
            app.display().to_string()
        ),
    )
    .unwrap();
    let plugins = dir.join("no-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let mut client = crate::serve_stdio(&config, &plugins);
    initialize(&mut client);
    let got = ask(&mut client);

    // The tool as the server wrote it: the UI link (both spellings the SDK writes),
    // title and output schema.
    assert_eq!(got.tool["_meta"], want.tool["_meta"], "{}", got.tool);
    assert_eq!(got.tool["title"], want.tool["title"]);
    assert_eq!(got.tool["outputSchema"], want.tool["outputSchema"]);
    assert_eq!(got.tool["description"], want.tool["description"]);
    // The view: listed and read the same, the HTML byte for byte.
    assert_eq!(got.resource, want.resource);
    assert_eq!(got.contents["mimeType"], want.contents["mimeType"]);
    assert_eq!(got.contents["_meta"], want.contents["_meta"]);
    let (html, want_html) = (
        got.contents["text"].as_str().unwrap_or_default(),
        want.contents["text"].as_str().unwrap_or_default(),
    );
    assert!(
        html.len() > 1000 && html == want_html,
        "the view's HTML differs"
    );
    // A call: the same structured result (the time differs; its shape does not), and
    // the text beside it says the same time.
    let (s, w) = (
        &got.call["structuredContent"],
        &want.call["structuredContent"],
    );
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
    assert_eq!(keys(s), keys(w), "{}", got.call);
    let time = s["time"].as_str().unwrap_or_default();
    assert!(time.len() >= 20 && time.ends_with('Z'), "{}", got.call);
    assert_eq!(got.call["content"][0]["text"], s["time"]);
    assert_eq!(got.call["isError"], json!(false));
}

#[test]
fn the_example_app_runs_in_chromium_and_calls_its_tool_through_serve() {
    let (Some(app), Some(browser)) = (peers::apps_basic(), peers::browser()) else {
        return;
    };
    let dir = toolhost_testkit::temp_dir("mcp-apps-browser");
    std::fs::write(
        dir.join("toolhost.toml"),
        format!(
            "[mcp.servers.apps]\ncommand = \"node\"\nargs = [{:?}, \"--stdio\"]\n\
             default_risk = \"read-only\"\n",
            app.display().to_string()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let serve = toolhost_testkit::serve::ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        &dir,
        &["--plugins", "plugins", "--no-audit", "--no-watch"],
        &[],
        "all tools loaded",
        std::time::Duration::from_secs(120),
    );
    run_app_host(&browser, &serve, &[]);
}

/// `cli/tests/browser/app_host.py` against `serve` (with `args`: the tool, its view's
/// button and result elements, the result's pattern); fails with everything both said
/// unless the App run ends OK.
fn run_app_host(
    browser: &peers::Browser,
    serve: &toolhost_testkit::serve::ServeHttp,
    args: &[&str],
) {
    let root = toolhost_testkit::workspace_root();
    let out = Command::new(&browser.python)
        .arg(root.join("cli/tests/browser/app_host.py"))
        .arg(&serve.url)
        .arg(root.join("target").join("console-screenshots"))
        .args(args)
        .env("TOOLHOST_CHROMIUM", &browser.chromium)
        .env("TOOLHOST_CHROMEDRIVER", &browser.chromedriver)
        .output()
        .unwrap_or_else(|e| panic!("running app_host.py: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().last() == Some("OK"),
        "the App run failed ({}):\n{stdout}\n{}\n--- serve:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
}

// ------------------------------------------------- a plugin that ships its own App

/// One request in an MCP session of `serve --http` at `addr`: the JSON-RPC message.
fn session_request(addr: &str, session: &str, id: u64, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let r = toolhost_testkit::http::mcp_post(addr, "/mcp", Some(session), &body.to_string())
        .unwrap_or_else(|e| panic!("{method}: {e}"));
    toolhost_testkit::http::rpc_message(&r).unwrap_or_else(|| panic!("{method}: {}", r.body))
}

/// `toolhost new appdemo --lang js --ui`, built with its documented one-liner (the JS
/// toolchain `cargo xtask plugins` installed); `None` (skip) when that toolchain is
/// missing outside CI.
fn scaffold_app(dir: &Path) -> Option<std::path::PathBuf> {
    let root = toolhost_testkit::workspace_root();
    let node_modules = root.join("target/toolchains/js/node_modules");
    if !node_modules
        .join("@bytecodealliance/componentize-js")
        .is_dir()
    {
        assert!(
            !peers::in_ci(),
            "the JS toolchain is missing: cargo xtask plugins"
        );
        eprintln!("SKIPPED: the JS toolchain is missing (cargo xtask plugins)");
        return None;
    }
    let proj = dir.join("plugins");
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .current_dir(dir)
        .args(["new", "appdemo", "--lang", "js", "--ui", "--dir"])
        .arg(&proj)
        .output()
        .unwrap_or_else(|e| panic!("toolhost new: {e}"));
    assert!(out.status.success(), "{}", toolhost_testkit::show(&out));
    std::os::unix::fs::symlink(&node_modules, proj.join("node_modules"))
        .unwrap_or_else(|e| panic!("linking node_modules: {e}"));
    let out = Command::new("sh")
        .current_dir(&proj)
        .args(["-c", "npm run build"])
        .output()
        .unwrap_or_else(|e| panic!("npm run build: {e}"));
    assert!(out.status.success(), "{}", toolhost_testkit::show(&out));
    Some(proj)
}

/// A WASM plugin ships an MCP App: `toolhost new --ui` writes the view, `serve` ties the
/// tool to it and serves it at `ui://appdemo/appdemo.html`, and in Chromium the view,
/// read through `serve --http`, runs sandboxed and its own button's `tools/call` reaches
/// the plugin. A stray page in the views folder is refused with a warning and costs
/// nothing else. An edited view withholds the tool (and its view) until approved again.
#[test]
fn a_plugin_ships_its_own_app_and_chromium_runs_it_through_serve() {
    let Some(browser) = peers::browser() else {
        return;
    };
    let dir = toolhost_testkit::temp_dir("plugin-app");
    let Some(plugins) = scaffold_app(&dir) else {
        return;
    };
    let view_file = plugins.join("appdemo.ui/appdemo.html");
    let page = std::fs::read_to_string(&view_file).unwrap();
    std::fs::write(plugins.join("appdemo.ui/stray.html"), "<p>no tool</p>").unwrap();
    let approve = |what: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["approve", "appdemo", "--yes", "--plugins"])
            .arg(&plugins)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{what}: {}",
            toolhost_testkit::show(&out)
        );
        text
    };
    // Before the approval the tool is served (it needs no capability), its view is not.
    let ask = |id: u64, method: &str, params: Value| {
        let mut client = crate::serve_stdio(&dir.join("toolhost.toml"), &plugins);
        initialize(&mut client);
        client.request(id, method, params)
    };
    std::fs::write(dir.join("toolhost.toml"), "").unwrap();
    let uri = "ui://appdemo/appdemo.html";
    let tools = ask(1, "tools/list", json!({}));
    let listed = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "appdemo"))
        .unwrap_or_else(|| panic!("no appdemo in {tools}"))
        .clone();
    assert!(listed.get("_meta").is_none(), "{listed}");
    let read = ask(2, "resources/read", json!({"uri": uri}));
    assert!(read["error"].is_object(), "{read}");

    // The review names the view and its digest: that is what approving pins.
    let shown = approve("first approval");
    assert!(
        shown.contains("view ui://appdemo/appdemo.html  (sha256:"),
        "{shown}"
    );

    let http = toolhost_testkit::serve::ServeHttp::start(
        Path::new(env!("CARGO_BIN_EXE_toolhost")),
        &dir,
        &[
            "--plugins",
            "plugins",
            "--config",
            "toolhost.toml",
            "--no-audit",
            "--no-watch",
        ],
        &[],
        "all tools loaded",
        std::time::Duration::from_secs(120),
    );
    let addr = http.addr();
    let session = toolhost_testkit::http::mcp_session(&addr).unwrap();
    let init =
        toolhost_testkit::http::mcp_post(&addr, "/mcp", None, toolhost_testkit::http::INITIALIZE)
            .unwrap();
    let init = toolhost_testkit::http::rpc_message(&init).unwrap();
    assert_eq!(
        init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
        json!({"mimeTypes": ["text/html;profile=mcp-app"]}),
        "{init}"
    );
    let tools = session_request(&addr, &session, 2, "tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "appdemo"))
        .unwrap_or_else(|| panic!("no appdemo in {tools}"))
        .clone();
    assert_eq!(tool["_meta"], json!({"ui": {"resourceUri": uri}}), "{tool}");
    let list = session_request(&addr, &session, 3, "resources/list", json!({}));
    let listed = list["result"]["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["uri"] == uri))
        .unwrap_or_else(|| panic!("{uri} is not listed: {list}"))
        .clone();
    assert_eq!(listed["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(listed["size"], json!(page.len()));
    let read = session_request(&addr, &session, 4, "resources/read", json!({"uri": uri}));
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        contents["text"].as_str(),
        Some(page.as_str()),
        "the page differs"
    );
    let log = http.stderr();
    assert!(
        log.contains("view not served") && log.contains("stray.html: not TOOL.html"),
        "{log}"
    );

    run_app_host(
        &browser,
        &http,
        &["appdemo", "call", "result", "^Hello, World!$"],
    );
    drop(http);

    // An edited view is a changed tool: withheld, its view not served, until approved.
    std::fs::write(&view_file, format!("{page}<script>steal()</script>")).unwrap();
    let tools = ask(1, "tools/list", json!({}));
    assert!(
        !tools.to_string().contains("\"appdemo\""),
        "a changed view's tool is offered: {tools}"
    );
    let read = ask(2, "resources/read", json!({"uri": uri}));
    assert!(read["error"].is_object(), "{read}");
    let shown = approve("after the edit");
    assert!(
        shown.contains("~ tool appdemo") && shown.contains("      view\n"),
        "the review does not show the changed view:\n{shown}"
    );
    let read = ask(3, "resources/read", json!({"uri": uri}));
    assert!(
        read["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.ends_with("<script>steal()</script>")),
        "{read}"
    );
}
