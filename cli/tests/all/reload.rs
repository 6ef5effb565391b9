//! Live reload of the plugins folder under `toolhost serve --stdio` (`docs/design.md`,
//! "Live reload"), with the real binary, a temporary plugins folder and real components
//! from `cargo xtask plugins` (`$TOOLHOST_TEST_PLUGINS`):
//!
//! - a component dropped in is announced with `notifications/tools/list_changed`, listed
//!   and callable, under the start-up trust rules (an unapproved plugin's tools that need
//!   a capability refuse with the approve hint);
//! - replacing a component with a different one changes the list; deleting it removes
//!   its tools;
//! - an approval given while serving (`toolhost approve` writes the lock) takes effect;
//!   a views folder (`NAME.ui/`) moved in withholds the tools it gives a view until they
//!   are approved again, then serves them with their views;
//!   under `require_approval = "all"` a plugin dropped in runs no code until approved;
//! - hostile: garbage (also under a file name with a terminal escape, which the report
//!   escapes), a half-written component, a component whose `describe()` breaks the
//!   registry's rules, and garbage written over a serving plugin are each reported (a
//!   warning naming the file) and disturb nothing: the other tools stay listed and
//!   callable, the plugin that was overwritten keeps serving its previous version, and
//!   the half file loads once it is complete;
//! - a call in flight finishes on the version it started with while its plugin is
//!   replaced (by a component whose tools the lock withholds: a changed definition);
//! - over Streamable HTTP, a client that caches the list learns of a component dropped
//!   in (it fetches the list again only on `list_changed`).
//!
//! Behaviour is asserted, never time: every wait is for a notification, a response or a
//! log line, bounded only so that a hung server fails instead of hanging.

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// Longest wait for anything the server should send: generous, so only a server that
/// never answers fails.
const PATIENCE: Duration = Duration::from_secs(300);

/// The tools of the `calc` example.
const CALC: [&str; 4] = ["add", "divide", "mean", "multiply"];

/// The built example plugins. Missing: a failure in CI, a skip locally.
fn plugins() -> Option<PathBuf> {
    let p = std::env::var_os("TOOLHOST_TEST_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| toolhost_testkit::workspace_root().join("target/plugins"));
    let needed = [
        p.join("calc.wasm"),
        p.join("c_checksum.wasm"),
        p.join("files.wasm"),
        p.join("fixtures/hostile.wasm"),
        p.join("fixtures/baddesc.wasm"),
    ];
    if needed.iter().all(|f| f.exists()) {
        return Some(p);
    }
    let msg = format!(
        "built plugins missing under {} (calc, c_checksum, files, fixtures/hostile, fixtures/baddesc); run `cargo xtask plugins`",
        p.display()
    );
    if toolhost_testkit::peers::in_ci() {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// A work folder: `plugins/` (watched), `cache/` (a private `XDG_CACHE_HOME`) and
/// `data/` (a private `XDG_DATA_HOME`).
struct Work {
    dir: tempfile::TempDir,
    from: PathBuf,
}

impl Work {
    /// An empty plugins folder but for the data folders the examples' requests name.
    fn new(from: &Path) -> Work {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::create_dir(dir.path().join("cache")).unwrap();
        copy_dir(&from.join("data"), &dir.path().join("plugins/data"));
        Work {
            dir,
            from: from.to_path_buf(),
        }
    }

    fn plugins(&self) -> PathBuf {
        self.dir.path().join("plugins")
    }

    /// Copies built component `stem` (path under the built plugins, without `.wasm`) and
    /// its request file, if it has one, into the folder as `name`. The component is
    /// written under a temporary name and renamed, as an installer would.
    fn put(&self, stem: &str, name: &str) {
        let toml = self.from.join(format!("{stem}.toml"));
        if toml.exists() {
            std::fs::copy(&toml, self.plugins().join(format!("{name}.toml"))).unwrap();
        }
        let part = self.plugins().join(format!("{name}.wasm.part"));
        std::fs::copy(self.from.join(format!("{stem}.wasm")), &part).unwrap();
        std::fs::rename(&part, self.plugins().join(format!("{name}.wasm"))).unwrap();
    }

    /// Writes `bytes` as `name` in the plugins folder, in place (not atomically).
    fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.plugins().join(name), bytes).unwrap();
    }

    fn bytes(&self, stem: &str) -> Vec<u8> {
        std::fs::read(self.from.join(format!("{stem}.wasm"))).unwrap()
    }

    /// `toolhost ARGS` in the work folder, with its cache and plugins.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
        cmd.current_dir(self.dir.path())
            .args(args)
            .arg("--plugins")
            .arg(self.plugins())
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            // Its own data folder: the audit trail and remembered approvals stay here.
            .env("XDG_DATA_HOME", self.dir.path().join("data"))
            .env_remove("TOOLHOST_PLUGINS")
            .env_remove("RUST_LOG");
        cmd
    }

    /// `toolhost approve NAME --yes`.
    fn approve(&self, name: &str) {
        let out = self.command(&["approve", name, "--yes"]).output().unwrap();
        assert!(
            out.status.success(),
            "approve {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (path, dest) = (entry.path(), to.join(entry.file_name()));
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

/// What the server sent, in order of arrival.
#[derive(Debug, Clone)]
enum Seen {
    Notification(String),
    Response(u64),
}

/// `toolhost serve --stdio` driven over raw JSON-RPC lines, its stderr read line by line.
struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    stderr: mpsc::Receiver<String>,
    /// Every stderr line read so far.
    log: Vec<String>,
    /// Everything seen on stdout so far, in order.
    seen: Vec<Seen>,
    /// Responses read while waiting for another one.
    parked: HashMap<u64, Value>,
    next_id: u64,
}

impl StdioServer {
    fn start(work: &Work, extra: &[&str]) -> StdioServer {
        let mut args = vec!["serve", "--stdio"];
        args.extend_from_slice(extra);
        let mut child = work
            .command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // Stdout carries protocol only: every line is a JSON-RPC message.
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("[serve] {line}");
                if etx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = StdioServer {
            child,
            stdin,
            lines: rx,
            stderr: erx,
            log: Vec::new(),
            seen: Vec::new(),
            parked: HashMap::new(),
            next_id: 1,
        };
        s.initialize();
        s
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads one message and books it; responses are parked by id.
    fn read_one(&mut self) {
        let v = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the server sent nothing for minutes, or exited");
        if let Some(m) = v["method"].as_str() {
            self.seen.push(Seen::Notification(m.to_string()));
        } else if let Some(id) = v["id"].as_u64() {
            self.seen.push(Seen::Response(id));
            self.parked.insert(id, v);
        }
    }

    /// Waits for the response with `id`, booking whatever comes before it.
    fn response(&mut self, id: u64) -> Value {
        loop {
            if let Some(v) = self.parked.remove(&id) {
                return v;
            }
            self.read_one();
        }
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn initialize(&mut self) {
        let id = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "reload-test", "version": "0"}}),
        );
        let init = self.response(id);
        assert_eq!(
            init["result"]["capabilities"]["tools"]["listChanged"], true,
            "{init}"
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn list(&mut self) -> BTreeSet<String> {
        let id = self.request("tools/list", json!({}));
        let r = self.response(id);
        r["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools in {r}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let id = self.request("tools/call", json!({"name": tool, "arguments": args}));
        self.response(id)
    }

    fn list_changed_count(&self) -> usize {
        self.seen
            .iter()
            .filter(
                |s| matches!(s, Seen::Notification(m) if m == "notifications/tools/list_changed"),
            )
            .count()
    }

    /// Waits for a `list_changed` beyond the first `count`.
    fn wait_list_changed(&mut self, count: usize) {
        while self.list_changed_count() <= count {
            self.read_one();
        }
    }

    /// Lists until `ok` holds, waiting for a `list_changed` before each new look; so a
    /// list that becomes right only after a change proves a notification came.
    fn wait_for_list(&mut self, ok: impl Fn(&BTreeSet<String>) -> bool) -> BTreeSet<String> {
        loop {
            let before = self.list_changed_count();
            let names = self.list();
            if ok(&names) {
                return names;
            }
            self.wait_list_changed(before);
        }
    }

    /// Waits for a stderr line containing every one of `parts`; returns it.
    fn wait_log(&mut self, parts: &[&str]) -> String {
        let matches = |l: &String| parts.iter().all(|p| l.contains(p));
        if let Some(l) = self.log.iter().find(|l| matches(l)) {
            return l.clone();
        }
        loop {
            let line = self
                .stderr
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("no log line with {parts:?}; log: {:#?}", self.log));
            self.log.push(line.clone());
            if matches(&line) {
                return line;
            }
        }
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The text of a `tools/call` result, asserting it is not an error.
fn ok_text(r: &Value) -> String {
    assert_ne!(r["result"]["isError"], true, "{r}");
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {r}"))
        .to_string()
}

fn error_text(r: &Value) -> String {
    assert_eq!(r["result"]["isError"], true, "{r}");
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn calc_works(s: &mut StdioServer) {
    let r = s.call("add", json!({"x": 40, "y": 2}));
    assert!(ok_text(&r).contains("42"), "{r}");
}

#[test]
fn a_component_dropped_in_is_announced_listed_and_callable() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    let mut s = StdioServer::start(&work, &[]);
    let first = s.wait_for_list(|n| n.is_superset(&set(&CALC)));
    assert!(!first.contains("c_add"), "{first:?}");

    let changed = s.list_changed_count();
    work.put("c_checksum", "c_checksum");
    let now = s.wait_for_list(|n| n.contains("c_add"));
    assert!(s.list_changed_count() > changed, "{:?}", s.seen);
    assert!(now.is_superset(&set(&CALC)), "{now:?}");
    let r = s.call("c_add", json!({"x": 40, "y": 2}));
    assert!(ok_text(&r).contains("42"), "{r}");

    // Same trust rules as at start: a plugin dropped in unapproved gets no capability.
    std::fs::write(work.plugins().join("data/files/a.txt"), "hello from a").unwrap();
    work.put("files", "files");
    s.wait_for_list(|n| n.contains("read_file"));
    let path = work.plugins().join("data/files/a.txt");
    let r = s.call("read_file", json!({"path": path.display().to_string()}));
    let text = error_text(&r);
    assert!(
        text.contains("toolhost approve files --plugins"),
        "an unapproved plugin dropped in must not read files: {r}"
    );
    calc_works(&mut s);
}

#[test]
fn an_approval_given_while_serving_takes_effect() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    work.put("files", "files");
    std::fs::write(work.plugins().join("data/files/a.txt"), "hello from a").unwrap();
    let path = work.plugins().join("data/files/a.txt");
    let mut s = StdioServer::start(&work, &[]);
    s.wait_for_list(|n| n.contains("read_file") && n.contains("add"));
    let r = s.call("read_file", json!({"path": path.display().to_string()}));
    assert!(error_text(&r).contains("toolhost approve files"), "{r}");

    // The lock changes: the plugin is evaluated again and re-registered with its grant.
    let changed = s.list_changed_count();
    work.approve("files");
    s.wait_list_changed(changed);
    let r = s.call("read_file", json!({"path": path.display().to_string()}));
    assert!(ok_text(&r).contains("hello from a"), "{r}");
    calc_works(&mut s);
}

/// A views folder put beside a serving plugin (made elsewhere, renamed into place) is a
/// change to the tools it names: withheld until approved again, then served with the view.
#[test]
fn a_views_folder_moved_in_while_serving_waits_for_its_approval() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    work.approve("calc");
    let mut s = StdioServer::start(&work, &[]);
    s.wait_for_list(|n| n.contains("multiply"));

    let staged = work.dir.path().join("calc.ui.new");
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::write(staged.join("multiply.html"), "<p>times</p>").unwrap();
    std::fs::rename(&staged, work.plugins().join("calc.ui")).unwrap();
    s.wait_for_list(|n| !n.contains("multiply") && n.contains("add"));
    s.wait_log(&["calc", "withheld", "multiply"]);

    let changed = s.list_changed_count();
    work.approve("calc");
    s.wait_list_changed(changed);
    let id = s.request("tools/list", json!({}));
    let tools = s.response(id);
    let multiply = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "multiply"))
        .unwrap_or_else(|| panic!("multiply is not back: {tools}"))
        .clone();
    assert_eq!(
        multiply["_meta"]["ui"]["resourceUri"], "ui://calc/multiply.html",
        "{multiply}"
    );
    let id = s.request("resources/read", json!({"uri": "ui://calc/multiply.html"}));
    let read = s.response(id);
    assert_eq!(
        read["result"]["contents"][0]["text"], "<p>times</p>",
        "{read}"
    );
    calc_works(&mut s);
}

#[test]
fn under_require_approval_all_a_dropped_in_plugin_runs_nothing_until_approved() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    std::fs::write(
        work.dir.path().join("toolhost.toml"),
        "[trust]\nrequire_approval = \"all\"\n",
    )
    .unwrap();
    work.put("calc", "calc");
    work.approve("calc");
    let mut s = StdioServer::start(&work, &[]);
    s.wait_for_list(|n| n.is_superset(&set(&CALC)));

    // Unapproved: not loaded, not even described; said so with the approve hint.
    work.put("c_checksum", "c_checksum");
    let line = s.wait_log(&["plugin c_checksum is not approved and not loaded"]);
    assert!(line.contains("toolhost approve c_checksum"), "{line}");
    assert_eq!(s.list(), set(&CALC));
    let r = s.call("c_add", json!({"x": 1, "y": 2}));
    assert!(error_text(&r).contains("not registered"), "{r}");

    // Approved while serving: the lock changes and the plugin loads.
    work.approve("c_checksum");
    s.wait_for_list(|n| n.contains("c_add"));
    let r = s.call("c_add", json!({"x": 40, "y": 2}));
    assert!(ok_text(&r).contains("42"), "{r}");
    calc_works(&mut s);
}

#[test]
fn replacing_a_component_changes_the_list_and_deleting_it_removes_its_tools() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    work.put("c_checksum", "tools");
    let mut s = StdioServer::start(&work, &[]);
    let first = s.wait_for_list(|n| n.contains("add") && n.contains("c_add"));

    // `tools.wasm` becomes the files component: c_* go, the files tools come.
    work.put("files", "tools");
    let now = s.wait_for_list(|n| n.contains("read_file"));
    assert!(!now.contains("c_add"), "{now:?}");
    assert!(now.is_superset(&set(&CALC)), "{now:?}");
    assert_ne!(first, now);
    let r = s.call("c_add", json!({"x": 1, "y": 2}));
    assert!(error_text(&r).contains("not registered"), "{r}");

    // Deleted: its tools vanish; the others stay.
    std::fs::remove_file(work.plugins().join("tools.wasm")).unwrap();
    let now = s.wait_for_list(|n| !n.contains("read_file"));
    assert_eq!(now, set(&CALC));
    calc_works(&mut s);
}

#[test]
fn a_squatter_dropped_in_while_serving_never_takes_a_served_name() {
    let Some(from) = plugins() else { return };
    if !from.join("fixtures/aaa_shadow.wasm").is_file() {
        panic!(
            "fixtures/aaa_shadow.wasm missing under {}: run `cargo xtask plugins`",
            from.display()
        );
    }
    let work = Work::new(&from);
    work.put("calc", "calc");
    let mut s = StdioServer::start(&work, &[]);
    s.wait_for_list(|n| n.is_superset(&set(&CALC)));

    // `aaa_shadow` (sorting before calc) describes `add` too: both become qualified, as a
    // restart with both files would give; the squatter never answers `add`.
    work.put("fixtures/aaa_shadow", "aaa_shadow");
    let now = s.wait_for_list(|n| n.contains("aaa_shadow__add") && n.contains("calc__add"));
    assert!(now.contains("calc__add") && !now.contains("add"), "{now:?}");
    let r = s.call("calc__add", json!({"x": 40, "y": 2}));
    assert!(ok_text(&r).contains("42"), "{r}");
    let r = s.call("add", json!({"x": 40, "y": 2}));
    assert!(!r.to_string().contains("shadowed"), "{r}");
    let r = s.call("aaa_shadow__add", json!({"x": 40, "y": 2}));
    assert!(ok_text(&r).contains("shadowed"), "{r}");

    // Gone: calc gets `add` back, as a restart with calc alone would give.
    std::fs::remove_file(work.plugins().join("aaa_shadow.wasm")).unwrap();
    s.wait_for_list(|n| *n == set(&CALC));
    calc_works(&mut s);
}

#[test]
fn bad_files_are_reported_and_disturb_nothing() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    let mut s = StdioServer::start(&work, &[]);
    s.wait_for_list(|n| n.is_superset(&set(&CALC)));

    // Garbage bytes.
    work.write("junk.wasm", b"\0asm this is not a component at all");
    let line = s.wait_log(&["junk.wasm", "not loaded"]);
    assert!(line.contains("WARN"), "{line}");
    // A file name that would drive the terminal: the report escapes it.
    work.write("esc\u{1b}[2Jname.wasm", b"garbage");
    let line = s.wait_log(&["[2Jname.wasm", "not loaded"]);
    assert!(!line.contains('\u{1b}'), "raw ESC in the log: {line:?}");
    // Half a component: the writer stopped half-way.
    let hostile = work.bytes("fixtures/hostile");
    work.write("half.wasm", &hostile[..hostile.len() / 2]);
    s.wait_log(&["half.wasm", "not loaded"]);
    // A component whose describe() breaks the registry's rules.
    work.put("fixtures/baddesc", "baddesc");
    s.wait_log(&["baddesc.wasm", "not loaded"]);
    // Garbage over a plugin that serves: the previous version keeps serving.
    let calc = work.bytes("calc");
    work.write("calc.wasm", &calc[..calc.len() / 3]);
    let line = s.wait_log(&["calc.wasm", "not loaded"]);
    assert!(line.contains("previous version keeps serving"), "{line}");

    assert_eq!(s.list(), set(&CALC));
    calc_works(&mut s);

    // The half file completed: it loads (unapproved, its pure tools work).
    work.write("half.wasm", &hostile);
    s.wait_for_list(|n| n.contains("burn"));
    let r = s.call("burn", json!({"depth": 1000}));
    ok_text(&r);
    // calc.wasm whole again: still (or again) the calc tools.
    work.write("calc.wasm", &calc);
    calc_works(&mut s);
}

#[test]
fn a_call_in_flight_finishes_on_its_version_while_the_plugin_is_replaced() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    work.put("fixtures/hostile", "slow");
    // A long `burn` needs more fuel and time than an unapproved plugin gets.
    std::fs::write(
        work.plugins().join("slow.toml"),
        "fuel = 10000000000000\ntimeout_ms = 600000\n",
    )
    .unwrap();
    work.approve("slow");
    let hostile = work.bytes("fixtures/hostile");
    let mut s = StdioServer::start(&work, &[]);

    // `burn` must still be running when the replacement is registered; if it finished
    // first, try again with more work (the outcome, not the time, decides).
    let mut depth: u64 = 3_000_000_000;
    for attempt in 0..4 {
        work.write("slow.wasm", &hostile);
        s.wait_for_list(|n| n.contains("burn") && n.contains("add"));
        let id = s.request(
            "tools/call",
            json!({"name": "burn", "arguments": {"depth": depth}}),
        );
        let mark = s.seen.len();
        // An approved plugin replaced by a different component nobody signed: held
        // (no signature by its signer vouches for it), so slow's tools go and none come.
        work.put("calc", "slow");
        let now = s.wait_for_list(|n| !n.contains("burn"));
        assert_eq!(
            now,
            set(&CALC),
            "calc's tools in slow.wasm must be withheld"
        );
        let r = s.response(id);
        let text = ok_text(&r);
        assert!(text.chars().any(|c| c.is_ascii_digit()), "{r}");
        let changed_at = s.seen[mark..]
            .iter()
            .position(
                |x| matches!(x, Seen::Notification(m) if m == "notifications/tools/list_changed"),
            )
            .map(|i| i + mark);
        let answered_at = s
            .seen
            .iter()
            .position(|x| matches!(x, Seen::Response(i) if *i == id));
        if let (Some(c), Some(a)) = (changed_at, answered_at)
            && a > c
        {
            s.wait_log(&["plugin slow is held", "approved unsigned"]);
            calc_works(&mut s);
            return;
        }
        eprintln!("attempt {attempt}: burn({depth}) finished before the reload; more work");
        depth *= 4;
    }
    panic!("burn always finished before the replacement was registered");
}

#[test]
fn no_watch_serves_the_folder_as_loaded() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    let mut s = StdioServer::start(&work, &["--no-watch"]);
    s.wait_for_list(|n| n.is_superset(&set(&CALC)));
    calc_works(&mut s);
}

#[test]
fn http_clients_learn_of_a_dropped_in_component_through_list_changed() {
    let Some(from) = plugins() else { return };
    let work = Work::new(&from);
    work.put("calc", "calc");
    let port = toolhost_testkit::free_port();
    struct Kill(Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Kill(
        work.command(&["serve", "--http", &format!("127.0.0.1:{port}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    // Bounded polls only so that a server that never comes up fails the test.
    let mut up = false;
    for _ in 0..3000 {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "serve --http exited"
        );
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(up, "toolhost serve --http did not listen on {port}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use toolhost::tools::{McpClient, McpTransport};
        let client = McpClient::new(
            "served",
            McpTransport::http(format!("http://127.0.0.1:{port}/mcp")),
        )
        .with_timeout(600);
        client.connect().await.unwrap();
        // The client caches the list and fetches it again only on list_changed.
        let names = || async {
            client
                .tools()
                .await
                .unwrap()
                .iter()
                .map(|t| t.name.clone())
                .collect::<BTreeSet<String>>()
        };
        let mut now = names().await;
        for _ in 0..3000 {
            if now.is_superset(&set(&CALC)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            now = names().await;
        }
        assert!(now.is_superset(&set(&CALC)), "{now:?}");
        work.put("c_checksum", "c_checksum");
        for _ in 0..3000 {
            if now.contains("c_add") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            now = names().await;
        }
        assert!(
            now.contains("c_add"),
            "the cached list never showed c_add (no list_changed?): {now:?}"
        );
        let out = client
            .call_tool("c_add", json!({"x": 40, "y": 2}))
            .await
            .unwrap();
        assert!(format!("{out:?}").contains("42"), "{out:?}");
        let _ = client.close().await;
    });
}
