//! Secrets the operator gives to plugins and MCP servers, and the rule that keeps them
//! from leaving through toolhost (docs/secrets.md).
//!
//! - [`SecretSource`]: where a value comes from, as written in `toolhost.toml`: the value
//!   itself, `{ env = "VAR" }`, `{ file = "PATH" }` (a file only its owner may read) or
//!   `{ keyring = "SERVICE/USER" }` (the system keyring, cargo feature `keyring`).
//!   [`SecretSource::resolve`] reads it, bounded ([`MAX_SECRET_BYTES`],
//!   [`KEYRING_TIMEOUT`]), into a [`Secret`] or a typed [`SecretError`].
//! - [`Secret`]: a value whose `Debug` and `Display` never show it.
//! - [`Redactor`]: replaces every exact occurrence of a secret value of at least
//!   [`MIN_REDACTED_LEN`] bytes with `[redacted: KEY]` in a tool's result, its error and
//!   the text it logs, before a model, a client, the audit trail or a log line sees it.
//!   Shorter values cannot be told from ordinary text and are not replaced; a value the
//!   tool transforms (encodes, splits, reverses) is not recognised either. Redaction
//!   stops accidental echoes; it does not contain a plugin that means to leak what it
//!   was given (that is what the network grant bounds).

mod redactor;
mod source;

pub use redactor::{MIN_REDACTED_LEN, Redactor};
pub use source::{KEYRING_TIMEOUT, MAX_SECRET_BYTES, Secret, SecretError, SecretSource};

#[cfg(test)]
mod tests;
