//! Plugin configuration through `wasi:config/store`: the keys a request file may ask for
//! ([`check_keys`]), and [`ConfigValues`], the values the operator gave for the keys a
//! plugin was granted. A plugin sees a key only when it both asked for it (its
//! `NAME.toml`, approved) and the operator gave a value (`[plugins.NAME.config]`); every
//! other key reads as absent. See docs/secrets.md.

use std::collections::BTreeMap;
use std::sync::Arc;

use toolhost_core::secrets::{Redactor, Secret};

/// The most keys one request file may ask for.
pub const MAX_CONFIG_KEYS: usize = 64;
/// The longest key, in bytes.
pub const MAX_CONFIG_KEY_LEN: usize = 128;

/// Why `key` cannot be a config key, if it cannot: 1 to [`MAX_CONFIG_KEY_LEN`] bytes of
/// ASCII letters, digits, `_`, `-` and `.`.
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() {
        return Some("is empty".into());
    }
    if key.len() > MAX_CONFIG_KEY_LEN {
        return Some(format!(
            "is {} bytes long (at most {MAX_CONFIG_KEY_LEN})",
            key.len()
        ));
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Some("may hold only ASCII letters, digits, `_`, `-` and `.`".into());
    }
    None
}

/// The first problem of a requested key list: too many keys, a bad key or a repeated
/// one, as `(key shown, why)`. Keys are shown cut to 40 characters.
pub fn check_keys(keys: &[String]) -> Result<(), (String, String)> {
    let shown = |k: &str| -> String {
        let cut: String = k.chars().take(40).collect();
        if cut.len() < k.len() {
            format!("{}…", cut.escape_debug())
        } else {
            cut.escape_debug().to_string()
        }
    };
    if keys.len() > MAX_CONFIG_KEYS {
        return Err((
            shown(&keys[MAX_CONFIG_KEYS]),
            format!(
                "asks for {} keys; a plugin may ask for at most {MAX_CONFIG_KEYS}",
                keys.len()
            ),
        ));
    }
    for (i, k) in keys.iter().enumerate() {
        if let Some(why) = key_problem(k) {
            return Err((shown(k), why));
        }
        if keys[..i].contains(k) {
            return Err((shown(k), "is asked for twice".into()));
        }
    }
    Ok(())
}

/// The configuration values a plugin's calls see, by key. `Debug` shows the keys only.
#[derive(Clone, Default, PartialEq)]
pub struct ConfigValues {
    values: Arc<BTreeMap<String, Secret>>,
}

impl std::fmt::Debug for ConfigValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl FromIterator<(String, Secret)> for ConfigValues {
    fn from_iter<I: IntoIterator<Item = (String, Secret)>>(iter: I) -> Self {
        ConfigValues {
            values: Arc::new(iter.into_iter().collect()),
        }
    }
}

impl ConfigValues {
    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&Secret> {
        self.values.get(key)
    }

    /// The keys given, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }

    /// Every `(key, value)` pair, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Secret)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Whether no value is given.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Only the values of `keys`.
    pub fn only(&self, keys: &[String]) -> ConfigValues {
        if self.values.keys().all(|k| keys.contains(k)) {
            return self.clone();
        }
        self.values
            .iter()
            .filter(|(k, _)| keys.contains(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// The redactor of these values (see [`Redactor`]).
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.values.iter().map(|(k, v)| (k.as_str(), v.expose())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_in_number_length_and_alphabet() {
        assert!(check_keys(&["API_KEY".into(), "region.name-2".into()]).is_ok());
        let many: Vec<String> = (0..10_000).map(|i| format!("K{i}")).collect();
        let (key, why) = check_keys(&many).unwrap_err();
        assert_eq!(key, "K64");
        assert!(why.contains("10000 keys"), "{why}");
        let (key, why) = check_keys(&["x".repeat(1 << 20)]).unwrap_err();
        assert!(key.ends_with('…') && key.len() < 50, "{key}");
        assert!(why.contains("1048576 bytes"), "{why}");
        assert!(check_keys(&["a b".into()]).is_err());
        assert!(check_keys(&["".into()]).is_err());
        assert!(check_keys(&["K".into(), "K".into()]).is_err());
    }

    #[test]
    fn only_keeps_the_granted_keys_and_debug_hides_values() {
        let v: ConfigValues = [
            ("A".to_string(), Secret::new("value-of-a")),
            ("B".to_string(), Secret::new("value-of-b")),
        ]
        .into_iter()
        .collect();
        let a = v.only(&["A".into()]);
        assert_eq!(a.keys().collect::<Vec<_>>(), ["A"]);
        assert_eq!(format!("{v:?}"), r#"{"A", "B"}"#);
        assert!(!v.redactor().is_empty());
    }
}
