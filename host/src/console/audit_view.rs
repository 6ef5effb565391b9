//! The console's audit page (docs/console.md, "Audit"): the trail read newest first, over
//! the current file and its rotated ones (`audit.jsonl`, `audit.jsonl.1`, …), filtered by
//! client, tool, outcome and time, one page at a time, in bounded memory whatever the
//! files' size.
//!
//! Records are read backwards in blocks of [`BLOCK`] bytes. A page ends at a [`Cursor`]
//! (file number and byte offset), and the next page starts there: a page costs what it
//! reads, not what came before it, so the 1,000th page of a 1 GB trail is as cheap as the
//! first one with the same filter. A line longer than [`MAX_LINE`] (no record toolhost
//! writes is) is skipped, not buffered; a line that is not a record is skipped.
//! Records are shown as written: the trail is already redacted, and the page escapes
//! every value.
//!
//! Hand-written rather than a crate's reverse line reader: the page needs the byte offset
//! of each line (for its cursor and its link) and a bound on line length, which the
//! reverse readers on crates.io do not give.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::tools::audit::AuditRecord;

/// Bytes read at a time.
pub const BLOCK: usize = 64 * 1024;
/// Longest line considered a record; longer ones are skipped.
pub const MAX_LINE: usize = 1024 * 1024;
/// Records on a page.
pub const PAGE: usize = 50;
/// Most bytes one page request reads before it stops with what it found (a filter that
/// matches nothing in a huge trail answers with an empty page and a cursor to go on).
pub const MAX_SCAN: u64 = 64 * 1024 * 1024;

/// A place in the trail: file number (0 the current file, `n` the `n`-th rotated one) and
/// a byte offset in it. A record's place is where its line starts; a page's `next` is
/// where the region of the next page ends (just after a newline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// The file's number.
    pub file: usize,
    /// The offset of a line's start in it.
    pub offset: u64,
}

impl Cursor {
    /// `FILE:OFFSET`.
    pub fn to_param(self) -> String {
        format!("{}:{}", self.file, self.offset)
    }

    /// Parses `FILE:OFFSET`.
    pub fn parse(text: &str) -> Option<Cursor> {
        let (f, o) = text.split_once(':')?;
        Some(Cursor {
            file: f.parse().ok()?,
            offset: o.parse().ok()?,
        })
    }
}

/// What the page shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Exact client (empty: any).
    pub client: String,
    /// Tool name containing this (empty: any).
    pub tool: String,
    /// `ok`, `error`, `denied` (empty: any).
    pub outcome: String,
    /// Records at or after this time (an RFC 3339 prefix, e.g. `2026-12-07T03:00`).
    pub since: String,
    /// Records before this time.
    pub until: String,
}

impl Filter {
    /// Whether `line` may match, by a substring search of the client and tool filters
    /// before the line is parsed: a record's JSON holds a value of plain characters
    /// (letters, digits, `_ - . :`) exactly as written, so a line without it cannot
    /// match. Values with other characters (which JSON may escape) are not pre-filtered.
    fn may_match(&self, line: &[u8]) -> bool {
        let plain = |v: &str| {
            v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
        };
        [&self.client, &self.tool]
            .into_iter()
            .filter(|v| !v.is_empty() && plain(v))
            .all(|v| memchr::memmem::find(line, v.as_bytes()).is_some())
    }

    fn matches(&self, r: &AuditRecord) -> bool {
        (self.client.is_empty() || r.client.as_deref() == Some(self.client.as_str()))
            && (self.tool.is_empty() || r.tool.contains(&self.tool))
            && match self.outcome.as_str() {
                "ok" => r.ok,
                "error" => !r.ok,
                "denied" => r.denied_by.is_some(),
                _ => true,
            }
            && (self.since.is_empty() || r.ts.as_str() >= self.since.as_str())
            && (self.until.is_empty() || r.ts.as_str() < self.until.as_str())
    }
}

/// One page of records, newest first.
#[derive(Debug, Default)]
pub struct Page {
    /// The records with where each is.
    pub records: Vec<(Cursor, AuditRecord)>,
    /// Where the next (older) page starts; `None` at the trail's start.
    pub next: Option<Cursor>,
    /// Bytes read for this page.
    pub scanned: u64,
}

/// The audit files of trail `path`: the current one, then `.1`, `.2`, … while they exist
/// (at most `keep`).
pub fn files(path: &Path, keep: usize) -> Vec<PathBuf> {
    let mut out = vec![path.to_path_buf()];
    for n in 1..=keep {
        let mut p = path.as_os_str().to_owned();
        p.push(format!(".{n}"));
        out.push(PathBuf::from(p));
    }
    out
}

/// Reads a page of records matching `filter` from `files` (newest first), starting
/// before `from` (`None`: the newest record).
pub fn page(files: &[PathBuf], filter: &Filter, from: Option<Cursor>) -> Page {
    let mut page = Page::default();
    let start = from.unwrap_or(Cursor {
        file: 0,
        offset: u64::MAX,
    });
    for (n, path) in files.iter().enumerate().skip(start.file) {
        let Ok(mut file) = File::open(path) else {
            continue;
        };
        let end = if n == start.file {
            start.offset
        } else {
            u64::MAX
        };
        let mut stop = None;
        let before = page.scanned;
        let records = &mut page.records;
        let (more, read) = each_line_backwards(&mut file, end, |offset, line, read| {
            if records.len() >= PAGE || before + read > MAX_SCAN {
                // Not looked at: the next page ends just after this line.
                stop = Some(Cursor {
                    file: n,
                    offset: offset + line.len() as u64 + 1,
                });
                return false;
            }
            if filter.may_match(line)
                && let Ok(r) = serde_json::from_slice::<AuditRecord>(line)
                && filter.matches(&r)
            {
                records.push((Cursor { file: n, offset }, r));
            }
            true
        });
        page.scanned += read;
        if stop.is_some() {
            page.next = stop;
            return page;
        }
        if page.records.len() >= PAGE && more {
            page.next = Some(Cursor {
                file: n + 1,
                offset: u64::MAX,
            });
            return page;
        }
    }
    page
}

/// The record whose line starts at `at`, if there is one.
pub fn record_at(files: &[PathBuf], at: Cursor) -> Option<AuditRecord> {
    let mut file = File::open(files.get(at.file)?).ok()?;
    file.seek(SeekFrom::Start(at.offset)).ok()?;
    let mut line = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        if let Some(i) = buf[..n].iter().position(|b| *b == b'\n') {
            line.extend_from_slice(&buf[..i]);
            break;
        }
        line.extend_from_slice(&buf[..n]);
        if line.len() > MAX_LINE {
            return None;
        }
    }
    serde_json::from_slice(&line).ok()
}

/// Calls `each(offset, line, bytes read so far)` for every whole line of `file` that ends before `end` (a
/// line start, or `u64::MAX`), last first, until it returns false. Returns whether the
/// file was read to its start, and the bytes read. Bytes after the last newline (a record being written) are
/// not a line yet.
fn each_line_backwards(
    file: &mut File,
    end: u64,
    mut each: impl FnMut(u64, &[u8], u64) -> bool,
) -> (bool, u64) {
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return (true, 0);
    };
    let mut read = 0u64;
    let mut pos = len.min(end);
    // `tail`: the bytes after `pos` not yet ended by a newline seen backwards.
    let mut tail: Vec<u8> = Vec::new();
    let mut too_long = false;
    // The first segment met is what follows the region's last newline: never a line.
    let mut trailing = true;
    let mut block = vec![0u8; BLOCK];
    while pos > 0 {
        let take = (pos as usize).min(BLOCK);
        pos -= take as u64;
        if file.seek(SeekFrom::Start(pos)).is_err() || file.read_exact(&mut block[..take]).is_err()
        {
            return (true, read);
        }
        read += take as u64;
        let chunk = &block[..take];
        let mut cut = take;
        while let Some(i) = chunk[..cut].iter().rposition(|b| *b == b'\n') {
            let start = pos + i as u64 + 1;
            let mut line = chunk[i + 1..cut].to_vec();
            line.extend_from_slice(&tail);
            tail.clear();
            let skip = std::mem::take(&mut too_long) || std::mem::take(&mut trailing);
            if !line.is_empty() && !skip && !each(start, &line, read) {
                return (false, read);
            }
            cut = i;
        }
        if tail.len() + cut > MAX_LINE {
            too_long = true;
            tail.clear();
        } else if !too_long {
            let mut t = chunk[..cut].to_vec();
            t.extend_from_slice(&tail);
            tail = t;
        }
    }
    if !tail.is_empty() && !too_long && !trailing {
        return (each(0, &tail, read), read);
    }
    (true, read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn record(i: usize, client: &str, ok: bool) -> String {
        serde_json::json!({
            "ts": format!("2026-12-07T03:{:02}:{:02}.000Z", i / 60 % 60, i % 60),
            "call_id": format!("c{i}"), "invocation": i, "session": "mcp",
            "client": client, "tool": format!("tool_{}", i % 3), "arguments": {"i": i},
            "decisions": [], "executed": true, "ok": ok, "duration_ms": 1.0,
            "truncated": false
        })
        .to_string()
    }

    #[test]
    fn pages_go_newest_first_across_rotated_files_and_skip_junk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let all = files(&path, 2);
        // Oldest records in .2, then .1, then the current file.
        let mut i = 0;
        for f in all.iter().rev() {
            let mut out = File::create(f).unwrap();
            for _ in 0..70 {
                writeln!(
                    out,
                    "{}",
                    record(i, if i % 2 == 0 { "a" } else { "b" }, i % 5 != 0)
                )
                .unwrap();
                if i % 17 == 0 {
                    writeln!(out, "not a record").unwrap();
                    writeln!(out, "{}", "x".repeat(MAX_LINE + 10)).unwrap();
                }
                i += 1;
            }
        }
        let mut seen = Vec::new();
        let mut from = None;
        loop {
            let p = page(&all, &Filter::default(), from);
            assert!(p.records.len() <= PAGE);
            seen.extend(p.records.iter().map(|(_, r)| r.invocation));
            match p.next {
                Some(c) => from = Some(c),
                None => break,
            }
        }
        let want: Vec<u64> = (0..210).rev().collect();
        assert_eq!(seen, want);
        let only_b_errors = Filter {
            client: "b".into(),
            outcome: "error".into(),
            ..Filter::default()
        };
        let p = page(&all, &only_b_errors, None);
        assert!(
            p.records
                .iter()
                .all(|(_, r)| r.client.as_deref() == Some("b") && !r.ok)
        );
        assert_eq!(p.records.len(), 21, "odd multiples of 5 below 210");
        let (at, r) = &p.records[3];
        assert_eq!(record_at(&all, *at).as_ref(), Some(r));
    }
}
