//! The MCP App views a plugin ships: `NAME.ui/TOOL.html` beside `NAME.wasm`, one page per
//! tool, served by `serve` at `ui://NAME/TOOL.html` and tied to the tool by its
//! `_meta.ui.resourceUri` (`toolhost_core::tools::view`).
//!
//! The folder comes from the plugin's author, so it is read as hostile input, bounded, and
//! a bad page costs only itself: the tool is served without a view and a warning says why.
//! - the folder and each page must be plain (no symbolic link: a link could show any file
//!   the host can read as a page);
//! - a page names a tool the component described (`TOOL.html`), is at most
//!   [`MAX_VIEW_BYTES`] and is UTF-8;
//! - at most [`MAX_ENTRIES`] entries of the folder are looked at.
//!
//! The page's digest goes into the tool's approved definition, so a changed page withholds
//! the tool until approved again (docs/writing-plugins.md, "A view for a tool (MCP Apps)").

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use toolhost_core::tools::view::AppView;

/// The largest page a tool's view may be, bytes.
pub const MAX_VIEW_BYTES: u64 = 2 * 1024 * 1024;

/// The most entries of a `NAME.ui/` folder looked at; the rest are ignored with a warning.
pub const MAX_ENTRIES: usize = 256;

/// The views folder of the component at `wasm` (`NAME.wasm` → `NAME.ui`).
pub fn folder_of(wasm: &Path) -> PathBuf {
    wasm.with_extension("ui")
}

/// The views found for a plugin: by the tool's described name, and what was refused.
#[derive(Debug, Default, Clone)]
pub struct Views {
    /// The accepted views, by tool name.
    pub by_tool: BTreeMap<String, Arc<AppView>>,
    /// Why each refused entry was refused (for the operator's warnings).
    pub refused: Vec<String>,
}

/// Reads the views of plugin `plugin` (file stem of `wasm`) for the tools `tools` (their
/// described names). A missing folder is no views.
pub fn load(plugin: &str, wasm: &Path, tools: &[&str]) -> Views {
    let dir = folder_of(wasm);
    let mut views = Views::default();
    let meta = match std::fs::symlink_metadata(&dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return views,
        Err(e) => {
            views.refused.push(format!("{}: {e}", dir.display()));
            return views;
        }
    };
    if !meta.is_dir() {
        views.refused.push(format!(
            "{}: not a folder (a symbolic link is not followed)",
            dir.display()
        ));
        return views;
    }
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) => {
            views.refused.push(format!("{}: {e}", dir.display()));
            return views;
        }
    };
    let mut seen = 0usize;
    for entry in entries {
        seen += 1;
        if seen > MAX_ENTRIES {
            views.refused.push(format!(
                "{}: more than {MAX_ENTRIES} entries; the rest are not read",
                dir.display()
            ));
            break;
        }
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                views.refused.push(format!("{}: {e}", dir.display()));
                continue;
            }
        };
        let path = entry.path();
        let shown = path.display().to_string();
        let file_name = entry.file_name();
        let Some(tool) = file_name
            .to_str()
            .and_then(|n| n.strip_suffix(".html"))
            .filter(|t| tools.contains(t))
        else {
            views.refused.push(format!(
                "{shown}: not TOOL.html for a tool of plugin {plugin} ({})",
                tools.join(", ")
            ));
            continue;
        };
        match read_page(&path) {
            Ok(bytes) => {
                let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
                let Ok(html) = String::from_utf8(bytes) else {
                    views.refused.push(format!("{shown}: not UTF-8 text"));
                    continue;
                };
                views.by_tool.insert(
                    tool.to_string(),
                    Arc::new(AppView {
                        uri: format!("ui://{}/{}.html", segment(plugin), segment(tool)),
                        html: Arc::from(html),
                        digest,
                    }),
                );
            }
            Err(why) => views.refused.push(format!("{shown}: {why}")),
        }
    }
    views
}

/// `name` as one part of a `ui://` URI: letters, digits, `-`, `_` and `.` as they are,
/// every other byte percent-encoded, so a plugin file named `a b?c.wasm` cannot make a
/// URI of another shape. (Hand-written: the `url` crate encodes whole URLs by their
/// parts' rules, and a host part would be lower-cased or refused rather than kept.)
fn segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Reads one page: a plain file of at most [`MAX_VIEW_BYTES`], read no further.
fn read_page(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a plain file (a symbolic link is not followed)".into());
    }
    if meta.len() > MAX_VIEW_BYTES {
        return Err(format!(
            "{} bytes, more than the {MAX_VIEW_BYTES} a view may be",
            meta.len()
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    // The file may grow between the size check and the read: read one byte past the limit
    // at most, and refuse if it is there.
    file.take(MAX_VIEW_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_VIEW_BYTES {
        return Err(format!(
            "more than the {MAX_VIEW_BYTES} bytes a view may be"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin_dir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("demo.wasm");
        std::fs::create_dir(dir.path().join("demo.ui")).unwrap();
        (dir, wasm)
    }

    #[test]
    fn a_page_per_tool_is_a_view_and_hostile_entries_cost_only_themselves() {
        let (dir, wasm) = plugin_dir();
        let ui = dir.path().join("demo.ui");
        std::fs::write(ui.join("greet.html"), "<p>hi</p>").unwrap();
        // Too big, a link to a file the host can read, not UTF-8, no such tool, a folder.
        std::fs::write(ui.join("big.html"), vec![b'a'; MAX_VIEW_BYTES as usize + 1]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", ui.join("link.html")).unwrap();
        std::fs::write(ui.join("bytes.html"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(ui.join("nobody.html"), "<p>x</p>").unwrap();
        std::fs::create_dir(ui.join("dir.html")).unwrap();
        let tools = ["greet", "big", "link", "bytes", "dir"];
        let v = load("demo", &wasm, &tools);
        assert_eq!(v.by_tool.len(), 1, "{v:?}");
        let greet = &v.by_tool["greet"];
        assert_eq!(greet.uri, "ui://demo/greet.html");
        assert_eq!(&*greet.html, "<p>hi</p>");
        assert_eq!(
            greet.digest,
            format!("sha256:{}", hex::encode(Sha256::digest(b"<p>hi</p>")))
        );
        let refused = v.refused.join("\n");
        for why in [
            "big.html: 2097153 bytes, more than",
            "link.html: not a plain file",
            "bytes.html: not UTF-8",
            "nobody.html: not TOOL.html for a tool of plugin demo",
            "dir.html: not a plain file",
        ] {
            assert!(refused.contains(why), "{why} not in:\n{refused}");
        }
    }

    #[test]
    fn an_odd_plugin_name_is_encoded_in_the_uri() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("a b?#c.wasm");
        std::fs::create_dir(dir.path().join("a b?#c.ui")).unwrap();
        std::fs::write(dir.path().join("a b?#c.ui/greet.html"), "<p>hi</p>").unwrap();
        let v = load("a b?#c", &wasm, &["greet"]);
        assert_eq!(v.by_tool["greet"].uri, "ui://a%20b%3F%23c/greet.html");
    }

    #[test]
    fn a_linked_folder_is_refused_and_a_missing_one_is_no_views() {
        let dir = tempfile::tempdir().unwrap();
        let wasm = dir.path().join("demo.wasm");
        let v = load("demo", &wasm, &["greet"]);
        assert!(v.by_tool.is_empty() && v.refused.is_empty(), "{v:?}");
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("greet.html"), "<p>hi</p>").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("demo.ui")).unwrap();
        let v = load("demo", &wasm, &["greet"]);
        assert!(v.by_tool.is_empty(), "{v:?}");
        assert!(v.refused[0].contains("not a folder"), "{v:?}");
    }

    #[test]
    fn a_crowded_folder_is_read_only_so_far() {
        let (dir, wasm) = plugin_dir();
        for i in 0..(MAX_ENTRIES + 10) {
            std::fs::write(dir.path().join(format!("demo.ui/x{i}.txt")), "").unwrap();
        }
        let v = load("demo", &wasm, &["greet"]);
        assert_eq!(v.refused.len(), MAX_ENTRIES + 1, "{:?}", v.refused.last());
        assert!(v.refused[MAX_ENTRIES].contains("more than 256 entries"));
    }
}
