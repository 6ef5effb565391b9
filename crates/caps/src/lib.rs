//! The one model of a plugin's capabilities: what it may read and write (typed
//! [`Folder`]s), which hosts it may reach ([`NetRule`]s, parsed once), which host
//! environment variables and `wasi:config/store` keys it sees, and its limits.
//!
//! A request (the plugin's `NAME.toml`), an approval (the operator's entry in the lock)
//! and what is in effect are all one [`Capabilities`], related by
//! [`Capabilities::within`] and [`Capabilities::intersect`]; the runtime turns the part a
//! tool's declared permissions unlock into its sandbox in one place (the WASI context
//! builder of `toolhost-wasm`). Adding a permission kind starts here; docs/design.md
//! ("Adding a permission kind") lists every file it touches.

pub mod folder;
pub mod keys;
pub mod net;
pub mod set;

pub use folder::Folder;
pub use net::{NetRule, NetRuleError};
pub use set::{Capabilities, folder_inside, tighter_limit};
