//! [`RotatingFile`]: the audit file, appended to and rotated by size
//! (`docs/permissions.md`, "Audit trail").
//!
//! - Created with mode `0600` (an existing file readable by others is narrowed to `0600`,
//!   with a warning): records hold arguments, which may be private even redacted.
//! - Each record is one `write(2)` of the whole line and its newline on a file opened
//!   with `O_APPEND`, so records of several writers never interleave inside a line. No
//!   `fsync`: a record is in the kernel when the call returns, which survives the
//!   process, not a power cut.
//! - Rotation happens **between** records: when the file is not empty and the next
//!   record would take it over `max_bytes`, `audit.jsonl.{keep-1}` becomes
//!   `audit.jsonl.{keep}` (the oldest is overwritten), ..., `audit.jsonl` becomes
//!   `audit.jsonl.1`, and a new `audit.jsonl` is started. A record is never split across
//!   files; a single record larger than `max_bytes` gets a file of its own.
//! - Several processes may share the file (`serve` and `chat` by default do). A writer
//!   counts what it appends itself and reads the file's real size (`fstat`) only when its
//!   count says the next record could take the file over `max_bytes`, and at least every
//!   [`STAT_EVERY`] records, so the other writers' records are seen too. One `fstat` per
//!   record was a sixth of a record's cost (docs/benchmarks.md, "serve's per-call
//!   path"). A writer whose file was already rotated away by another one (or moved by
//!   logrotate) reopens the path instead of rotating again. Nothing is lost; with
//!   several writers a file may hold a little more than `max_bytes` (at most the other
//!   writers' records since the last `fstat`).
//! - A write error (disk full, folder removed) is returned; the next record reopens the
//!   file. A line left incomplete by a failed write is ended with a newline first, so
//!   the next record starts on a line of its own.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Default size at which the audit file is rotated: 10 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Default number of rotated files kept (`audit.jsonl.1` .. `audit.jsonl.5`).
pub const DEFAULT_KEEP: usize = 5;
/// Most records appended between two readings of the file's real size (see the module
/// docs: the other writers' records are counted at the latest then).
pub const STAT_EVERY: u32 = 64;

/// An append-only file rotated by size (see the module docs).
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    file: Option<File>,
    /// The file's size as this writer knows it: read at the last `fstat`, plus what it
    /// appended since.
    len: u64,
    /// Records appended since the last `fstat`.
    unstatted: u32,
    /// The line being written (kept to save an allocation per record).
    buf: Vec<u8>,
}

impl RotatingFile {
    /// Opens (or creates, mode `0600`) the file at `path`, creating its folder (mode
    /// `0700`) when missing. `max_bytes` is at least 1; `keep` = 0 keeps no old file.
    pub fn open(path: impl Into<PathBuf>, max_bytes: u64, keep: usize) -> std::io::Result<Self> {
        let path = path.into();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir)?;
        }
        let file = open_append(&path)?;
        let len = file.metadata()?.len();
        Ok(Self {
            path,
            max_bytes: max_bytes.max(1),
            keep,
            file: Some(file),
            len,
            unstatted: 0,
            buf: Vec::new(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of the `n`th rotated file (`audit.jsonl.n`).
    pub fn rotated_path(&self, n: usize) -> PathBuf {
        numbered(&self.path, n)
    }

    /// Appends `line` and a newline, rotating first when the file is full.
    pub fn append(&mut self, line: &str) -> std::io::Result<()> {
        let need = line.len() as u64 + 1;
        let (mut file, fresh) = match self.file.take() {
            Some(f) => (f, false),
            None => (open_append(&self.path)?, true),
        };
        // The real size only when it can matter (module docs): a fresh file, a full one
        // by this writer's count, or STAT_EVERY records since the last look.
        if fresh || self.unstatted >= STAT_EVERY || self.len.saturating_add(need) > self.max_bytes {
            self.len = file.metadata()?.len();
            self.unstatted = 0;
        }
        if self.len > 0 && self.len.saturating_add(need) > self.max_bytes {
            file = if same_file(&file, &self.path) {
                drop(file);
                self.rotate()?;
                open_append(&self.path)?
            } else {
                // Another writer rotated it (or it was moved away): follow the path.
                open_append(&self.path)?
            };
            self.len = file.metadata()?.len();
        }
        self.buf.clear();
        self.buf.extend_from_slice(line.as_bytes());
        self.buf.push(b'\n');
        // On error the file is dropped; the next record reopens it (and reads its size).
        file.write_all(&self.buf)?;
        // A long line is not kept: the buffer stays at most a typical record's size.
        if self.buf.capacity() > 64 * 1024 {
            self.buf = Vec::new();
        }
        self.len += need;
        self.unstatted += 1;
        self.file = Some(file);
        Ok(())
    }

    /// Shifts `path.{keep-1}` .. `path` one place up; the oldest falls off.
    fn rotate(&self) -> std::io::Result<()> {
        if self.keep == 0 {
            return ignore_missing(std::fs::remove_file(&self.path));
        }
        for n in (1..self.keep).rev() {
            ignore_missing(std::fs::rename(
                numbered(&self.path, n),
                numbered(&self.path, n + 1),
            ))?;
        }
        ignore_missing(std::fs::rename(&self.path, numbered(&self.path, 1)))
    }
}

fn numbered(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

fn ignore_missing(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Opens `path` for appending, creating it with mode `0600`, narrowing a looser mode,
/// and ending an incomplete last line.
fn open_append(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true).read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    let meta = file.metadata()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(path = %path.display(), "audit: the file was readable by others; narrowing it to 0600");
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
    }
    if meta.len() > 0 && !ends_with_newline(&file, meta.len())? {
        file.write_all(b"\n")?;
    }
    Ok(file)
}

#[cfg(unix)]
fn ends_with_newline(file: &File, len: u64) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] == b'\n')
}

#[cfg(not(unix))]
fn ends_with_newline(_file: &File, _len: u64) -> std::io::Result<bool> {
    Ok(true)
}

/// Whether the open `file` is still the one at `path`.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rotates_between_records_and_keeps_n_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = RotatingFile::open(dir.path().join("a.jsonl"), 25, 2).unwrap();
        for i in 0..10 {
            f.append(&format!("{{\"n\":{i:02},\"pad\":1}}")).unwrap(); // 19 bytes + newline
        }
        // One record per file; the newest three survive.
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
        assert_eq!(read(dir.path().join("a.jsonl")), "{\"n\":09,\"pad\":1}\n");
        assert_eq!(read(f.rotated_path(1)), "{\"n\":08,\"pad\":1}\n");
        assert_eq!(read(f.rotated_path(2)), "{\"n\":07,\"pad\":1}\n");
        assert!(!f.rotated_path(3).exists());
    }

    /// Two writers of one file, as `serve` and `chat` are: each counts its own records
    /// and reads the real size only now and then, yet no record is lost or split, and no
    /// file outgrows `max_bytes` by more than the other writer's records between two
    /// readings.
    #[test]
    fn two_writers_share_a_file_and_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.jsonl");
        let max = 2_000;
        let mut a = RotatingFile::open(&path, max, 100).unwrap();
        let mut b = RotatingFile::open(&path, max, 100).unwrap();
        for i in 0..300 {
            // 19 bytes and the newline each; `n` is a string (JSON numbers have no leading zeros).
            a.append(&format!("{{\"w\":\"a\",\"n\":\"{i:03}\"}}"))
                .unwrap();
            b.append(&format!("{{\"w\":\"b\",\"n\":\"{i:03}\"}}"))
                .unwrap();
        }
        let mut lines = Vec::new();
        for n in 0..=100 {
            let p = if n == 0 {
                path.clone()
            } else {
                a.rotated_path(n)
            };
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let overshoot = u64::from(STAT_EVERY) * 20;
            assert!(
                text.len() as u64 <= max + overshoot,
                "{} holds {} bytes",
                p.display(),
                text.len()
            );
            lines.extend(text.lines().map(str::to_string));
        }
        assert_eq!(lines.len(), 600, "every record is somewhere");
        for line in &lines {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v["n"].is_string(), "{line}");
        }
        let files = (1..=100).filter(|n| a.rotated_path(*n).exists()).count();
        // 12,000 bytes in files of 2,000 (a little more with two writers).
        assert!(files >= 3, "the file was rotated ({files} rotated files)");
    }

    #[cfg(unix)]
    #[test]
    fn created_private_and_an_incomplete_line_is_ended() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/a.jsonl");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"torn\":").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut f = RotatingFile::open(&path, 1 << 20, 1).unwrap();
        f.append("{}").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"torn\":\n{}\n");
    }
}
