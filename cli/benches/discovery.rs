//! Benchmark `discovery`: what progressive discovery saves on a workload of 200+ real
//! tools, all figures from one run.
//!
//! The workload: every example plugin (`cargo xtask plugins`), server-everything and
//! server-filesystem (`cargo xtask peers`), and the published servers of the tool-search
//! catalogue (`cargo xtask bench-peers`: GitHub, GitLab, Slack, Notion, Kubernetes,
//! Playwright, Firecrawl, Tavily, Google Maps, Brave, memory, Postgres, sequential
//! thinking), wrapped by one `toolhost serve --stdio`. Their tools are listed and
//! searched, never called: the services' keys are dummies.
//!
//! 1. **Definition tokens per turn** (tiktoken `o200k_base`, the JSON of the listed
//!    tools): `tools/list` in `all` mode against `search` mode, and what the definitions
//!    a search returns (limit 5) cost when they enter the conversation.
//! 2. **Relevance**: tasks a model would search for, each with the tool that does it; the
//!    rank of that tool in the answer (hit@1, hit@5).
//! 3. **Latency** over the pipe (a line client on a thread, the same for both):
//!    `search_tools` against `tools/list` of every tool, medians and p99 of 300.
//!
//! Run: `cargo bench -p toolhost-cli --bench discovery`. Figures in docs/benchmarks.md,
//! "Tool search".

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolhost::llm::tokens::TokenCounter;
use toolhost_testkit::jsonrpc::StdioClient;

/// A catalogue server: name, entry script under `target/peers/mcp/catalogue/
/// node_modules`, extra arguments and dummy environment.
type Server = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// The catalogue servers.
const CATALOGUE: &[Server] = &[
    (
        "github",
        "@modelcontextprotocol/server-github/dist/index.js",
        &[],
        &[("GITHUB_PERSONAL_ACCESS_TOKEN", "dummy")],
    ),
    (
        "gitlab",
        "@modelcontextprotocol/server-gitlab/dist/index.js",
        &[],
        &[("GITLAB_PERSONAL_ACCESS_TOKEN", "dummy")],
    ),
    (
        "slack",
        "@modelcontextprotocol/server-slack/dist/index.js",
        &[],
        &[("SLACK_BOT_TOKEN", "dummy"), ("SLACK_TEAM_ID", "T0")],
    ),
    (
        "memory",
        "@modelcontextprotocol/server-memory/dist/index.js",
        &[],
        &[],
    ),
    (
        "maps",
        "@modelcontextprotocol/server-google-maps/dist/index.js",
        &[],
        &[("GOOGLE_MAPS_API_KEY", "dummy")],
    ),
    (
        "brave",
        "@modelcontextprotocol/server-brave-search/dist/index.js",
        &[],
        &[("BRAVE_API_KEY", "dummy")],
    ),
    (
        "thinking",
        "@modelcontextprotocol/server-sequential-thinking/dist/index.js",
        &[],
        &[],
    ),
    (
        "postgres",
        "@modelcontextprotocol/server-postgres/dist/index.js",
        &["postgresql://127.0.0.1:9/none"],
        &[],
    ),
    (
        "notion",
        "@notionhq/notion-mcp-server/bin/cli.mjs",
        &[],
        &[("NOTION_TOKEN", "dummy")],
    ),
    (
        "kubernetes",
        "mcp-server-kubernetes/dist/index.js",
        &[],
        &[],
    ),
    ("playwright", "@playwright/mcp/cli.js", &[], &[]),
    (
        "firecrawl",
        "firecrawl-mcp/dist/index.js",
        &[],
        &[("FIRECRAWL_API_KEY", "fc-dummy")],
    ),
    (
        "tavily",
        "tavily-mcp/build/index.js",
        &[],
        &[("TAVILY_API_KEY", "dummy")],
    ),
];

/// Tasks as a model would search for them, and the tool that does each.
const TASKS: &[(&str, &str)] = &[
    ("open a pull request on GitHub", "create_pull_request"),
    ("post a message to a Slack channel", "slack_post_message"),
    (
        "driving directions between two addresses",
        "maps_directions",
    ),
    (
        "take a screenshot of the page in the browser",
        "browser_take_screenshot",
    ),
    ("scale a deployment to 3 replicas", "kubectl_scale"),
    ("install a helm chart", "install_helm_chart"),
    ("geocode an address into coordinates", "maps_geocode"),
    ("run a read-only SQL query", "query"),
    ("create a new page in Notion", "API-post-page"),
    (
        "add observations about an entity to the knowledge graph",
        "add_observations",
    ),
    ("compute the CRC-32 checksum of a file", "c_checksum"),
    ("multiply two numbers", "multiply"),
    ("list the commits of a repository", "list_commits"),
    ("search the web with Brave", "brave_web_search"),
    ("get the logs of a pod", "kubectl_logs"),
    ("reply in a Slack thread", "slack_reply_to_thread"),
    ("echo a message back", "echo"),
    ("create a directory", "create_directory"),
    ("click an element on the web page", "browser_click"),
    ("merge a pull request", "merge_pull_request"),
];

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// Writes the workload into `dir`; `None` when an input is missing.
fn workload(dir: &Path) -> Option<PathBuf> {
    let built = toolhost_testkit::built_plugins(&["calc.wasm"])?;
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for e in std::fs::read_dir(&built).unwrap().flatten() {
        let p = e.path();
        let keep = p.extension().is_some_and(|x| x == "wasm" || x == "toml");
        if keep {
            std::fs::copy(&p, plugins.join(e.file_name())).unwrap();
        } else if p.is_dir() && e.file_name() == "data" {
            copy_dir(&p, &plugins.join("data"));
        }
    }
    let everything = toolhost_testkit::peers::everything()?;
    let filesystem = toolhost_testkit::peers::filesystem()?;
    let catalogue =
        toolhost_testkit::workspace_root().join("target/peers/mcp/catalogue/node_modules");
    if !catalogue.exists() {
        eprintln!("SKIPPED: the catalogue servers are missing: run `cargo xtask bench-peers`");
        return None;
    }
    let root = dir.join("files");
    std::fs::create_dir_all(&root).unwrap();
    let mut toml = format!(
        "[mcp]\ndefault_risk = \"read-only\"\n\n[mcp.servers.everything]\ncommand = \"node\"\n\
         args = [{:?}, \"stdio\"]\n\n[mcp.servers.filesystem]\ncommand = \"node\"\nargs = [{:?}, {:?}]\n",
        everything.display().to_string(),
        filesystem.display().to_string(),
        root.display().to_string(),
    );
    for (name, entry, args, env) in CATALOGUE {
        let mut all = vec![catalogue.join(entry).display().to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        toml.push_str(&format!(
            "\n[mcp.servers.{name}]\ncommand = \"node\"\nargs = {}\n",
            serde_json::to_string(&all).unwrap()
        ));
        if !env.is_empty() {
            let pairs: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
            toml.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
        }
    }
    std::fs::write(dir.join("toolhost.toml"), toml).unwrap();
    Some(plugins)
}

fn serve(dir: &Path, plugins: &Path, discovery: &str) -> StdioClient {
    let mut c = StdioClient::spawn(
        Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .current_dir(dir)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .args(["serve", "--no-watch", "--no-audit", "--list-wait", "120s"])
            .args(["--discovery", discovery, "--plugins"])
            .arg(plugins)
            .stderr(Stdio::null()),
    );
    c.initialize("discovery-bench");
    c
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn timed(
    c: &mut StdioClient,
    n: usize,
    mut request: impl FnMut(&mut StdioClient, u64),
) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..n)
        .map(|i| {
            let t0 = Instant::now();
            request(c, 1000 + i as u64);
            t0.elapsed()
        })
        .collect();
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is taken.
    let dir = tempfile::tempdir().unwrap();
    let Some(plugins) = workload(dir.path()) else {
        return;
    };
    let tokens = TokenCounter::for_model("gpt-4o");
    let count = |v: &Value| tokens.count_text(&v.to_string());

    let mut all = serve(dir.path(), &plugins, "all");
    let listed = all.request(1, "tools/list", json!({}));
    let every = listed["result"]["tools"].clone();
    let n = every.as_array().map_or(0, Vec::len);
    let all_tokens = count(&every);

    let mut search = serve(dir.path(), &plugins, "search");
    let small = search.request(1, "tools/list", json!({}))["result"]["tools"].clone();
    let search_tokens = count(&small);

    println!(
        "# workload: {n} tools ({} listed in search mode)",
        small.as_array().map_or(0, Vec::len)
    );
    println!("definition tokens per turn (o200k_base):");
    println!("  all    {all_tokens:>7}");
    println!(
        "  search {search_tokens:>7}  ({:.1} % fewer)",
        100.0 * (1.0 - search_tokens as f64 / all_tokens as f64)
    );

    let (mut hit1, mut hit5, mut found_tokens) = (0, 0, 0usize);
    println!("\nrelevance (rank of the tool that does the task, limit 5):");
    for (i, (task, want)) in TASKS.iter().enumerate() {
        let r = search.call(
            10 + i as u64,
            "search_tools",
            json!({"query": task, "limit": 5}),
        );
        let tools = r["result"]["structuredContent"]["tools"].clone();
        found_tokens += count(&tools);
        let names: Vec<&str> = tools
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        let rank = names.iter().position(|n| n == want);
        hit1 += usize::from(rank == Some(0));
        hit5 += usize::from(rank.is_some());
        println!(
            "  {:<58} {:<24} {}  [{}]",
            task,
            want,
            rank.map_or("-".to_string(), |r| (r + 1).to_string()),
            names.join(", ")
        );
    }
    println!(
        "  hit@1 {hit1}/{t}, hit@5 {hit5}/{t}; a search's 5 definitions: {} tokens on average",
        found_tokens / TASKS.len(),
        t = TASKS.len()
    );

    let queries: Vec<&str> = TASKS.iter().map(|(q, _)| *q).collect();
    let (s50, s99) = timed(&mut search, 300, |c, id| {
        let q = queries[id as usize % queries.len()];
        c.call(id, "search_tools", json!({"query": q, "limit": 5}));
    });
    let (l50, l99) = timed(&mut all, 300, |c, id| {
        c.request(id, "tools/list", json!({}));
    });
    println!("\nlatency over the pipe, 300 requests each:");
    println!("  search_tools (limit 5)     p50 {s50:>10.1?}  p99 {s99:>10.1?}");
    println!("  tools/list, every tool     p50 {l50:>10.1?}  p99 {l99:>10.1?}");
    println!(
        "  ratio search_tools / tools/list (p50): {:.2}",
        s50.as_secs_f64() / l50.as_secs_f64()
    );
}
