//! "Allow always" decisions kept in a file of the user's data folder
//! (`<data dir>/toolhost/approvals.json`), so they outlive the process: given in `chat`
//! (or with `toolhost approvals add`), honoured by `serve`, `call` and `chat`, listed and
//! revoked with `toolhost approvals list|revoke`.
//!
//! The file is the operator's: it is written atomically with mode 0600, it is re-read on
//! every check (a revoke in another terminal takes effect at the next call, and a
//! long-running `serve` sees new rules without a restart), and tool arguments may never
//! name it (`crate::permissions` protects the data folder). A file that cannot be read or
//! parsed grants nothing: every destructive call asks again.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tools::{ApprovalStore, ApprovalStoreError, ArgPattern, RememberedApproval};

/// Largest approvals file read, bytes: far above any hand-kept list.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    #[serde(default)]
    approvals: Vec<RememberedApproval>,
}

/// An [`ApprovalStore`] in a JSON file.
#[derive(Debug)]
pub struct FileApprovals {
    path: PathBuf,
    /// Serialises read-modify-write within this process.
    lock: Mutex<()>,
}

/// The default file: `<data dir>/toolhost/approvals.json`.
pub fn default_path() -> PathBuf {
    dirs::data_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join("toolhost")
        .join("approvals.json")
}

impl FileApprovals {
    /// A store in `path` (created at the first decision).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileApprovals {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every remembered decision, in the order given. A missing file has none.
    pub fn list(&self) -> Result<Vec<RememberedApproval>, ApprovalStoreError> {
        Ok(self.read()?.approvals)
    }

    /// Removes the decisions for which `drop` is true; returns how many were removed.
    pub fn revoke(
        &self,
        drop: impl Fn(usize, &RememberedApproval) -> bool,
    ) -> Result<usize, ApprovalStoreError> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut f = self.read()?;
        let before = f.approvals.len();
        let mut i = 0;
        f.approvals.retain(|r| {
            let keep = !drop(i, r);
            i += 1;
            keep
        });
        let removed = before - f.approvals.len();
        if removed > 0 {
            self.write(&f)?;
        }
        Ok(removed)
    }

    fn read(&self) -> Result<FileFormat, ApprovalStoreError> {
        let fail = |e: String| ApprovalStoreError(format!("{}: {e}", self.path.display()));
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(FileFormat::default());
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        if meta.len() > MAX_FILE_BYTES {
            return Err(fail(format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        let text = std::fs::read_to_string(&self.path).map_err(|e| fail(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| fail(format!("not an approvals file: {e}")))
    }

    fn write(&self, f: &FileFormat) -> Result<(), ApprovalStoreError> {
        let fail = |e: String| ApprovalStoreError(format!("{}: {e}", self.path.display()));
        let text = serde_json::to_string_pretty(f).map_err(|e| fail(e.to_string()))?;
        let dir = self
            .path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
        // A temp file beside it (created 0600 by `tempfile`), renamed over it: a reader
        // sees the old list or the new one, never half of one.
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| fail(e.to_string()))?;
        std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| fail(e.to_string()))?;
        tmp.as_file().sync_all().map_err(|e| fail(e.to_string()))?;
        tmp.persist(&self.path)
            .map(|_| ())
            .map_err(|e| fail(e.error.to_string()))
    }
}

impl ApprovalStore for FileApprovals {
    fn covering(&self, tool: &str, args: &Value) -> Option<RememberedApproval> {
        match self.read() {
            Ok(f) => f
                .approvals
                .into_iter()
                .find(|r| r.tool == tool && r.pattern.matches(args)),
            Err(e) => {
                tracing::warn!(error = %e, "remembered approvals unreadable: asking again");
                None
            }
        }
    }

    fn remember(&self, tool: &str, pattern: &ArgPattern) -> Result<(), ApprovalStoreError> {
        pattern
            .validate()
            .map_err(|e| ApprovalStoreError(e.to_string()))?;
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut f = self.read()?;
        if f.approvals
            .iter()
            .any(|r| r.tool == tool && r.pattern == *pattern)
        {
            return Ok(());
        }
        f.approvals.push(RememberedApproval {
            tool: tool.to_string(),
            pattern: pattern.clone(),
            at: Some(toolhost_trust::now_rfc3339()),
        });
        self.write(&f)
    }

    fn forget_all(&self) -> Result<(), ApprovalStoreError> {
        self.revoke(|_, _| true).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_survive_a_new_store_and_can_be_revoked() {
        let dir = tempfile::tempdir().unwrap(); // ok: test code
        let path = dir.path().join("sub/approvals.json");
        let a = FileApprovals::new(&path);
        let p = ArgPattern([("path".to_string(), "/tmp/*".to_string())].into());
        a.remember("wipe", &p).unwrap(); // ok: test code
        a.remember("wipe", &p).unwrap(); // ok: test code
        a.remember("other", &ArgPattern::default()).unwrap(); // ok: test code
        let b = FileApprovals::new(&path);
        assert_eq!(b.list().unwrap().len(), 2); // ok: test code
        assert!(b.covering("wipe", &json!({"path": "/tmp/x"})).is_some());
        assert!(b.covering("wipe", &json!({"path": "/etc/x"})).is_none());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode(); // ok: test code
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(b.revoke(|_, r| r.tool == "wipe").unwrap(), 1); // ok: test code
        assert!(a.covering("wipe", &json!({"path": "/tmp/x"})).is_none());
        assert!(a.covering("other", &json!({})).is_some());
    }

    #[test]
    fn a_damaged_file_grants_nothing() {
        let dir = tempfile::tempdir().unwrap(); // ok: test code
        let path = dir.path().join("approvals.json");
        std::fs::write(&path, "{\"approvals\": [{\"tool\": \"wipe\"}], \"x\": 1}").unwrap(); // ok: test code
        let a = FileApprovals::new(&path);
        assert!(a.covering("wipe", &json!({})).is_none());
        assert!(a.remember("wipe", &ArgPattern::default()).is_err());
    }
}
