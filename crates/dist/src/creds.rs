//! Registry credentials: `TOOLHOST_REGISTRY_USER` + `TOOLHOST_REGISTRY_PASSWORD` from the
//! environment win; otherwise the standard Docker config (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`), entry `auths.HOST[:PORT].auth` (base64 of `user:password`).
//! Credential helpers (`credsStore`, `credHelpers`) are not run: running a program named by a
//! config file is more than a plugin install should do; such registries need the env vars.
//! Without credentials the registry is used anonymously.

use std::io::Read;
use std::path::PathBuf;

use base64::Engine;
use oci_client::secrets::RegistryAuth;

/// The Docker config is small; anything larger is not read.
const MAX_DOCKER_CONFIG_BYTES: u64 = 1024 * 1024;

/// The credentials to use for `registry` (`HOST[:PORT]`).
pub(crate) fn registry_auth(registry: &str) -> RegistryAuth {
    if let (Ok(user), Ok(password)) = (
        std::env::var("TOOLHOST_REGISTRY_USER"),
        std::env::var("TOOLHOST_REGISTRY_PASSWORD"),
    ) {
        tracing::debug!(registry, "registry credentials from TOOLHOST_REGISTRY_USER");
        return RegistryAuth::Basic(user, password);
    }
    match docker_config_auth(registry) {
        Some((user, password)) => {
            tracing::debug!(registry, "registry credentials from the Docker config");
            RegistryAuth::Basic(user, password)
        }
        None => RegistryAuth::Anonymous,
    }
}

fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker").join("config.json"))
}

fn docker_config_auth(registry: &str) -> Option<(String, String)> {
    let path = docker_config_path()?;
    let mut text = String::new();
    std::fs::File::open(&path)
        .ok()?
        .take(MAX_DOCKER_CONFIG_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let config: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(path = %path.display(), "ignoring an unreadable Docker config: {e}");
            return None;
        }
    };
    let auths = config.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(key, value)| {
        (auth_key_host(key) == registry
            || (registry == "docker.io" && auth_key_host(key) == "index.docker.io"))
            .then_some(value)
    })?;
    let encoded = entry.get("auth")?.as_str()?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// Docker config keys are `HOST[:PORT]` or a URL such as `https://index.docker.io/v1/`.
fn auth_key_host(key: &str) -> &str {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    k.split('/').next().unwrap_or(k)
}

#[cfg(test)]
mod tests {
    use super::auth_key_host;

    #[test]
    fn docker_config_keys() {
        assert_eq!(auth_key_host("127.0.0.1:5000"), "127.0.0.1:5000");
        assert_eq!(
            auth_key_host("https://index.docker.io/v1/"),
            "index.docker.io"
        );
        assert_eq!(auth_key_host("http://reg.example:8080"), "reg.example:8080");
    }
}
