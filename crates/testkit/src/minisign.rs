//! Real minisign keys and signatures for tests: every key pair, signature and check is
//! made by the `minisign` tool itself, so toolhost's verifier is tested against the
//! format as the tool writes it.

use std::path::PathBuf;
use std::process::Command;

use crate::peers::on_path;

/// A minisign key pair made by the real tool (`minisign -G -W`).
pub struct Keys {
    /// The `minisign` binary.
    pub minisign: PathBuf,
    /// The public-key line (`RWQ…`): what `[trust] keys` holds.
    pub public: String,
    /// The key id minisign printed in the `.pub` file's comment, as 16 hex digits.
    pub key_id: String,
    /// The `.pub` file.
    pub public_file: PathBuf,
    /// The unencrypted secret key file.
    pub secret_file: PathBuf,
    /// The folder holding both (and scratch files of the test).
    pub dir: tempfile::TempDir,
}

fn failed(what: &str, out: &std::process::Output) -> std::io::Error {
    std::io::Error::other(format!(
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    ))
}

impl Keys {
    /// Generates a key pair with `minisign -G -W` (`$TOOLHOST_MINISIGN`, else `minisign`
    /// on `PATH`). `Ok(None)`: not installed, outside CI (a panic in CI).
    pub fn generate() -> std::io::Result<Option<Keys>> {
        let Some(minisign) = on_path("TOOLHOST_MINISIGN", "minisign") else {
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
            return Err(failed("minisign -G", &out));
        }
        let text = std::fs::read_to_string(&public_file)?;
        let bad = |what: &str| std::io::Error::other(format!("{what} in {text:?}"));
        let public = text
            .lines()
            .last()
            .ok_or_else(|| bad("no key line"))?
            .trim()
            .to_string();
        // "untrusted comment: minisign public key 123456789ABCDEF": minisign 0.11 prints the
        // id without leading zeros; toolhost always writes 16 digits.
        let printed = text
            .lines()
            .next()
            .and_then(|l| l.rsplit(' ').next())
            .ok_or_else(|| bad("no key id"))?;
        let id = u64::from_str_radix(printed, 16).map_err(|_| bad("a bad key id"))?;
        Ok(Some(Keys {
            minisign,
            public,
            key_id: format!("{id:016X}"),
            public_file,
            secret_file,
            dir,
        }))
    }

    /// Signs the file `file` with `minisign -S` (writes `FILE.minisig` beside it) and
    /// returns the signature text.
    pub fn sign_file(&self, file: &std::path::Path) -> std::io::Result<String> {
        let out = Command::new(&self.minisign)
            .arg("-S")
            .arg("-s")
            .arg(&self.secret_file)
            .arg("-m")
            .arg(file)
            .output()?;
        if !out.status.success() {
            return Err(failed("minisign -S", &out));
        }
        let mut sig = file.as_os_str().to_owned();
        sig.push(".minisig");
        std::fs::read_to_string(sig)
    }

    /// Signs `bytes` with `minisign -S`; returns the `.minisig` text.
    pub fn minisign_sign(&self, bytes: &[u8]) -> std::io::Result<String> {
        let file = self.dir.path().join("to-sign.wasm");
        std::fs::write(&file, bytes)?;
        self.sign_file(&file)
    }

    /// Verifies `signature` of `bytes` with `minisign -V`: true if the tool accepts it.
    pub fn minisign_verify(&self, bytes: &[u8], signature: &str) -> std::io::Result<bool> {
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
