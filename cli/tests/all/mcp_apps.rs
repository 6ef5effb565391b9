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

fn serve(config: &Path, plugins: &Path) -> StdioClient {
    StdioClient::spawn(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["serve", "--stdio", "--no-audit", "--config"])
            .arg(config)
            .arg("--plugins")
            .arg(plugins)
            .stderr(Stdio::null()),
    )
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
    let mut client = serve(&config, &plugins);
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
    let root = toolhost_testkit::workspace_root();
    let out = Command::new(&browser.python)
        .arg(root.join("cli/tests/browser/app_host.py"))
        .arg(&serve.url)
        .arg(root.join("target").join("console-screenshots"))
        .env("TOOLHOST_CHROMIUM", &browser.chromium)
        .env("TOOLHOST_CHROMEDRIVER", &browser.chromedriver)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.lines().last() == Some("OK"),
        "the App run failed ({}):\n{stdout}\n{}\n--- serve:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        serve.stderr()
    );
}
