//! The denials of one call: what the sandbox refused (a folder, a host, a key), each with
//! the policy line that would allow it. The HTTP gate, the filesystem guard, the config
//! store and the socket check record here; the call's error message quotes them.

use std::sync::{Arc, Mutex};

/// Denials met during one call, with the policy line that would allow each.
pub type Denials = Arc<Mutex<Vec<String>>>;

/// Records a denial (logged, and kept for the call's error message; at most 32 per call).
/// The text may quote guest-chosen names, so it is cleaned of control characters.
pub(crate) fn record_denial(denials: &Denials, msg: String) {
    let msg = crate::reports::clean(&msg, 1024);
    tracing::info!(target: "toolhost::sandbox", "{msg}");
    let mut d = denials.lock().unwrap_or_else(|e| e.into_inner());
    if d.len() < 32 {
        d.push(msg);
    }
}
