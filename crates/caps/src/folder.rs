//! [`Folder`]: a folder a plugin asks for or is granted. A folder grants everything below
//! it, so folders are related **by path components**, never as strings: `/data/bc` is not
//! inside `/data/b`, and `/data/b/` is `/data/b`. In files (the lock) a folder is its path
//! as text.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A folder: an absolute, normalised path in a request, an approval or a grant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub struct Folder(PathBuf);

impl Folder {
    /// The folder at `path`, taken as given (the policy parser makes request paths
    /// absolute and normal; a relative one is never inside an absolute one).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Folder(path.into())
    }

    /// The path.
    pub fn as_path(&self) -> &Path {
        &self.0
    }

    /// Whether this folder lies inside `outer` or is it, on path components (so `/a/bc`
    /// is not inside `/a/b`, and a trailing `/` changes nothing). A relative path never
    /// counts as inside an absolute one.
    pub fn inside(&self, outer: &Folder) -> bool {
        self.0.starts_with(&outer.0)
    }
}

impl AsRef<Path> for Folder {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl From<String> for Folder {
    fn from(s: String) -> Self {
        Folder(PathBuf::from(s))
    }
}

impl From<&str> for Folder {
    fn from(s: &str) -> Self {
        Folder(PathBuf::from(s))
    }
}

impl From<PathBuf> for Folder {
    fn from(p: PathBuf) -> Self {
        Folder(p)
    }
}

impl From<&Path> for Folder {
    fn from(p: &Path) -> Self {
        Folder(p.to_path_buf())
    }
}

impl From<Folder> for String {
    fn from(f: Folder) -> String {
        f.0.display().to_string()
    }
}

impl From<Folder> for PathBuf {
    fn from(f: Folder) -> PathBuf {
        f.0
    }
}

impl std::fmt::Display for Folder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.display().fmt(f)
    }
}

impl PartialEq<Path> for Folder {
    fn eq(&self, other: &Path) -> bool {
        self.0 == other
    }
}

impl PartialEq<PathBuf> for Folder {
    fn eq(&self, other: &PathBuf) -> bool {
        &self.0 == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_compare_on_path_components() {
        let inside = |a: &str, b: &str| Folder::from(a).inside(&Folder::from(b));
        assert!(inside("/data/b", "/data/b"));
        assert!(inside("/data/b/", "/data/b"));
        assert!(inside("/data/b/c", "/data/b/"));
        assert!(
            !inside("/data/bc", "/data/b"),
            "a string prefix is not a folder"
        );
        assert!(!inside("/data", "/data/b"));
        assert!(
            !inside("data/b", "/data"),
            "relative is never inside absolute"
        );
    }
}
