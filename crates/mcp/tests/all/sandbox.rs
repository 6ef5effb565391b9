//! Stdio MCP servers inside their sandbox (`McpTransport::SandboxedStdio`: Landlock and
//! seccomp on Linux). The hostile fixture `hostile_server.py` tries to read a secret
//! (itself and through `/bin/cat`) and
//! the test process's environment, write outside its grant, reach real TCP and UDP
//! listeners, connect to a named and an abstract Unix socket and signal the test process:
//! under a
//! sandbox each is refused by the kernel, and a good call (reading the granted file,
//! writing the granted folder) still works. The same server without a sandbox succeeds at
//! all of it (so these tests can fail), and `network = true` lets TCP through while the
//! files stay confined. A sandbox that cannot be built fails closed: the server never
//! starts.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolhost_mcp::{McpClient, McpClientError, McpSandbox, McpSandboxError, McpTransport};

use crate::support;

const EACCES: i64 = 13;
const EPERM: i64 = 1;

/// Everything a hostile call can aim at, made by the test.
struct World {
    /// Granted for reading: holds `data.txt`.
    granted: PathBuf,
    /// Granted for writing.
    out: PathBuf,
    /// Not granted: a home folder with `.ssh/id_ed25519`, and room for a planted file.
    home: PathBuf,
    tcp: TcpListener,
    udp: UdpSocket,
    abstract_name: String,
    _abstract: UnixListener,
    /// A named Unix socket outside the grant (think ssh-agent or docker.sock).
    named: PathBuf,
    _named: UnixListener,
}

impl World {
    fn new(tag: &str) -> Self {
        let granted = toolhost_testkit::temp_dir(&format!("sandbox-{tag}-granted"));
        std::fs::write(granted.join("data.txt"), "granted content\n").unwrap();
        let out = toolhost_testkit::temp_dir(&format!("sandbox-{tag}-out"));
        let home = toolhost_testkit::temp_dir(&format!("sandbox-{tag}-home"));
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY MATERIAL\n").unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp.set_nonblocking(true).unwrap();
        let abstract_name = format!(
            "toolhost-test-sandbox-{tag}-{}-{}",
            std::process::id(),
            home.display().to_string().len()
        );
        let addr = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let abstract_listener = UnixListener::bind_addr(&addr).unwrap();
        abstract_listener.set_nonblocking(true).unwrap();
        let named = home.join("agent.sock");
        let named_listener = UnixListener::bind(&named).unwrap();
        Self {
            granted,
            out,
            home,
            tcp,
            udp,
            abstract_name,
            _abstract: abstract_listener,
            named,
            _named: named_listener,
        }
    }

    fn secret(&self) -> PathBuf {
        self.home.join(".ssh/id_ed25519")
    }

    fn planted(&self) -> PathBuf {
        self.home.join("planted.txt")
    }

    /// Whether the TCP listener got a connection (the listener is non-blocking, so this
    /// looks at what already happened and never waits).
    fn tcp_was_reached(&self) -> bool {
        match self.tcp.accept() {
            Ok((mut s, _)) => {
                s.set_nonblocking(false).unwrap();
                let mut line = String::new();
                let _ = s.read_to_string(&mut line);
                assert_eq!(line, "hello from the sandbox\n");
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("accept: {e}"),
        }
    }

    /// Whether the UDP socket got a datagram (non-blocking, never waits).
    fn udp_was_reached(&self) -> bool {
        let mut buf = [0u8; 64];
        match self.udp.recv(&mut buf) {
            Ok(n) => {
                assert_eq!(&buf[..n], b"leak");
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("recv: {e}"),
        }
    }
}

/// What the venv Python needs to start: the venv, the Python it was made from, and the
/// fixture script's folder.
fn python_runtime(python: &Path) -> Vec<PathBuf> {
    let venv = python
        .parent()
        .and_then(Path::parent)
        .expect("venv/bin/python")
        .to_path_buf();
    let out = std::process::Command::new(python)
        .args(["-c", "import sys; print(sys.base_prefix)"])
        .output()
        .unwrap();
    let base = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert!(base.is_absolute(), "sys.base_prefix: {base:?}");
    let fixtures = support::fixture("hostile_server.py")
        .parent()
        .unwrap()
        .to_path_buf();
    vec![venv, base, fixtures]
}

fn hostile(python: &Path, sandbox: Option<McpSandbox>, env: Vec<(String, String)>) -> McpClient {
    let command = python.display().to_string();
    let args = vec![support::fixture("hostile_server.py").display().to_string()];
    let transport = match sandbox {
        Some(sandbox) => McpTransport::SandboxedStdio {
            command,
            args,
            env,
            sandbox,
        },
        None => McpTransport::Stdio { command, args, env },
    };
    McpClient::new("hostile", transport).with_timeout(30)
}

fn sandbox_for(python: &Path, world: &World, network: bool) -> McpSandbox {
    let mut read = python_runtime(python);
    read.push(world.granted.clone());
    McpSandbox {
        read,
        write: vec![world.out.clone()],
        network,
    }
}

/// Calls a fixture tool and returns its report (`{"ok": ..., ...}`).
async fn call(client: &McpClient, tool: &str, args: Value) -> Value {
    let out = client
        .call_tool_output(tool, args, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    // The fixture's dict comes back as structured content, possibly wrapped in
    // `{"result": ...}`, or as its JSON text.
    let mut v = out.canonical;
    if let Some(inner) = v.get("result").filter(|_| v.get("ok").is_none()) {
        v = inner.clone();
    }
    match v {
        Value::String(text) => serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{tool}: not a JSON report ({e}): {text}")),
        v => v,
    }
}

fn assert_denied(report: &Value, errno: i64, what: &str) {
    assert_eq!(report["ok"], false, "{what} must be denied: {report}");
    assert_eq!(report["errno"], errno, "{what}: {report}");
}

fn assert_ok(report: &Value, what: &str) {
    assert_eq!(report["ok"], true, "{what} must work: {report}");
}

/// Runs every hostile probe against `client`; returns the reports by name.
async fn probe_all(client: &McpClient, world: &World) -> Vec<(&'static str, Value)> {
    let environ = format!("/proc/{}/environ", std::process::id());
    vec![
        (
            "read secret",
            call(client, "read_file", json!({"path": world.secret()})).await,
        ),
        (
            "child process reads secret",
            call(client, "spawn_cat", json!({"path": world.secret()})).await,
        ),
        (
            "read host environ",
            call(client, "read_file", json!({"path": environ})).await,
        ),
        (
            "write outside",
            call(
                client,
                "write_file",
                json!({"path": world.planted(), "text": "planted"}),
            )
            .await,
        ),
        (
            "tcp connect",
            call(
                client,
                "connect",
                json!({"host": "127.0.0.1", "port": world.tcp.local_addr().unwrap().port()}),
            )
            .await,
        ),
        (
            "udp send",
            call(
                client,
                "udp_send",
                json!({"host": "127.0.0.1", "port": world.udp.local_addr().unwrap().port(), "text": "leak"}),
            )
            .await,
        ),
        (
            "abstract unix connect",
            call(
                client,
                "abstract_connect",
                json!({"name": world.abstract_name}),
            )
            .await,
        ),
        (
            "named unix connect",
            call(client, "unix_connect", json!({"path": world.named})).await,
        ),
        (
            "signal the host",
            call(client, "signal", json!({"pid": std::process::id()})).await,
        ),
    ]
}

/// The good calls that must work inside the sandbox: read the granted file, write the
/// granted folder.
async fn good_calls(client: &McpClient, world: &World) {
    let read = call(
        client,
        "read_file",
        json!({"path": world.granted.join("data.txt")}),
    )
    .await;
    assert_ok(&read, "reading the granted file");
    assert_eq!(read["content"], "granted content\n");
    let wrote = call(
        client,
        "write_file",
        json!({"path": world.out.join("result.txt"), "text": "written"}),
    )
    .await;
    assert_ok(&wrote, "writing the granted folder");
    assert_eq!(
        std::fs::read_to_string(world.out.join("result.txt")).unwrap(),
        "written"
    );
}

#[tokio::test]
async fn sandboxed_server_is_denied_outside_its_grant_and_good_calls_still_work() {
    support::init_tracing();
    let Some(python) = support::python() else {
        return;
    };
    let world = World::new("deny");
    let client = hostile(&python, Some(sandbox_for(&python, &world, false)), vec![]);
    client.connect().await.unwrap();

    let reports = probe_all(&client, &world).await;
    for (what, report) in &reports {
        // Landlock's filesystem and network rules and the seccomp filter answer EACCES;
        // Landlock's signal scope answers EPERM.
        let errno = if *what == "signal the host" {
            EPERM
        } else {
            EACCES
        };
        assert_denied(report, errno, what);
    }
    assert!(!world.planted().exists(), "nothing was planted outside");
    assert!(!world.tcp_was_reached(), "the TCP listener was not reached");
    assert!(!world.udp_was_reached(), "no UDP datagram left the sandbox");

    good_calls(&client, &world).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn the_same_server_without_a_sandbox_can_do_all_of_it() {
    let Some(python) = support::python() else {
        return;
    };
    let world = World::new("open");
    let client = hostile(&python, None, vec![]);
    client.connect().await.unwrap();

    let reports = probe_all(&client, &world).await;
    for (what, report) in &reports {
        assert_ok(report, what);
    }
    assert_eq!(reports[0].1["content"], "PRIVATE KEY MATERIAL\n");
    assert_eq!(std::fs::read_to_string(world.planted()).unwrap(), "planted");
    assert!(world.tcp_was_reached(), "the TCP listener was reached");
    assert!(world.udp_was_reached(), "the UDP datagram arrived");

    good_calls(&client, &world).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn network_true_lets_tcp_through_while_files_stay_confined() {
    let Some(python) = support::python() else {
        return;
    };
    let world = World::new("net");
    let client = hostile(&python, Some(sandbox_for(&python, &world, true)), vec![]);
    client.connect().await.unwrap();

    let port = world.tcp.local_addr().unwrap().port();
    let tcp = call(
        &client,
        "connect",
        json!({"host": "127.0.0.1", "port": port}),
    )
    .await;
    assert_ok(&tcp, "TCP with network = true");
    assert!(world.tcp_was_reached(), "the TCP listener was reached");

    let secret = call(&client, "read_file", json!({"path": world.secret()})).await;
    assert_denied(&secret, EACCES, "read secret with network = true");
    let signal = call(&client, "signal", json!({"pid": std::process::id()})).await;
    assert_denied(&signal, EPERM, "signal with network = true");
    let named = call(&client, "unix_connect", json!({"path": world.named})).await;
    assert_denied(&named, EACCES, "named unix connect with network = true");
    let abstract_ = call(
        &client,
        "abstract_connect",
        json!({"name": world.abstract_name}),
    )
    .await;
    assert_denied(
        &abstract_,
        EACCES,
        "abstract unix connect with network = true",
    );

    good_calls(&client, &world).await;
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_sandbox_that_cannot_be_built_fails_closed() {
    let Some(python) = support::python() else {
        return;
    };
    let world = World::new("closed");
    let log = world.out.join("started.log");
    let env = vec![("HOSTILE_LOG".to_string(), log.display().to_string())];

    let mut missing = sandbox_for(&python, &world, false);
    let gone = world.home.join("no-such-folder");
    missing.read.push(gone.clone());
    let client = hostile(&python, Some(missing), env.clone());
    let err = client.connect().await.unwrap_err();
    match &err {
        McpClientError::Sandbox {
            server,
            source: McpSandboxError::MissingPath { list, path, .. },
        } => {
            assert_eq!(server, "hostile");
            assert_eq!(*list, "read");
            assert_eq!(path, &gone);
        }
        other => panic!("expected a missing-path sandbox error, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("'hostile'") && msg.contains("no-such-folder"),
        "{msg}"
    );

    let mut relative = sandbox_for(&python, &world, false);
    relative.write.push("out".into());
    let err = hostile(&python, Some(relative), env.clone())
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            McpClientError::Sandbox {
                source: McpSandboxError::RelativePath { list: "write", .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!log.exists(), "a server whose sandbox failed never started");

    // The good call: the same server with a valid sandbox starts (and logs that it did).
    let client = hostile(&python, Some(sandbox_for(&python, &world, false)), env);
    client.connect().await.unwrap();
    good_calls(&client, &world).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "started\n");
    client.close().await.unwrap();
}

/// A `tracing` writer that keeps what was logged.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn an_unsandboxed_server_is_warned_about_once_and_a_sandboxed_one_not_at_all() {
    let Some(python) = support::python() else {
        return;
    };
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .finish();
    // The test runtime is single-threaded, so the connect below logs on this thread.
    let _guard = tracing::subscriber::set_default(subscriber);

    let world = World::new("warn");
    let sandboxed = hostile(&python, Some(sandbox_for(&python, &world, false)), vec![]);
    sandboxed.connect().await.unwrap();
    sandboxed.close().await.unwrap();
    assert!(!logs.text().contains("unsandboxed"), "{}", logs.text());

    // Connected twice (the second start is a new child process): warned once.
    let open = hostile(&python, None, vec![]);
    open.connect().await.unwrap();
    open.close().await.unwrap();
    open.connect().await.unwrap();
    assert_ok(
        &call(
            &open,
            "read_file",
            json!({"path": world.granted.join("data.txt")}),
        )
        .await,
        "reading after the second start",
    );
    open.close().await.unwrap();
    let text = logs.text();
    assert_eq!(
        text.matches("server hostile runs unsandboxed").count(),
        1,
        "{text}"
    );
    assert!(text.contains("add `sandbox = {"), "{text}");
}

#[tokio::test]
async fn node_filesystem_server_runs_sandboxed_and_its_own_allowlist_cannot_widen_it() {
    let Some(script) = support::filesystem() else {
        return;
    };
    let world = World::new("node");
    // The node_modules tree the script lives in (…/node/node_modules/@scope/pkg/dist).
    let modules = script
        .ancestors()
        .find(|p| p.ends_with("node_modules"))
        .expect("the script lives in a node_modules folder")
        .to_path_buf();
    // server-filesystem is told it may serve the home folder too (a misconfiguration);
    // the sandbox only grants the granted folder, and wins.
    let client = McpClient::new(
        "fs",
        McpTransport::SandboxedStdio {
            command: "node".into(),
            args: vec![
                script.display().to_string(),
                world.granted.display().to_string(),
                world.home.display().to_string(),
            ],
            env: Vec::new(),
            sandbox: McpSandbox {
                read: vec![modules, world.granted.clone()],
                write: Vec::new(),
                network: false,
            },
        },
    )
    .with_timeout(30);
    client.connect().await.unwrap();

    let err = client
        .call_tool("read_text_file", json!({"path": world.secret()}))
        .await
        .unwrap_err();
    match &err {
        McpClientError::ToolFailed { message, .. } => {
            assert!(
                message.contains("EACCES") || message.contains("ermission denied"),
                "{message}"
            );
            assert!(!message.contains("PRIVATE KEY"), "{message}");
        }
        other => panic!("expected a denied read, got {other:?}"),
    }

    let out = client
        .call_tool_output(
            "read_text_file",
            json!({"path": world.granted.join("data.txt")}),
            &Default::default(),
        )
        .await
        .unwrap();
    assert!(out.render.contains("granted content"), "{}", out.render);
    client.close().await.unwrap();
}
