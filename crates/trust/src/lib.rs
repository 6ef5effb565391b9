//! # toolhost-trust
//!
//! The operator's side of the trust model (see `docs/trust.md`): a plugin *requests*
//! capabilities (its `NAME.toml`), the operator *grants* them by approving, and the
//! approval is recorded in `toolhost.lock` in the plugins folder. This crate is plain
//! data, with no wasm or MCP dependency, so that it can be tested alone:
//!
//! - [`lock`]: the lock file model, loaded with typed errors and saved atomically;
//! - [`Capabilities`] (crate `toolhost-caps`, re-exported): the capability set of a
//!   request, an approval or a grant, the "within" relation and the intersection;
//! - [`canon`]: canonical JSON and the hash of a tool definition;
//! - [`defs`]: the approved tool definitions kept beside the lock, so a later diff can
//!   show the old text next to the new;
//! - [`diff`]: what changed between an approval and what a plugin asks for now;
//! - [`state`]: the trust state of a plugin or an MCP server's tools;
//! - [`version`]: how an offered release's version stands to the approved one (the one
//!   rollback rule of every route).

pub mod canon;
pub mod defs;
pub mod diff;
pub mod error;
pub mod lock;
pub mod state;
pub mod version;

pub use canon::{ToolDef, canonical_json};
pub use defs::DefStore;
pub use diff::{Diff, ToolChange};
pub use error::TrustError;
pub use lock::{
    LOCK_FILE, Lock, McpEntry, PluginEntry, SignatureCovers, SkillEntry, now_rfc3339,
    write_atomically,
};
pub use state::{
    HeldCause, McpToolState, PackageSignature, TrustOptions, TrustState, UpdateRule, evaluate,
    evaluate_mcp_tool,
};
pub use toolhost_caps::{Capabilities, Folder, NetRule, tighter_limit};
pub use version::{Version, VersionChange};

/// Cleans untrusted text for a terminal: every control character (ESC of ANSI/OSC
/// sequences, CR, BEL, newlines...) is written as an escape such as `\u{1b}`, so a
/// description cannot rewrite what the operator sees while approving it; and so are the
/// characters that hide text (zero-width, tag characters), so it cannot say to a model
/// what the operator does not see.
pub fn clean(text: &str) -> String {
    // One escaping rule for all text under review (core's `escape::reveal_line`).
    toolhost_core::tools::escape::reveal_line(text).into_owned()
}
