//! A raw JSON-RPC line client over a child's stdio, and the timing loop the stdio
//! benchmarks share (`mcp`, `serve_path`): the same client for every server measured, so
//! the figures differ only by the server.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Warm-up calls before each timed series.
pub const WARM_UP: usize = 300;
/// Timed calls of each series.
pub const TIMED: usize = 1500;

/// A child speaking JSON-RPC lines on its stdin/stdout, killed on drop.
pub struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: String,
    buf: Vec<u8>,
}

impl Raw {
    /// Starts `cmd` with piped stdin/stdout (stderr dropped).
    pub fn spawn(cmd: &mut Command) -> std::io::Result<Self> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("stdout"))?;
        Ok(Self {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            line: String::new(),
            buf: Vec::new(),
        })
    }

    /// The child's process id (to attach a profiler).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes one message as one line.
    pub fn send(&mut self, v: &Value) -> std::io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, v)?;
        self.buf.push(b'\n');
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        stdin.write_all(&self.buf)?;
        stdin.flush()
    }

    /// Reads lines until one carries `id` (skipping notifications).
    pub fn recv_id(&mut self, id: i64) -> std::io::Result<Value> {
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
                return Err(std::io::Error::other("EOF"));
            }
            if let Ok(v) = serde_json::from_str::<Value>(&self.line)
                && v["id"] == json!(id)
            {
                return Ok(v);
            }
        }
    }

    /// One request and its answer.
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> std::io::Result<Value> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        self.recv_id(id)
    }

    /// `initialize` (2025-11-25) and `notifications/initialized`.
    pub fn handshake(&mut self) -> std::io::Result<()> {
        self.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }
}

impl Drop for Raw {
    /// Closes the child's stdin (the end of the session: a server exits, and a profiler
    /// wrapped around it writes its report), gives it 5 s, then kills it.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The median and p99 of a timed series.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// The middle sample.
    pub median: Duration,
    /// The sample 99 % of the others are at or under.
    pub p99: Duration,
    /// How many samples.
    pub n: usize,
}

/// Median and p99 of `v` (not empty).
pub fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    let n = v.len();
    Stats {
        median: v[n / 2],
        p99: v[(n * 99 / 100).min(n - 1)],
        n,
    }
}

/// [`WARM_UP`] then `timed` sequential `tools/call`s of `tool`, each checked to be a
/// success; ids start at 1.
pub fn time_calls_n(
    raw: &mut Raw,
    tool: &str,
    args: Value,
    timed: usize,
) -> std::io::Result<Stats> {
    let params = json!({"name": tool, "arguments": args});
    let mut id = 1;
    for _ in 0..WARM_UP {
        raw.request(id, "tools/call", params.clone())?;
        id += 1;
    }
    let mut samples = Vec::with_capacity(timed);
    for _ in 0..timed {
        let t = Instant::now();
        let r = raw.request(id, "tools/call", params.clone())?;
        samples.push(t.elapsed());
        if r.get("error").is_some() || r["result"]["isError"] == json!(true) {
            return Err(std::io::Error::other(format!("call failed: {r}")));
        }
        id += 1;
    }
    Ok(stats(samples))
}

/// [`time_calls_n`] with [`TIMED`] calls.
#[allow(dead_code)]
pub fn time_calls(raw: &mut Raw, tool: &str, args: Value) -> std::io::Result<Stats> {
    time_calls_n(raw, tool, args, TIMED)
}
