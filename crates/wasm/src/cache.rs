//! The on-disk compile cache of a [`WasmEngine`]: compiled artifacts, the file-identity
//! index and the describe cache, and the ownership checks that decide whether any of it
//! may be trusted.
//!
//! **Layout.** A compiled component is stored as
//! `<cache>/<sha256 of the wasm>-<hash of the engine settings>.cwasm`. The key covers
//! everything that makes an artifact valid (wasmtime version, target, fuel/epoch on or
//! off, ...) through `Engine::precompile_compatibility_hash`. `<cache>/index/` maps a
//! file's identity to its digest (see [`WasmEngine::load_file`]); `describe()` results
//! are kept per digest and host version ([`WasmEngine::describe_cache_file`]).
//!
//! **The cache is code.** Deserializing an artifact runs its native code, so the cache is
//! trusted the way `ssh` (StrictModes) trusts `~/.ssh`: at engine creation the folder
//! (created with mode 0700 when missing, resolved to its real path) must be owned by the
//! current user and not writable by group or others, and every folder above it must be
//! owned by root or the current user and not writable by group or others, unless it is
//! sticky (like `/tmp`: others may add entries but not replace ours). Otherwise the cache
//! is disabled for this engine (components are compiled in memory) and a warning names
//! the folder and why ([`WasmEngine::cache_problem`]). Each file read from it (artifact,
//! file-identity index, describe cache) must also be a regular file owned by the current
//! user and not writable by group or others, or it is ignored. Files are written with
//! mode 0600 to a temporary name and renamed into place, so a half-written artifact is
//! never read. Off unix these ownership checks are not made (see docs/security).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use thiserror::Error;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::engine::WasmEngine;

impl WasmEngine {
    /// The artifact file of a component digest for this engine's settings, if the cache
    /// is in use.
    pub(crate) fn artifact_path(&self, digest: &str) -> Option<PathBuf> {
        let dir = self.inner.cache_dir.as_ref()?;
        Some(dir.join(format!("{digest}-{}.cwasm", self.inner.config_key)))
    }

    /// The cached artifact for this digest, if there is a usable one (an unusable one is
    /// removed).
    pub(crate) fn cached_artifact(&self, digest: &str) -> Option<Component> {
        let file = self.artifact_path(digest)?;
        if !file.is_file() {
            return None;
        }
        if let Err(why) = private_file(&file) {
            tracing::warn!(file = %file.display(), "ignoring cached artifact: {why}");
            return None;
        }
        match deserialize_own_artifact(&self.inner.engine, &file) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(file = %file.display(), "ignoring unusable cached artifact: {e:#}");
                let _ = std::fs::remove_file(&file);
                None
            }
        }
    }

    /// The index file for `path` and the file's current identity stamp (unix only).
    pub(crate) fn index_entry(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
    ) -> Option<(PathBuf, String)> {
        let dir = self.inner.cache_dir.as_ref()?;
        let stamp = file_stamp(meta)?;
        let full = std::fs::canonicalize(path).ok()?;
        let key = hex::encode(Sha256::digest(full.as_os_str().as_encoded_bytes()));
        Some((dir.join("index").join(format!("{key}.txt")), stamp))
    }

    /// Cached `describe()` results of the component with this digest (written by this
    /// version of the host), or `None`.
    pub(crate) fn cached_describe<T: serde::de::DeserializeOwned>(
        &self,
        digest: &str,
    ) -> Option<T> {
        let file = self.describe_path(digest)?;
        if !file.is_file() {
            return None;
        }
        if let Err(why) = private_file(&file) {
            tracing::warn!(file = %file.display(), "ignoring cached describe(): {why}");
            return None;
        }
        let text = std::fs::read(&file).ok()?;
        match serde_json::from_slice(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(file = %file.display(), "ignoring unusable cached describe(): {e}");
                let _ = std::fs::remove_file(&file);
                None
            }
        }
    }

    /// Stores `describe()` results for the component with this digest.
    pub(crate) fn store_describe<T: serde::Serialize>(&self, digest: &str, value: &T) {
        let Some(file) = self.describe_path(digest) else {
            return;
        };
        match serde_json::to_vec(value) {
            Ok(bytes) => write_atomically(&file, &bytes),
            Err(e) => tracing::warn!("cannot serialize describe() results: {e}"),
        }
    }

    /// The describe cache file of a component digest (its tools, or why `describe()` was
    /// refused), if the cache is in use.
    pub fn describe_cache_file(&self, digest: &str) -> Option<PathBuf> {
        self.describe_path(digest)
    }

    /// See [`Self::describe_cache_file`].
    fn describe_path(&self, digest: &str) -> Option<PathBuf> {
        let dir = self.inner.cache_dir.as_ref()?;
        // `describe2`: the file holds the tools or the remembered refusal.
        Some(dir.join(format!(
            "{digest}-describe2-v{}.json",
            env!("CARGO_PKG_VERSION")
        )))
    }
}

/// A file's identity: device, inode, size, mtime and ctime in ns. `None` off unix.
fn file_stamp(meta: &std::fs::Metadata) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(format!(
            "v1 {} {} {} {}.{} {}.{}",
            meta.dev(),
            meta.ino(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec()
        ))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// The digest recorded for `stamp` in an index file, if the stamp still matches.
pub(crate) fn read_index(entry: &Path, stamp: &str) -> Option<String> {
    // The index picks which cached artifact runs for a file: as trusted as the artifacts.
    if !entry.is_file() {
        return None;
    }
    if let Err(why) = private_file(entry) {
        tracing::warn!(file = %entry.display(), "ignoring compile cache index entry: {why}");
        return None;
    }
    let text = std::fs::read_to_string(entry).ok()?;
    let (recorded, digest) = text.trim_end().rsplit_once(' ')?;
    (recorded == stamp && digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| digest.to_string())
}

/// Why the compile cache folder, or a file in it, may not be trusted (see the module
/// docs). Only its message leaves this module: the engine's
/// [`cache_problem`](WasmEngine::cache_problem), or a warning naming the ignored file.
#[derive(Debug, Error)]
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) enum CacheError {
    /// The folder could not be created.
    #[error("cannot create {}: {error}", dir.display())]
    Create {
        /// The folder.
        dir: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// The folder's real path could not be found.
    #[error("cannot resolve {}: {error}", dir.display())]
    Resolve {
        /// The folder as configured.
        dir: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// The folder, or one above it, could not be inspected.
    #[error("cannot inspect {}: {error}", path.display())]
    InspectDir {
        /// The folder.
        path: PathBuf,
        /// The cause.
        error: std::io::Error,
    },
    /// The cache path is something other than a folder.
    #[error("{} is not a folder", dir.display())]
    NotAFolder {
        /// The path.
        dir: PathBuf,
    },
    /// The folder belongs to another user.
    #[error("{} is owned by uid {uid}, not by the current user (uid {me})", dir.display())]
    DirOwner {
        /// The folder.
        dir: PathBuf,
        /// Its owner.
        uid: u32,
        /// The current user.
        me: u32,
    },
    /// Group or others may write the folder.
    #[error("{} is writable by group or others (mode {mode:o})", dir.display())]
    DirWritable {
        /// The folder.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A folder above the cache belongs to someone other than root or the current user.
    #[error(
        "{}, a folder above {}, is owned by uid {uid} (neither root nor the current user)",
        above.display(),
        dir.display()
    )]
    AboveOwner {
        /// The folder above.
        above: PathBuf,
        /// The cache folder.
        dir: PathBuf,
        /// Its owner.
        uid: u32,
    },
    /// Group or others may write a folder above the cache, and it is not sticky.
    #[error(
        "{}, a folder above {}, is writable by group or others (mode {mode:o}) and not sticky",
        above.display(),
        dir.display()
    )]
    AboveWritable {
        /// The folder above.
        above: PathBuf,
        /// The cache folder.
        dir: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A cache file could not be inspected.
    #[error("cannot inspect it: {error}")]
    InspectFile {
        /// The cause.
        error: std::io::Error,
    },
    /// A cache file is a symlink, folder or other non-regular file.
    #[error("not a regular file")]
    NotAFile,
    /// A cache file belongs to another user.
    #[error("owned by uid {uid}, not by the current user (uid {me})")]
    FileOwner {
        /// Its owner.
        uid: u32,
        /// The current user.
        me: u32,
    },
    /// Group or others may write a cache file.
    #[error("writable by group or others (mode {mode:o})")]
    FileWritable {
        /// Its permission bits.
        mode: u32,
    },
}

/// Creates the cache folder (mode 0700) when missing and checks it may hold code (see
/// the module docs). Returns its real path, or why it may not be used.
pub(crate) fn prepare_cache_dir(dir: &Path) -> Result<PathBuf, CacheError> {
    create_private_dir(dir).map_err(|error| CacheError::Create {
        dir: dir.to_path_buf(),
        error,
    })?;
    let real = std::fs::canonicalize(dir).map_err(|error| CacheError::Resolve {
        dir: dir.to_path_buf(),
        error,
    })?;
    private_dir(&real)?;
    // The file-identity index decides which artifact runs for a file: same rule.
    let index = real.join("index");
    create_private_dir(&index).map_err(|error| CacheError::Create {
        dir: index.clone(),
        error,
    })?;
    private_dir(&index)?;
    Ok(real)
}

/// Creates `dir` and the folders above it that are missing, mode 0700 on unix.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// The effective user id of this process.
#[cfg(unix)]
fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Checks that the (real) folder `dir` may hold code: owned by the current user, not
/// writable by group or others; every folder above it owned by root or the current user
/// and not writable by group or others unless sticky.
#[cfg(unix)]
fn private_dir(dir: &Path) -> Result<(), CacheError> {
    use std::os::unix::fs::MetadataExt;
    let me = current_uid();
    let meta = std::fs::symlink_metadata(dir).map_err(|error| CacheError::InspectDir {
        path: dir.to_path_buf(),
        error,
    })?;
    if !meta.is_dir() {
        return Err(CacheError::NotAFolder {
            dir: dir.to_path_buf(),
        });
    }
    if meta.uid() != me {
        return Err(CacheError::DirOwner {
            dir: dir.to_path_buf(),
            uid: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(CacheError::DirWritable {
            dir: dir.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    for above in dir.ancestors().skip(1) {
        let meta = std::fs::metadata(above).map_err(|error| CacheError::InspectDir {
            path: above.to_path_buf(),
            error,
        })?;
        if meta.uid() != me && meta.uid() != 0 {
            return Err(CacheError::AboveOwner {
                above: above.to_path_buf(),
                dir: dir.to_path_buf(),
                uid: meta.uid(),
            });
        }
        let sticky = meta.mode() & 0o1000 != 0;
        if meta.mode() & 0o022 != 0 && !sticky {
            return Err(CacheError::AboveWritable {
                above: above.to_path_buf(),
                dir: dir.to_path_buf(),
                mode: meta.mode() & 0o7777,
            });
        }
    }
    Ok(())
}

/// Off unix the ownership checks are not made (see the module docs).
#[cfg(not(unix))]
fn private_dir(_dir: &Path) -> Result<(), CacheError> {
    Ok(())
}

/// Checks that a cache file may be read as trusted: a regular file (not a symlink)
/// owned by the current user, not writable by group or others.
#[cfg(unix)]
fn private_file(file: &Path) -> Result<(), CacheError> {
    use std::os::unix::fs::MetadataExt;
    let meta =
        std::fs::symlink_metadata(file).map_err(|error| CacheError::InspectFile { error })?;
    if !meta.is_file() {
        return Err(CacheError::NotAFile);
    }
    let me = current_uid();
    if meta.uid() != me {
        return Err(CacheError::FileOwner {
            uid: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(CacheError::FileWritable {
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// Off unix the ownership checks are not made (see the module docs).
#[cfg(not(unix))]
fn private_file(_file: &Path) -> Result<(), CacheError> {
    Ok(())
}

/// Writes `bytes` to `file` (mode 0600) through a temporary name and a rename, so a
/// half-written file is never read; a failure is logged, not returned (the cache is an
/// optimisation).
pub(crate) fn write_atomically(file: &Path, bytes: &[u8]) {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Some(parent) = file.parent() {
        let _ = create_private_dir(parent);
    }
    let tmp = file.with_extension(format!("tmp{}-{seq}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        std::io::Write::write_all(&mut o.open(&tmp)?, bytes)?;
        std::fs::rename(&tmp, file)
    };
    if let Err(e) = write() {
        let _ = std::fs::remove_file(&tmp);
        tracing::warn!(file = %file.display(), "cannot write the compile cache: {e}");
    }
}

/// Loads an artifact from the host's own cache folder.
#[allow(unsafe_code)]
fn deserialize_own_artifact(engine: &Engine, file: &Path) -> wasmtime::Result<Component> {
    // SAFETY: `file` lives in the cache folder checked at engine creation to be owned by
    // the current user and writable by nobody else, with every folder above it owned by
    // root or the user (see `prepare_cache_dir`); the file itself was checked to be a
    // regular file owned by the user and writable by nobody else (`private_file`). It has
    // a name derived from the sha256 of the wasm and the engine settings; only
    // `write_atomically` writes there, with bytes produced by `Component::serialize` of
    // this same wasmtime version. wasmtime also checks the header (version, target,
    // settings) before use.
    unsafe { Component::deserialize_file(engine, file) }
}
