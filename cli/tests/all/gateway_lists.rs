//! The first lists of `serve` as a gateway: `resources/list`, `resources/templates/list`
//! and `prompts/list` sent right after `initialize`, while the wrapped server is still
//! starting, wait for the load as `tools/list` does, and list what the server offers
//! directly (server-everything, a server nobody here wrote); `initialize` itself waits
//! (a gateway offers what its servers offer). A second `serve` is asked to
//! read a resource first thing: the read waits for the load too.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use toolhost_testkit::jsonrpc::StdioClient;
use toolhost_testkit::peers;

/// The values of `key` in each item of `result[list]`.
fn keys(response: &Value, list: &str, key: &str) -> BTreeSet<String> {
    response["result"][list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {response}"))
        .iter()
        .filter_map(|item| item[key].as_str().map(str::to_string))
        .collect()
}

/// The three lists, in one order: resources by URI, templates by URI template, prompts
/// by name.
fn lists(client: &mut StdioClient) -> [BTreeSet<String>; 3] {
    let resources = client.request(1, "resources/list", json!({}));
    let templates = client.request(2, "resources/templates/list", json!({}));
    let prompts = client.request(3, "prompts/list", json!({}));
    [
        keys(&resources, "resources", "uri"),
        keys(&templates, "resourceTemplates", "uriTemplate"),
        keys(&prompts, "prompts", "name"),
    ]
}

#[test]
fn first_lists_right_after_initialize_wait_for_the_wrapped_server() {
    let Some(everything) = peers::everything() else {
        return;
    };
    let mut direct = StdioClient::spawn(
        Command::new("node")
            .arg(&everything)
            .arg("stdio")
            .stderr(Stdio::null()),
    );
    direct.initialize("direct");
    let want = lists(&mut direct);
    drop(direct);
    assert!(
        !want[0].is_empty() && !want[2].is_empty(),
        "server-everything offers resources and prompts: {want:?}"
    );

    let dir = toolhost_testkit::temp_dir("gateway-lists");
    let config = dir.join("toolhost.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
             default_risk = \"read-only\"\n",
            everything.display().to_string()
        ),
    )
    .unwrap();
    let plugins = dir.join("no-plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let mut client = crate::serve_stdio(&config, &plugins);
    // No pause: Node has not even started server-everything when these arrive.
    let init = client.initialize("first-lists");
    // `initialize` waited for the load too: the wrapped server's instructions are in it.
    let instructions = init["result"]["instructions"].as_str().unwrap_or_default();
    assert!(
        instructions.contains("MCP server 'everything'")
            && instructions.contains("Everything Server"),
        "{init}"
    );
    let got = lists(&mut client);
    assert_eq!(got[0], want[0], "resources/list through serve");
    assert_eq!(got[1], want[1], "resources/templates/list through serve");
    assert_eq!(got[2], want[2], "prompts/list through serve");
    // What they list can be read and got.
    let uri = want[0].iter().next().unwrap();
    let read = client.request(5, "resources/read", json!({"uri": uri}));
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    // And the server's tools are there to call.
    let sum = client.call(4, "get-sum", json!({"a": 2, "b": 3}));
    assert_eq!(sum["result"]["isError"], json!(false), "{sum}");
    drop(client);

    let mut reader = crate::serve_stdio(&config, &plugins);
    reader.initialize("reads-first");
    let read = reader.request(1, "resources/read", json!({"uri": uri}));
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
}
