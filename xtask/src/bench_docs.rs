//! `cargo xtask bench-docs`: rebuilds `docs/benchmarks.md` from its summary (everything
//! before the first area section, kept as written) and the area files
//! `docs/benchmarks/{core,wasm,mcp,llm,langs,tenants,search}.md`, whose headings are shifted so that each
//! area's top heading becomes a level-2 heading. Headings inside code fences are left alone.

use std::path::Path;

use crate::{Result, root};

/// The area files, in the order they appear.
const AREAS: [&str; 7] = ["core", "wasm", "mcp", "llm", "langs", "tenants", "search"];

/// The first heading of the first area: where the generated part starts.
const FIRST_AREA: &str = "Tool core";

/// Rebuilds docs/benchmarks.md.
pub fn run() -> Result {
    let docs = root().join("docs");
    let target = docs.join("benchmarks.md");
    let current = read(&target)?;
    let summary = summary_of(&current);
    let mut out = summary.trim_end().to_string();
    out.push('\n');
    for area in AREAS {
        let text = read(&docs.join("benchmarks").join(format!("{area}.md")))?;
        out.push('\n');
        out.push_str(&shift_headings(text.trim_end()));
        out.push('\n');
    }
    std::fs::write(&target, out).map_err(|e| format!("{}: {e}", target.display()))?;
    println!("wrote {}", target.display());
    Ok(())
}

fn read(p: &Path) -> Result<String> {
    std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// Everything before the first area heading (`#… Tool core`), or the whole text.
fn summary_of(text: &str) -> &str {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if heading_level(line).is_some()
            && line.trim_start_matches('#').trim().starts_with(FIRST_AREA)
        {
            return &text[..offset];
        }
        offset += line.len();
    }
    text
}

/// `Some(level)` for a Markdown heading line (`## x` → 2).
fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    (hashes > 0 && line[hashes..].starts_with(' ')).then_some(hashes)
}

/// Shifts every heading outside code fences so the shallowest becomes level 2.
fn shift_headings(text: &str) -> String {
    let mut fence = false;
    let mut min = usize::MAX;
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        } else if !fence && let Some(l) = heading_level(line) {
            min = min.min(l);
        }
    }
    if min == usize::MAX {
        return text.to_string();
    }
    let mut fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
            out.push(line.to_string());
        } else if !fence && let Some(l) = heading_level(line) {
            out.push(format!("{}{}", "#".repeat(l + 2 - min), &line[l..]));
        } else {
            out.push(line.to_string());
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_shift_outside_fences_only() {
        let text = "# Area\n\n```sh\n# a comment\n```\n\n## Results\n";
        assert_eq!(
            shift_headings(text),
            "## Area\n\n```sh\n# a comment\n```\n\n### Results"
        );
    }

    #[test]
    fn summary_stops_at_the_first_area() {
        let text = "# Benchmarks\n\n| table |\n\n## Tool core: x\n\nbody\n";
        assert_eq!(summary_of(text), "# Benchmarks\n\n| table |\n\n");
    }
}
