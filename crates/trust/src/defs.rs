//! The approved tool definitions, kept beside the lock in `toolhost.lock.d/` as one
//! canonical-JSON file per definition, named by its hash.
//!
//! The lock holds only hashes (so it stays small and diff-friendly); these files let
//! `toolhost approve` show a changed description or schema next to the one that was
//! approved. A file is believed only if its content hashes to its name, so a stale or
//! edited file is ignored rather than shown as "the approved text".

use std::path::{Path, PathBuf};

use crate::canon::{ToolDef, sha256};
use crate::error::TrustError;
use crate::lock::write_atomically;

/// The folder of approved definitions beside a lock.
#[derive(Debug, Clone)]
pub struct DefStore {
    dir: PathBuf,
}

impl DefStore {
    /// The store of the plugins folder `plugins_dir` (`toolhost.lock.d/` in it).
    pub fn in_dir(plugins_dir: &Path) -> Self {
        DefStore {
            dir: plugins_dir.join("toolhost.lock.d"),
        }
    }

    fn file(&self, hash: &str) -> Option<PathBuf> {
        let hex = hash.strip_prefix("sha256:")?;
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(self.dir.join(format!("{hex}.json")))
    }

    /// Keeps a definition (no-op if already kept).
    pub fn save(&self, def: &ToolDef) -> Result<(), TrustError> {
        let Some(file) = self.file(&def.hash()) else {
            return Ok(());
        };
        if file.is_file() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| TrustError::Write {
            file: self.dir.display().to_string(),
            source,
        })?;
        write_atomically(&file, def.canonical().as_bytes())
    }

    /// The definition with this hash, if kept and intact.
    pub fn load(&self, hash: &str) -> Option<ToolDef> {
        let file = self.file(hash)?;
        let bytes = std::fs::read(file).ok()?;
        if sha256(&bytes) != hash {
            return None;
        }
        serde_json::from_slice(&bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_definitions_come_back_and_edited_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = DefStore::in_dir(dir.path());
        let def = ToolDef::new(
            "add",
            "Adds.",
            serde_json::json!({"type": "object"}),
            vec![],
        );
        store.save(&def).unwrap();
        assert_eq!(store.load(&def.hash()), Some(def.clone()));
        let file = store.file(&def.hash()).unwrap();
        std::fs::write(&file, def.canonical().replace("Adds.", "Adds!")).unwrap();
        assert_eq!(store.load(&def.hash()), None);
        assert_eq!(store.load("sha256:../../etc/passwd"), None);
    }
}
