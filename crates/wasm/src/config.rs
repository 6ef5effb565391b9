//! Plugin configuration through `wasi:config/store`: [`ConfigValues`], the values the
//! operator gave for the keys a plugin was granted (which keys a request may ask for is
//! `toolhost_caps::keys`, re-exported here). A plugin sees a key only when it both asked for it (its
//! `NAME.toml`, approved) and the operator gave a value (`[plugins.NAME.config]`); every
//! other key reads as absent. See docs/secrets.md.

use std::collections::BTreeMap;
use std::sync::Arc;

use toolhost_core::secrets::{Redactor, Secret};

pub use toolhost_caps::keys::{MAX_CONFIG_KEY_LEN, MAX_CONFIG_KEYS, check_keys, key_problem};

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
