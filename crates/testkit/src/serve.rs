//! [`ServeHttp`]: a real `toolhost serve --http` process on a free loopback port, started
//! and stopped the same way by every test that needs one.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `toolhost serve --http 127.0.0.1:0 -v`; killed when dropped.
pub struct ServeHttp {
    child: Child,
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    log: Arc<Mutex<String>>,
}

impl ServeHttp {
    /// Starts `bin serve --http 127.0.0.1:0 -v ARGS` in `dir` (with `env` added) and waits,
    /// at most `wait`, until it listens and has printed `ready` on stderr (e.g. `"all tools
    /// loaded"`). Panics with its stderr when it does not.
    pub fn start(
        bin: &Path,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        ready: &str,
        wait: Duration,
    ) -> Self {
        let mut child = Command::new(bin)
            .current_dir(dir)
            .args(["serve", "--http", "127.0.0.1:0", "-v"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn toolhost serve");
        let log = Arc::new(Mutex::new(String::new()));
        let stderr = child.stderr.take().expect("piped stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let t0 = Instant::now();
        let mut server = Self {
            child,
            url: String::new(),
            log,
        };
        loop {
            let text = server.stderr();
            if server.url.is_empty()
                && let Some(rest) = text.split("serving MCP at ").nth(1)
            {
                server.url = rest.split_whitespace().next().unwrap_or("").to_string();
            }
            if !server.url.is_empty() && text.contains(ready) {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("toolhost serve exited ({status}) before it was ready:\n{text}");
            }
            assert!(
                t0.elapsed() < wait,
                "toolhost serve was not ready ({ready:?}) within {wait:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `127.0.0.1:PORT` of the MCP endpoint.
    pub fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    }

    /// `HOST:PORT` of the admin endpoints (`--admin`), once it printed them.
    pub fn admin_addr(&self) -> Option<String> {
        let text = self.stderr();
        let rest = text.split("admin endpoints at http://").nth(1)?;
        Some(rest.split_whitespace().next()?.to_string())
    }

    /// Waits at most `wait` for the process to exit; its status, if it did.
    pub fn wait_exit(&mut self, wait: Duration) -> Option<std::process::ExitStatus> {
        let t0 = Instant::now();
        while t0.elapsed() < wait {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// What it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for ServeHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
