//! Granted directories, opened once when the plugin loads and held open as capabilities.
//!
//! Rule (docs/security.md, "Preopens are held, not re-resolved"): a path is
//! trusted only as a capability held open, never re-resolved through something a guest
//! could have replaced. A tool with `write = ["./work"]` can replace `work/input` by a
//! symlink to `/etc`; if the host reopened `read = ["./work/input"]` by path on the next
//! call, that call would read `/etc`. So:
//!
//! - every granted directory is opened **once**, at load, and the file descriptor is kept
//!   for the plugin's lifetime; each call's preopen is derived from that descriptor (on
//!   Linux through `/proc/self/fd/N`, which names the held inode whatever happened to the
//!   path since), never from the path;
//! - a grant that lies inside another `write` grant (a place the guest can rewrite) is
//!   opened by walking down from the outer grant's descriptor one component at a time,
//!   refusing symlinks (`O_NOFOLLOW`), so a link planted by an earlier run (of this or a
//!   previous host process) is refused at load instead of being followed;
//! - where the descriptor cannot be named (no `/proc` or `/dev/fd`), each call checks that
//!   the path still resolves to the held directory's (device, inode) and refuses the call
//!   otherwise.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use toolhost_caps::Folder;

/// One granted directory: its path as the policy wrote it and the handle opened at load.
#[derive(Debug, Clone)]
pub struct HeldDir {
    path: PathBuf,
    handle: Result<Arc<imp::Handle>, String>,
}

impl HeldDir {
    /// The path, as granted (also the name the guest sees).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the directory could not be opened at load, if it could not.
    pub fn error(&self) -> Option<&str> {
        self.handle.as_ref().err().map(String::as_str)
    }

    /// The host path to hand to `WasiCtxBuilder::preopened_dir` for one call: a name of the
    /// held descriptor, or (where descriptors cannot be named) the original path after
    /// checking it still is the directory held at load.
    pub(crate) fn preopen_path(&self) -> Result<PathBuf, String> {
        match &self.handle {
            Ok(h) => imp::preopen_path(h, &self.path),
            Err(e) => Err(e.clone()),
        }
    }
}

/// The held read and write directories of one grant.
#[derive(Debug, Clone, Default)]
pub struct HeldDirs {
    /// Read-only grants, in policy order.
    pub read: Vec<HeldDir>,
    /// Read-write grants, in policy order.
    pub write: Vec<HeldDir>,
}

impl HeldDirs {
    /// Opens every granted directory now (see the module doc for how). `writable` lists
    /// every folder the plugin's tools may write (the policy's `write`, whatever this one
    /// tool declared): a grant inside one of them is opened without following links.
    pub fn open(read: &[Folder], write: &[Folder], writable: &[Folder]) -> HeldDirs {
        let paths = |v: &[Folder]| -> Vec<PathBuf> {
            v.iter().map(|f| f.as_path().to_path_buf()).collect()
        };
        let (read, write) = (paths(read), paths(write));
        let mut all_writable: Vec<PathBuf> = paths(writable);
        all_writable.extend(write.iter().cloned());
        let write_ctx = all_writable.as_slice();
        // Outermost writable folders: not inside any other. Only these are opened by
        // following the operator's path; anything inside one is walked without links.
        let mut roots: Vec<(PathBuf, Result<Arc<imp::Handle>, String>)> = Vec::new();
        for w in write_ctx {
            if outer_write(w, write_ctx).is_none() && !roots.iter().any(|(p, _)| p == w) {
                roots.push((w.clone(), imp::open_path(w).map(Arc::new)));
            }
        }
        let open_one = |path: &PathBuf| -> HeldDir {
            let handle = match outer_write(path, write_ctx) {
                Some(outer) => {
                    let outer = roots
                        .iter()
                        .find(|(p, _)| p == outer)
                        .map(|(_, h)| h.clone())
                        .unwrap_or_else(|| Err(format!("{} is not held", outer.display())));
                    // `outer_write` returned an ancestor, so the suffix exists.
                    let rest = path
                        .strip_prefix(outer_path(path, write_ctx))
                        .unwrap_or(path);
                    outer.and_then(|h| imp::walk_nofollow(&h, rest, path).map(Arc::new))
                }
                None => match roots.iter().find(|(p, _)| p == path) {
                    Some((_, h)) => h.clone(),
                    None => imp::open_path(path).map(Arc::new),
                },
            };
            HeldDir {
                path: path.clone(),
                handle,
            }
        };
        HeldDirs {
            read: read.iter().map(&open_one).collect(),
            write: write.iter().map(&open_one).collect(),
        }
    }

    /// Whether these are the handles of exactly these paths.
    pub(crate) fn holds(&self, read: &[Folder], write: &[Folder]) -> bool {
        self.read
            .iter()
            .map(HeldDir::path)
            .eq(read.iter().map(Folder::as_path))
            && self
                .write
                .iter()
                .map(HeldDir::path)
                .eq(write.iter().map(Folder::as_path))
    }
}

/// The outermost write grant strictly containing `path` (lexically; policy paths are
/// absolute and normalised), if any.
fn outer_write<'a>(path: &Path, write: &'a [PathBuf]) -> Option<&'a PathBuf> {
    write
        .iter()
        .filter(|w| w.as_path() != path && path.starts_with(w))
        .min_by_key(|w| w.components().count())
}

fn outer_path<'a>(path: &Path, write: &'a [PathBuf]) -> &'a Path {
    outer_write(path, write).map_or(Path::new(""), PathBuf::as_path)
}

/// The plain components of a relative path (no `.`/`..`, no root).
fn plain_components(rest: &Path) -> Result<Vec<&std::ffi::OsStr>, String> {
    rest.components()
        .map(|c| match c {
            Component::Normal(s) => Ok(s),
            other => Err(format!("unexpected path component {other:?}")),
        })
        .collect()
}

#[cfg(unix)]
mod imp {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::{Path, PathBuf};

    use rustix::fs::{Mode, OFlags};

    /// An open directory and its identity.
    #[derive(Debug)]
    pub struct Handle {
        fd: OwnedFd,
        dev: u64,
        ino: u64,
        /// A path that names `fd` itself (`/proc/self/fd/N`), if this system has one.
        by_fd: Option<PathBuf>,
    }

    const DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::CLOEXEC);

    /// (device, inode); `dev_t`/`ino_t` differ in width across Unixes, hence the casts.
    #[allow(clippy::unnecessary_cast)]
    fn id(st: &rustix::fs::Stat) -> (u64, u64) {
        (st.st_dev as u64, st.st_ino as u64)
    }

    fn finish(fd: OwnedFd, what: &Path) -> Result<Handle, String> {
        let st =
            rustix::fs::fstat(&fd).map_err(|e| format!("cannot stat {}: {e}", what.display()))?;
        let (dev, ino) = id(&st);
        // Linux: /proc/self/fd/N re-opens the inode the descriptor holds (a magic link, not
        // a path lookup). BSD/macOS: opening /dev/fd/N duplicates the descriptor. Either is
        // used only after checking it leads to the same (device, inode).
        let by_fd = ["/proc/self/fd", "/dev/fd"]
            .iter()
            .map(|base| PathBuf::from(format!("{base}/{}", fd.as_raw_fd())))
            .find(|p| rustix::fs::stat(p.as_path()).is_ok_and(|s| id(&s) == (dev, ino)));
        Ok(Handle {
            fd,
            dev,
            ino,
            by_fd,
        })
    }

    /// Opens a directory the operator named (symlinks in the operator's path are followed).
    pub fn open_path(path: &Path) -> Result<Handle, String> {
        let fd = rustix::fs::open(path, DIR, Mode::empty())
            .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        finish(fd, path)
    }

    /// Opens `rest` below `outer`, one component at a time, refusing symlinks.
    pub fn walk_nofollow(outer: &Handle, rest: &Path, full: &Path) -> Result<Handle, String> {
        let mut cur: Option<OwnedFd> = None;
        for comp in super::plain_components(rest)? {
            let next = {
                let dir = cur.as_ref().unwrap_or(&outer.fd);
                rustix::fs::openat(dir, comp, DIR | OFlags::NOFOLLOW, Mode::empty())
            };
            match next {
                Ok(fd) => cur = Some(fd),
                Err(e) if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR => {
                    return Err(format!(
                        "cannot open {}: {:?} is not a plain directory (a symlink or file) inside another `write` folder, which a tool could have planted; refusing to follow it",
                        full.display(),
                        comp
                    ));
                }
                Err(e) => return Err(format!("cannot open {}: {e}", full.display())),
            }
        }
        match cur {
            Some(fd) => finish(fd, full),
            None => Err(format!("cannot open {}: empty path", full.display())),
        }
    }

    /// See [`super::HeldDir::preopen_path`].
    pub fn preopen_path(h: &Handle, path: &Path) -> Result<PathBuf, String> {
        if let Some(p) = &h.by_fd {
            return Ok(p.clone());
        }
        // Fallback: the path must still be the held directory. (A swap between this check
        // and wasmtime's open is a known, documented race on systems without /proc.)
        match rustix::fs::stat(path) {
            Ok(s) if id(&s) == (h.dev, h.ino) => Ok(path.to_path_buf()),
            _ => Err(format!(
                "the granted folder {} was replaced since the plugin loaded; refusing the call (reload the plugin after checking the folder)",
                path.display()
            )),
        }
    }
}

#[cfg(not(unix))]
mod imp {
    //! Without a way to hold and name a directory, the path itself is used (known limit).
    use std::path::{Path, PathBuf};

    /// The directory's path.
    #[derive(Debug)]
    pub struct Handle(PathBuf);

    pub fn open_path(path: &Path) -> Result<Handle, String> {
        if path.is_dir() {
            Ok(Handle(path.to_path_buf()))
        } else {
            Err(format!("cannot open {}: not a directory", path.display()))
        }
    }

    pub fn walk_nofollow(_outer: &Handle, _rest: &Path, full: &Path) -> Result<Handle, String> {
        if std::fs::symlink_metadata(full).is_ok_and(|m| m.is_dir()) {
            Ok(Handle(full.to_path_buf()))
        } else {
            Err(format!(
                "cannot open {}: not a plain directory",
                full.display()
            ))
        }
    }

    pub fn preopen_path(h: &Handle, _path: &Path) -> Result<PathBuf, String> {
        Ok(h.0.clone())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_swapped_nested_grant_is_refused_at_load_and_held_across_swaps() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        let input = work.join("input");
        std::fs::create_dir_all(&input).unwrap();
        std::fs::write(input.join("a.txt"), "a").unwrap();

        let held = HeldDirs::open(
            &[Folder::from(input.as_path())],
            &[],
            &[Folder::from(work.as_path())],
        );
        let p = held.read[0].preopen_path().unwrap();
        // Swap the folder for a symlink to /etc: the held handle still names the old one.
        let moved = work.join("moved");
        std::fs::rename(&input, &moved).unwrap();
        std::os::unix::fs::symlink("/etc", &input).unwrap();
        let p2 = held.read[0].preopen_path().unwrap();
        assert!(std::fs::read_to_string(p2.join("a.txt")).is_ok(), "{p:?}");

        // A fresh load refuses the planted link instead of following it.
        let again = HeldDirs::open(
            &[Folder::from(input.as_path())],
            &[],
            &[Folder::from(work.as_path())],
        );
        let e = again.read[0].error().unwrap();
        assert!(e.contains("not a plain directory"), "{e}");
        assert!(again.write.is_empty());
    }
}
