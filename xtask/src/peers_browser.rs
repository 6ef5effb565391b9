//! The browser test peers, for the tests that drive the console in a real browser over
//! WebDriver: Debian `chromium` and `chromium-driver` (ChromeDriver, of the same Chromium
//! release), installed with apt-get when missing, and PyPI `selenium` (the WebDriver
//! client) in a virtualenv under `target/peers/browser/venv`.
//!
//! The two halves install apart because they run apart in `cargo xtask test`: apt-get in
//! the main sequence (two apt-get at once fight over dpkg's lock), pip on the background
//! thread of the downloads. Both are idempotent: what is installed is skipped, and the
//! virtualenv's marker file (see [`crate::peers_llm::pip_venv`]) records the pinned
//! requirement, so nothing is fetched once it matches. The tests start ChromeDriver
//! themselves (selenium's `Service`, on a free 127.0.0.1 port) and run Chromium headless.

use std::path::{Path, PathBuf};

use crate::{root, step};

/// Where Debian puts Chromium (package `chromium`; a wrapper script of the real binary).
const CHROMIUM: &str = "/usr/bin/chromium";

/// Where Debian puts ChromeDriver (package `chromium-driver`).
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The pinned WebDriver client (pure Python; needs Python 3.10 or later). Not 4.52 or
/// 4.53: they require a `certifi>=2026.10.23` that the index does not have yet.
const SELENIUM: &str = "selenium==4.51.0";

/// The virtualenv selenium is installed in.
fn venv_dir() -> PathBuf {
    root()
        .join("target")
        .join("peers")
        .join("browser")
        .join("venv")
}

/// The virtualenv's Python, the one that can `import selenium`.
fn python() -> PathBuf {
    venv_dir().join("bin").join("python")
}

/// Installs Chromium and ChromeDriver with apt-get (main sequence only: apt-get must not
/// run concurrently). Idempotent: skips when both binaries are there.
pub fn setup_debian() -> crate::Result {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        step("browser Debian peers: chromium and chromium-driver already installed");
        return Ok(());
    }
    step("browser Debian peers: apt-get install chromium chromium-driver");
    crate::langs::apt_install(&["chromium", "chromium-driver"]).map_err(|e| {
        format!("{e}\nthe browser tests of the console need chromium and chromedriver")
    })?;
    for (package, binary) in [("chromium", CHROMIUM), ("chromium-driver", CHROMEDRIVER)] {
        if !Path::new(binary).exists() {
            return Err(format!(
                "apt-get installed {package} but {binary} is missing"
            ));
        }
    }
    Ok(())
}

/// Installs selenium into its virtualenv (a download: it runs on the background thread of
/// the peers). selenium ships no console script, so the executable checked is the venv's
/// `python`; the marker file, written only after pip succeeded, is what vouches for
/// selenium.
pub fn setup_pypi() -> crate::Result {
    crate::peers_llm::pip_venv(
        "browser PyPI peer (selenium)",
        &venv_dir(),
        SELENIUM,
        "python",
    )
}

/// Environment for the tests:
/// - `TOOLHOST_CHROMIUM`: the Chromium binary;
/// - `TOOLHOST_CHROMEDRIVER`: the ChromeDriver binary;
/// - `TOOLHOST_SELENIUM_PYTHON`: a Python that can `import selenium`.
pub fn test_env() -> Vec<(String, String)> {
    vec![
        ("TOOLHOST_CHROMIUM".into(), CHROMIUM.into()),
        ("TOOLHOST_CHROMEDRIVER".into(), CHROMEDRIVER.into()),
        (
            "TOOLHOST_SELENIUM_PYTHON".into(),
            python().display().to_string(),
        ),
    ]
}
