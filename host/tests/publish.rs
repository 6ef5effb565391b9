//! `toolhost publish` end to end: the real binary pushes the real `calc` component to a real
//! Debian `docker-registry` on 127.0.0.1, signing it with a key made by the real `minisign`;
//! the artifact is fetched back with toolhost-dist and its signature checked by `minisign -V`.
//! A signature file that is not one is refused before anything is pushed.
//!
//! Peers (installed by `cargo xtask peers`): `docker-registry`, `minisign`. Missing: skipped
//! with a note outside CI, a failure in CI (`CI=true`).

// Test code: unwrap on set-up failures is the clearest report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use toolhost_dist::{FetchOptions, Source, fetch, sha256_digest, verify_signature};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn peer(env: &str, default: &str) -> Option<PathBuf> {
    let p = std::env::var_os(env).map(PathBuf::from).or_else(|| {
        if Path::new(default).is_absolute() {
            Some(PathBuf::from(default))
        } else {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|d| d.join(default))
                .find(|p| p.is_file())
        }
    });
    if let Some(p) = p.filter(|p| p.is_file()) {
        return Some(p);
    }
    let msg = format!("{default} is missing (env {env}); install it with `cargo xtask peers`");
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

fn calc() -> Option<PathBuf> {
    let p = std::env::var_os("TOOLHOST_TEST_PLUGINS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/plugins"))
        .join("calc.wasm");
    if p.is_file() {
        return Some(p);
    }
    let msg = "calc.wasm is not built: run `cargo xtask plugins`";
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{msg}");
    }
    eprintln!("SKIPPED: {msg}");
    None
}

/// A registry on a free 127.0.0.1 port; killed by PID on drop.
struct Registry {
    child: Child,
    addr: String,
}

impl Registry {
    fn start(exe: &Path, dir: &Path) -> Registry {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.join("registry.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
                dir.join("storage").display()
            ),
        )
        .unwrap();
        let child = Command::new(exe)
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut reg = Registry { child, addr };
        // Poll `/v2/` until it answers 200 (bounded; an exit means the registry failed).
        for _ in 0..200 {
            assert!(
                reg.child.try_wait().unwrap().is_none(),
                "docker-registry exited"
            );
            if let Ok(mut s) = std::net::TcpStream::connect(&reg.addr) {
                let _ = write!(s, "GET /v2/ HTTP/1.0\r\nHost: {}\r\n\r\n", reg.addr);
                let mut head = [0u8; 12];
                if s.read_exact(&mut head).is_ok() && head.ends_with(b"200") {
                    return reg;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("docker-registry did not answer on {}", reg.addr);
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn toolhost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .env_remove("TOOLHOST_REGISTRY_USER")
        .output()
        .unwrap()
}

#[tokio::test]
async fn publish_signs_and_pushes_and_refuses_a_bad_signature_file() {
    let (Some(registry), Some(minisign), Some(calc)) = (
        peer("TOOLHOST_DOCKER_REGISTRY", "/usr/bin/docker-registry"),
        peer("TOOLHOST_MINISIGN", "minisign"),
        calc(),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let reg = Registry::start(&registry, dir.path());
    // The component with its request file beside it, as a plugin author has them.
    let wasm_path = dir.path().join("calc.wasm");
    std::fs::copy(&calc, &wasm_path).unwrap();
    let request = "timeout_ms = 1000\n";
    std::fs::write(dir.path().join("calc.toml"), request).unwrap();
    let (public, secret) = (dir.path().join("k.pub"), dir.path().join("k.sec"));
    let out = Command::new(&minisign)
        .args(["-G", "-W", "-p"])
        .arg(&public)
        .arg("-s")
        .arg(&secret)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    // Hostile: a "signature" that is not one is refused, and nothing is pushed.
    let bogus = dir.path().join("bogus.minisig");
    std::fs::write(&bogus, "not a signature").unwrap();
    let target = format!("oci://{}/tools/calc:1.0", reg.addr);
    let wasm_arg = wasm_path.display().to_string();
    let out = toolhost(&[
        "publish",
        &wasm_arg,
        &target,
        "--signature",
        &bogus.display().to_string(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a minisign signature"), "{stderr}");
    assert!(
        fetch(&Source::parse(&target).unwrap(), &FetchOptions::default())
            .await
            .is_err(),
        "nothing was pushed"
    );

    // Good call: --sign with the minisign key.
    let out = toolhost(&[
        "publish",
        &wasm_arg,
        &target,
        "--sign",
        &secret.display().to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let wasm = std::fs::read(&wasm_path).unwrap();
    assert!(stdout.contains(&sha256_digest(&wasm)), "{stdout}");

    let got = fetch(&Source::parse(&target).unwrap(), &FetchOptions::default())
        .await
        .unwrap();
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.request.as_deref(), Some(request));
    let sig = got.signature.expect("a signature layer");
    // The real minisign accepts the signature toolhost made.
    let sig_path = dir.path().join("calc.wasm.minisig");
    std::fs::write(&sig_path, &sig).unwrap();
    let out = Command::new(&minisign)
        .arg("-V")
        .arg("-p")
        .arg(&public)
        .arg("-m")
        .arg(&wasm_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "minisign -V: {out:?}");
    let key = std::fs::read_to_string(&public).unwrap();
    assert!(verify_signature(&wasm, &sig, &[key]).is_ok());
}
