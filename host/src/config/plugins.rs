//! `plugins` of `toolhost.toml`: the plugins folder and the operator's settings per
//! plugin, today its `wasi:config/store` values (`[plugins.NAME.config]`, see
//! docs/secrets.md).
//!
//! ```toml
//! plugins = "./plugins"          # the folder alone, as before
//! ```
//! or
//! ```toml
//! [plugins]
//! folder = "./plugins"
//! [plugins.weather.config]
//! OPENWEATHER_API_KEY = { file = "/etc/toolhost/openweather.key" }
//! REGION = "eu-west-1"
//! ```
//!
//! The two forms cannot be one serde derive (a key that is a string or a table, and a
//! table whose other keys are plugin names), so the value is read as TOML and checked
//! here, each error naming the key it is about.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};
use toolhost_core::secrets::SecretSource;

/// `plugins`: the folder (`--plugins` and `TOOLHOST_PLUGINS` win) and each plugin's
/// settings by plugin name.
#[derive(Debug, Clone, Default)]
pub struct PluginsConfig {
    /// The plugins folder, if set here.
    pub folder: Option<PathBuf>,
    /// `[plugins.NAME]`: the operator's settings of plugin `NAME`.
    pub named: BTreeMap<String, PluginSettings>,
}

/// `[plugins.NAME]`: what the operator gives one plugin.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSettings {
    /// The values of its `wasi:config/store` keys, by key, each from a
    /// [`SecretSource`]. A key is seen only when the plugin's approved request asks for
    /// it too.
    #[serde(default)]
    pub config: BTreeMap<String, SecretSource>,
}

impl PluginsConfig {
    /// The config sources given to plugin `name` (empty when none).
    pub fn sources(&self, name: &str) -> BTreeMap<String, SecretSource> {
        self.named
            .get(name)
            .map(|s| s.config.clone())
            .unwrap_or_default()
    }

    /// Relative `file` sources made relative to `base`, the configuration file's folder.
    pub fn anchor(&mut self, base: &Path) {
        for settings in self.named.values_mut() {
            for source in settings.config.values_mut() {
                *source = source.anchored(base);
            }
        }
    }
}

impl<'de> Deserialize<'de> for PluginsConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let table = match toml::Value::deserialize(d)? {
            toml::Value::String(folder) => {
                return Ok(PluginsConfig {
                    folder: Some(PathBuf::from(folder)),
                    named: BTreeMap::new(),
                });
            }
            toml::Value::Table(t) => t,
            other => {
                return Err(D::Error::custom(format!(
                    "`plugins` is a folder (a string) or a table, not a {}",
                    other.type_str()
                )));
            }
        };
        let mut out = PluginsConfig::default();
        for (key, value) in table {
            if key == "folder" {
                let toml::Value::String(folder) = value else {
                    return Err(D::Error::custom("`plugins.folder` is a string"));
                };
                out.folder = Some(PathBuf::from(folder));
                continue;
            }
            let settings: PluginSettings = value
                .try_into()
                .map_err(|e| D::Error::custom(format!("[plugins.{key}]: {e}")))?;
            for k in settings.config.keys() {
                if let Some(why) = toolhost_wasm::config::key_problem(k) {
                    return Err(D::Error::custom(format!(
                        "[plugins.{key}.config]: key {:?} {why}",
                        k.chars().take(40).collect::<String>()
                    )));
                }
            }
            out.named.insert(key, settings);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Doc {
        plugins: PluginsConfig,
    }

    fn parse(text: &str) -> Result<PluginsConfig, String> {
        toml::from_str::<Doc>(text)
            .map(|d| d.plugins)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn both_forms_parse_and_errors_name_the_key() {
        let a = parse("plugins = \"./p\"").unwrap(); // ok: test code
        assert_eq!(a.folder.as_deref(), Some(Path::new("./p")));
        let b = parse(
            "[plugins]\nfolder = \"/x\"\n[plugins.weather.config]\nK = \"v\"\nT = { file = \"t.key\" }\n",
        )
        .unwrap(); // ok: test code
        assert_eq!(b.folder.as_deref(), Some(Path::new("/x")));
        let mut b = b;
        b.anchor(Path::new("/etc/toolhost"));
        let s = b.sources("weather");
        assert_eq!(s["T"].describe(), "file /etc/toolhost/t.key");
        assert_eq!(s["K"].describe(), "value in the config file");
        assert!(b.sources("other").is_empty());
        let e = parse("[plugins.w]\nconfg = {}\n").unwrap_err(); // ok: test code
        assert!(e.contains("[plugins.w]"), "{e}");
        let e = parse("[plugins.w.config]\nK = { vault = \"x\" }\n").unwrap_err(); // ok: test code
        assert!(e.contains("unknown source `vault`"), "{e}");
        let e = parse("[plugins.w.config]\n\"bad key\" = \"x\"\n").unwrap_err(); // ok: test code
        assert!(e.contains("bad key"), "{e}");
        assert!(parse("plugins = 3").unwrap_err().contains("not a integer")); // ok: test code
    }
}
