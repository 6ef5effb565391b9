//! Test support: the real peers (Debian `docker-registry`, `minisign`), the real compiled
//! `calc` component, and a free-port helper.
//!
//! A missing peer skips the test with a note outside CI and fails it in CI (`CI=true`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::{Context, bail};
use toolhost_dist::OciRef;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A peer program: `$ENV`, else `default` (an absolute path or a name on PATH). `Ok(None)`
/// (skip) when missing outside CI, an error in CI.
fn peer(env: &str, default: &str) -> anyhow::Result<Option<PathBuf>> {
    let candidate = std::env::var_os(env)
        .map(PathBuf::from)
        .or_else(|| {
            let p = Path::new(default);
            if p.is_absolute() {
                Some(p.to_path_buf())
            } else {
                std::env::var_os("PATH").and_then(|path| {
                    std::env::split_paths(&path)
                        .map(|d| d.join(default))
                        .find(|p| p.is_file())
                })
            }
        })
        .filter(|p| p.is_file());
    if candidate.is_none() {
        let msg = format!(
            "{default} is missing: run `cargo xtask peers` (it installs the Debian package), or set {env}"
        );
        if in_ci() {
            bail!("{msg}");
        }
        eprintln!("SKIPPED (not CI): {msg}");
    }
    Ok(candidate)
}

/// The bytes of the real `calc` component (built by `cargo xtask plugins`, or here).
pub fn calc_wasm() -> Vec<u8> {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        let from_env = std::env::var_os("TOOLHOST_TEST_PLUGINS")
            .map(|d| PathBuf::from(d).join("calc.wasm"))
            .filter(|p| p.is_file());
        if let Some(p) = from_env {
            return p;
        }
        let built = root().join("target/plugins/calc.wasm");
        if built.is_file() {
            return built;
        }
        // Build only the calc example into target/guest, as the wasm crate's tests do.
        let target = root().join("target/guest");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .current_dir(root().join("plugins"))
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "-p",
                "calc",
            ])
            .arg("--target-dir")
            .arg(&target)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .output()
            .unwrap_or_else(|e| panic!("cannot run cargo: {e}"));
        assert!(
            out.status.success(),
            "building the calc guest failed (`cargo xtask plugins` installs the target):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target.join("wasm32-wasip2/release/calc.wasm")
    });
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The calc example's request file (its policy), as shipped beside the component.
pub fn calc_request() -> String {
    std::fs::read_to_string(root().join("plugins/calc.toml")).expect("plugins/calc.toml")
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running Debian `docker-registry` on 127.0.0.1 with its storage in a temporary folder.
/// Killed (by its PID) on drop.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The storage folder (`storage.filesystem.rootdirectory`).
    pub storage: PathBuf,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Starts a registry and waits until `/v2/` answers. `Ok(None)`: not installed (not CI).
    pub async fn start() -> anyhow::Result<Option<Registry>> {
        let Some(exe) = peer("TOOLHOST_DOCKER_REGISTRY", "/usr/bin/docker-registry")? else {
            return Ok(None);
        };
        let dir = tempfile::tempdir()?;
        let storage = dir.path().join("storage");
        std::fs::create_dir_all(&storage)?;
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
                storage.display()
            ),
        )?;
        let log = std::fs::File::create(dir.path().join("registry.log"))?;
        let child = Command::new(&exe)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let mut reg = Registry {
            child,
            addr,
            storage,
            _dir: dir,
        };
        let url = format!("http://{}/v2/", reg.addr);
        let client = reqwest::Client::new();
        // Poll until the registry answers (bounded: 200 tries); an exit means it failed.
        for _ in 0..200 {
            if let Some(status) = reg.child.try_wait()? {
                let log = std::fs::read_to_string(reg._dir.path().join("registry.log"))
                    .unwrap_or_default();
                bail!("docker-registry exited with {status}:\n{log}");
            }
            if client
                .get(&url)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return Ok(Some(reg));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("docker-registry did not answer {url}")
    }

    /// `oci://127.0.0.1:PORT/REPO_TAG` parsed.
    pub fn oci(&self, repo_and_tag: &str) -> OciRef {
        OciRef::parse(&format!("oci://{}/{repo_and_tag}", self.addr)).expect("a valid reference")
    }

    /// The file where the registry keeps the blob `sha256:HEX`.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minisign key pair made by the real tool (`minisign -G -W`).
pub struct Keys {
    /// The `minisign` binary.
    pub minisign: PathBuf,
    /// The public-key line (`RWQ…`): what `[trust] keys` holds.
    pub public: String,
    /// The key id minisign printed in the `.pub` file's comment.
    pub key_id: String,
    /// The `.pub` file.
    pub public_file: PathBuf,
    /// The unencrypted secret key file.
    pub secret_file: PathBuf,
    /// The folder holding both (and scratch files of the test).
    pub dir: tempfile::TempDir,
}

impl Keys {
    /// Generates a key pair with `minisign -G -W`. `Ok(None)`: not installed (not CI).
    pub fn generate() -> anyhow::Result<Option<Keys>> {
        let Some(minisign) = peer("TOOLHOST_MINISIGN", "minisign")? else {
            return Ok(None);
        };
        let dir = tempfile::tempdir()?;
        let public_file = dir.path().join("key.pub");
        let secret_file = dir.path().join("key.sec");
        let out = Command::new(&minisign)
            .args(["-G", "-W", "-p"])
            .arg(&public_file)
            .arg("-s")
            .arg(&secret_file)
            .output()?;
        if !out.status.success() {
            bail!(
                "minisign -G failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let text = std::fs::read_to_string(&public_file)?;
        let public = text
            .lines()
            .last()
            .context("empty .pub")?
            .trim()
            .to_string();
        // "untrusted comment: minisign public key 0123456789ABCDEF"
        let key_id = text
            .lines()
            .next()
            .and_then(|l| l.rsplit(' ').next())
            .context("no key id in the .pub comment")?
            .to_string();
        Ok(Some(Keys {
            minisign,
            public,
            key_id,
            public_file,
            secret_file,
            dir,
        }))
    }

    /// Signs `bytes` with `minisign -S` (the real tool); returns the `.minisig` text.
    pub fn minisign_sign(&self, bytes: &[u8]) -> anyhow::Result<String> {
        let file = self.dir.path().join("to-sign.wasm");
        std::fs::write(&file, bytes)?;
        let out = Command::new(&self.minisign)
            .arg("-S")
            .arg("-s")
            .arg(&self.secret_file)
            .arg("-m")
            .arg(&file)
            .output()?;
        if !out.status.success() {
            bail!(
                "minisign -S failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(std::fs::read_to_string(
            self.dir.path().join("to-sign.wasm.minisig"),
        )?)
    }

    /// Verifies `signature` of `bytes` with `minisign -V` (the real tool): true if it accepts.
    pub fn minisign_verify(&self, bytes: &[u8], signature: &str) -> anyhow::Result<bool> {
        let file = self.dir.path().join("to-verify.wasm");
        let sig = self.dir.path().join("to-verify.wasm.minisig");
        std::fs::write(&file, bytes)?;
        std::fs::write(&sig, signature)?;
        let out = Command::new(&self.minisign)
            .arg("-V")
            .arg("-p")
            .arg(&self.public_file)
            .arg("-m")
            .arg(&file)
            .arg("-x")
            .arg(&sig)
            .output()?;
        Ok(out.status.success())
    }
}
