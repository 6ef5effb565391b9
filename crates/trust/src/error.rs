//! Errors of the trust crate: each names the file concerned.

/// What can go wrong reading or writing the lock and its definition store.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The file could not be read.
    #[error("cannot read {file}: {source}")]
    Read {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file could not be written (temp file, sync or rename).
    #[error("cannot write {file}: {source}")]
    Write {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The lock is not valid TOML for the lock schema (hand-edited, truncated, ...).
    #[error("invalid lock file {file}: {message} (fix it, or delete the entry and approve again)")]
    Invalid {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The lock was written by a newer toolhost.
    #[error("lock file {file} has version {found}; this toolhost reads version {supported}")]
    Version {
        /// The file.
        file: String,
        /// The version found.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
}
