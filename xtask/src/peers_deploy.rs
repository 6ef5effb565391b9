//! The manifest linter of `deploy/k8s/` (docs/deploy.md): PyPI `kubernetes-validate`
//! (schemas of every Kubernetes release bundled, so it runs offline) in a virtualenv
//! under `target/peers/deploy/venv`, and the step of `cargo xtask test` that runs it with
//! `--strict` (unknown fields are errors).
//!
//! Idempotent: a marker file records the pinned requirement; when it matches and the
//! executable is there, nothing is fetched.

use std::path::PathBuf;
use std::process::Command;

use crate::{root, run, step};

/// The pinned requirement.
const VALIDATOR: &str = "kubernetes-validate==1.37.0";

fn venv_dir() -> PathBuf {
    root()
        .join("target")
        .join("peers")
        .join("deploy")
        .join("venv")
}

fn bin(name: &str) -> PathBuf {
    venv_dir().join("bin").join(name)
}

/// Installs the linter (a download: it runs on the background thread of the peers).
pub fn setup() -> crate::Result {
    crate::peers_llm::pip_venv(
        "deploy PyPI peer",
        &venv_dir(),
        VALIDATOR,
        "kubernetes-validate",
    )
}

/// Validates every manifest of `deploy/k8s/` against the Kubernetes schemas, strictly.
pub fn lint_manifests() -> crate::Result {
    step("lint deploy/k8s (kubernetes-validate --strict)");
    let dir = root().join("deploy").join("k8s");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no manifests in {}", dir.display()));
    }
    run(Command::new(bin("kubernetes-validate"))
        .arg("--strict")
        .args(&files))
}
