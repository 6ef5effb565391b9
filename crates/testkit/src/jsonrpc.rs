//! A raw JSON-RPC line client over a child's stdio, for tests that drive
//! `toolhost serve --stdio` (or any stdio MCP server) message by message: what the
//! server writes is read on a thread, checked to be JSON (stdout carries protocol only),
//! and handed over with a bound, so a hung server fails the test instead of hanging it.
//!
//! Benchmarks keep their own direct-read client: the hop through this reader thread
//! would sit in the timed path.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// How long [`StdioClient`] waits for one message before it fails the test: far above
/// any honest answer on a loaded debug build, only there to end a hang.
pub const REPLY_BOUND: Duration = Duration::from_secs(600);

/// A child speaking newline-delimited JSON-RPC on its stdin/stdout; killed on drop.
pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    /// The methods of the notifications read so far (while waiting for responses), in
    /// order of arrival.
    pub notifications: Vec<String>,
}

impl StdioClient {
    /// Spawns `cmd` with piped stdin and stdout (stderr as the command sets it).
    pub fn spawn(cmd: &mut Command) -> StdioClient {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        StdioClient {
            child,
            stdin,
            lines: rx,
            notifications: Vec::new(),
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the child is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Writes one message and flushes.
    pub fn send(&mut self, v: Value) {
        let mut text = v.to_string();
        text.push('\n');
        self.stdin
            .write_all(text.as_bytes())
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|e| panic!("the server closed its stdin: {e}"));
    }

    /// The next message, whatever it is (a response or a notification); panics when the
    /// server exits or stays silent for [`REPLY_BOUND`].
    pub fn next_message(&mut self) -> Value {
        self.lines
            .recv_timeout(REPLY_BOUND)
            .expect("the server answered nothing within the bound, or exited")
    }

    /// Reads until the response with `id`, booking notifications on the way.
    pub fn response(&mut self, id: u64) -> Value {
        loop {
            let v = self.next_message();
            if v["id"] == json!(id) {
                return v;
            }
            if let Some(m) = v["method"].as_str() {
                self.notifications.push(m.to_string());
            }
        }
    }

    /// Sends a request and waits for its response.
    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    /// The MCP handshake (request id 0 is used): `initialize`, then
    /// `notifications/initialized`. Returns the `initialize` response.
    pub fn initialize(&mut self, client: &str) -> Value {
        let init = self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": client, "version": "0"}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    /// `tools/list`: the names of the tools listed.
    pub fn list(&mut self, id: u64) -> std::collections::BTreeSet<String> {
        let r = self.request(id, "tools/list", json!({}));
        tool_names(&r["result"]["tools"])
    }

    /// `tools/call` of `tool` with `args`: the whole response.
    pub fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
    }

    /// How many notifications of `method` were booked so far.
    pub fn count(&self, method: &str) -> usize {
        self.notifications.iter().filter(|m| *m == method).count()
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `name`s of a JSON array of tools (an MCP `tools/list` result's `tools`, or
/// `toolhost list --json`'s).
pub fn tool_names(tools: &Value) -> std::collections::BTreeSet<String> {
    tools
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
