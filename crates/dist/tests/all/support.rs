//! Test support: the real peers (Debian `docker-registry`, `minisign`, from
//! `toolhost-testkit`), the real compiled `calc` component.
//!
//! A missing peer skips the test with a note outside CI and fails it in CI (`CI=true`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use toolhost_dist::OciRef;
pub use toolhost_testkit::minisign::Keys;
pub use toolhost_testkit::registry::DockerRegistry as Registry;
use toolhost_testkit::workspace_root as root;

/// `oci://ADDR/REPO_TAG` of a test registry, parsed.
pub trait OciOf {
    /// The reference of `repo_and_tag` on this registry.
    fn oci(&self, repo_and_tag: &str) -> OciRef;
}

impl OciOf for Registry {
    fn oci(&self, repo_and_tag: &str) -> OciRef {
        OciRef::parse(&format!("oci://{}/{repo_and_tag}", self.addr)).expect("a valid reference")
    }
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
