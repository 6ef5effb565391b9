//! Pipeline stage 2: the arguments against the tool's JSON Schema (compiled once, at
//! registration). The error names each failing path and why, at most five of them.

use serde_json::Value;

use super::entry::ToolEntry;

/// Why `args` fail `entry`'s schema, or `None` when they pass.
pub(super) fn validation_error(entry: &ToolEntry, args: &Value) -> Option<String> {
    const MAX_REPORTED: usize = 5;
    let mut msgs = Vec::new();
    let mut more = 0usize;
    for err in entry.validator.iter_errors(args) {
        if msgs.len() < MAX_REPORTED {
            let path = err.instance_path().to_string();
            let at = if path.is_empty() {
                "at the top level".to_string()
            } else {
                format!("at '{path}'")
            };
            msgs.push(format!("{at}: {err}"));
        } else {
            more += 1;
        }
    }
    if msgs.is_empty() {
        return None;
    }
    let mut s = msgs.join("; ");
    if more > 0 {
        s.push_str(&format!("; and {more} more problem(s)"));
    }
    Some(s)
}
