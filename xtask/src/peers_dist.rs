//! Debian test peers, installed with apt-get when missing: for the distribution work
//! (crates/dist) `docker-registry` (the CNCF distribution registry, 2.8) and `minisign`
//! (0.11); for the replica tests (`cli/tests/all/replicas.rs`) `haproxy`, the load balancer
//! two `serve --http` replicas run behind.
//!
//! The tests start the registry themselves (`docker-registry serve CONFIG.yml` on a free
//! 127.0.0.1 port, storage in a temporary folder) and run `minisign` to make keys and
//! signatures, so signatures are checked against the real tool both ways.

use std::path::{Path, PathBuf};

use crate::step;

/// Where Debian puts the registry binary.
const DOCKER_REGISTRY: &str = "/usr/bin/docker-registry";

/// Where Debian puts HAProxy.
const HAPROXY: &str = "/usr/sbin/haproxy";

/// Installs the peers. Idempotent: skips what is already installed.
pub fn setup() -> crate::Result {
    if Path::new(DOCKER_REGISTRY).exists() && minisign().is_some() && Path::new(HAPROXY).exists() {
        step("Debian peers: docker-registry, minisign and haproxy already installed");
        return Ok(());
    }
    step("Debian peers: apt-get install docker-registry minisign haproxy");
    crate::langs::apt_install(&["docker-registry", "minisign", "haproxy"]).map_err(|e| {
        format!("{e}\nthe crates/dist tests need docker-registry and minisign, the replica tests haproxy")
    })?;
    if !Path::new(HAPROXY).exists() {
        return Err(format!(
            "apt-get installed haproxy but {HAPROXY} is missing"
        ));
    }
    if !Path::new(DOCKER_REGISTRY).exists() {
        return Err(format!(
            "apt-get installed docker-registry but {DOCKER_REGISTRY} is missing"
        ));
    }
    if minisign().is_none() {
        return Err("apt-get installed minisign but it is not on PATH".into());
    }
    Ok(())
}

/// `minisign` on PATH, if any.
fn minisign() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("minisign"))
        .find(|p| p.is_file())
}

/// Environment for the tests:
/// - `TOOLHOST_DOCKER_REGISTRY`: the registry binary;
/// - `TOOLHOST_MINISIGN`: the minisign binary;
/// - `TOOLHOST_HAPROXY`: the haproxy binary.
pub fn test_env() -> Vec<(String, String)> {
    vec![
        ("TOOLHOST_DOCKER_REGISTRY".into(), DOCKER_REGISTRY.into()),
        ("TOOLHOST_HAPROXY".into(), HAPROXY.into()),
        (
            "TOOLHOST_MINISIGN".into(),
            minisign()
                .unwrap_or_else(|| PathBuf::from("minisign"))
                .display()
                .to_string(),
        ),
    ]
}
