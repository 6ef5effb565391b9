//! toolhost started by toolhost: a wrapped server's command may be `toolhost serve
//! --stdio` itself, which is fine with a config of its own and a runaway with the same one
//! (it wraps itself again, without end, one process more at each level).
//!
//! Every toolhost that reads a config records it in a chain it hands to the MCP servers it
//! starts, in their environment ([`CHAIN_ENV`]: the digests of the configs of the
//! toolhosts above, outermost first). A toolhost whose own config is already in the chain
//! it inherited refuses to start ([`NestingError::SelfWrap`]), as does one nested deeper
//! than [`MAX_NESTING`] (configs that wrap each other in a longer cycle, or made fresh at
//! each level). The parent then sees that server fail to start, with the reason on its
//! stderr, and serves the rest.

use std::path::Path;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The environment variable that carries the chain to a started server.
pub const CHAIN_ENV: &str = "TOOLHOST_SERVE_CHAIN";

/// The most toolhosts one chain may hold (each started by the one before, through a
/// wrapped server's command).
pub const MAX_NESTING: usize = 8;

/// The chain this process hands to its children (set by [`enter`]).
static CHAIN: OnceLock<String> = OnceLock::new();

/// Why this toolhost must not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NestingError {
    /// A toolhost above it (which started it as a wrapped server) reads the same config.
    #[error(
        "toolhost with config {config} was started by a toolhost reading the same config \
         (through one of its [mcp.servers]): it would start itself again without end; give \
         the wrapped toolhost a config of its own (`toolhost serve --stdio --config OTHER`)"
    )]
    SelfWrap {
        /// The config file.
        config: String,
    },
    /// More toolhosts above it than [`MAX_NESTING`] allows.
    #[error(
        "toolhost is nested {depth} deep (each started by the one before as a wrapped MCP \
         server), more than {MAX_NESTING}: the configs wrap each other in a cycle"
    )]
    TooDeep {
        /// How many toolhosts are above it.
        depth: usize,
    },
}

/// The digest a config is known by in the chain: of its absolute path (canonical when it
/// exists), so two spellings of one file are one config.
fn id_of(config: &Path) -> String {
    let path = std::fs::canonicalize(config)
        .or_else(|_| std::path::absolute(config))
        .unwrap_or_else(|_| config.to_path_buf());
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the chain `inherited` (the value of [`CHAIN_ENV`] this process got, if any)
/// against this process's config `config`: the chain its children get, or why it must not
/// start.
/// A config that does not exist starts no server, so it cannot wrap itself: it is not
/// checked against the chain (a wrapped toolhost without a config of its own is fine) and
/// it is recorded as an empty place, which still counts towards [`MAX_NESTING`].
pub fn check(inherited: Option<&str>, config: &Path) -> Result<String, NestingError> {
    let own = if config.is_file() {
        id_of(config)
    } else {
        "-".to_string()
    };
    let above: Vec<&str> = inherited
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .collect();
    if own != "-" && above.contains(&own.as_str()) {
        return Err(NestingError::SelfWrap {
            config: config.display().to_string(),
        });
    }
    if above.len() >= MAX_NESTING {
        return Err(NestingError::TooDeep { depth: above.len() });
    }
    let mut chain = above;
    chain.push(&own);
    Ok(chain.join(","))
}

/// [`check`] against this process's environment, recording the chain its children get.
/// Called once, by a command that read its config, before it starts any server.
pub fn enter(config: &Path) -> Result<(), NestingError> {
    let inherited = std::env::var(CHAIN_ENV).ok();
    let chain = check(inherited.as_deref(), config)?;
    let _ = CHAIN.set(chain);
    Ok(())
}

/// The chain a started server gets: this process's own ([`enter`]), else the one it
/// inherited (a program using the library in between keeps the chain whole).
pub(crate) fn for_children() -> Option<String> {
    CHAIN
        .get()
        .cloned()
        .or_else(|| std::env::var(CHAIN_ENV).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_in_the_chain_or_a_long_chain_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
        std::fs::write(&a, "").unwrap();
        let first = check(None, &a).unwrap();
        assert_eq!(first.split(',').count(), 1);
        // Another config below it is fine (one that does not exist, twice: it starts
        // nothing); the same one, by another spelling, is not.
        let second = check(Some(&first), &b).unwrap();
        let second = check(Some(&second), &b).unwrap();
        assert!(second.starts_with(&first), "{second}");
        let again = dir.path().join(".").join("a.toml");
        assert!(matches!(
            check(Some(&second), &again),
            Err(NestingError::SelfWrap { .. })
        ));
        let long = (0..MAX_NESTING)
            .map(|i| format!("{i:016x}"))
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(
            check(Some(&long), &b),
            Err(NestingError::TooDeep { depth: MAX_NESTING })
        );
    }
}
