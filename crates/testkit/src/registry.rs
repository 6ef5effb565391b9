//! A real OCI registry for tests: the Debian `docker-registry` on a free 127.0.0.1 port,
//! its storage in a temporary folder, killed on drop.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::peers::peer;

/// A running `docker-registry`; killed (by its PID) on drop.
pub struct DockerRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The storage folder (`storage.filesystem.rootdirectory`).
    pub storage: PathBuf,
    dir: tempfile::TempDir,
}

impl DockerRegistry {
    /// Starts a registry (`$TOOLHOST_DOCKER_REGISTRY`, else `/usr/bin/docker-registry`)
    /// and waits until `/v2/` answers 200. `Ok(None)`: not installed, outside CI (a panic
    /// in CI). An error when it exits or never answers (its log is in the message).
    pub fn start() -> std::io::Result<Option<DockerRegistry>> {
        let Some(exe) = peer(
            "TOOLHOST_DOCKER_REGISTRY",
            PathBuf::from("/usr/bin/docker-registry"),
        ) else {
            return Ok(None);
        };
        let dir = tempfile::tempdir()?;
        let storage = dir.path().join("storage");
        std::fs::create_dir_all(&storage)?;
        let addr = format!("127.0.0.1:{}", crate::free_port());
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
            .spawn()?;
        let mut reg = DockerRegistry {
            child,
            addr,
            storage,
            dir,
        };
        // Poll `/v2/` (bounded: 200 tries, 50 ms apart); an exit means it failed.
        for _ in 0..200 {
            if let Some(status) = reg.child.try_wait()? {
                return Err(std::io::Error::other(format!(
                    "docker-registry exited with {status}:\n{}",
                    reg.log()
                )));
            }
            if let Ok(mut s) = std::net::TcpStream::connect(&reg.addr) {
                let _ = write!(s, "GET /v2/ HTTP/1.0\r\nHost: {}\r\n\r\n", reg.addr);
                let mut head = [0u8; 12];
                if s.read_exact(&mut head).is_ok() && head.ends_with(b"200") {
                    return Ok(Some(reg));
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(std::io::Error::other(format!(
            "docker-registry did not answer on {}:\n{}",
            reg.addr,
            reg.log()
        )))
    }

    /// What the registry logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// The file where the registry keeps the blob `sha256:HEX`.
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(hex.get(..2).unwrap_or(hex))
            .join(hex)
            .join("data")
    }
}

impl Drop for DockerRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
