//! [`SecretSource`]: where one secret value comes from, and its bounded resolution into a
//! [`Secret`].

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The largest secret value toolhost reads from any source: 64 KiB.
pub const MAX_SECRET_BYTES: usize = 64 * 1024;

/// How long a keyring lookup may take before it is given up with
/// [`SecretError::KeyringTimeout`] (a locked or hung keyring service never stalls a load).
pub const KEYRING_TIMEOUT: Duration = Duration::from_secs(5);

/// A secret value. Its `Debug` and `Display` print `[secret]`; [`Secret::expose`] is the
/// one way to the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret holding `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[secret]")
    }
}

/// Where a secret comes from, as the operator writes it in `toolhost.toml`:
///
/// ```toml
/// REGION = "eu-west-1"                        # the value itself
/// API_KEY = { env = "OPENWEATHER_API_KEY" }   # a variable of toolhost's environment
/// TOKEN = { file = "/etc/toolhost/token" }    # a file only its owner may read (0600)
/// DB_PASSWORD = { keyring = "toolhost/db" }   # the system keyring: SERVICE/USER
/// ```
///
/// A relative `file` is relative to the folder of the configuration file.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawSource")]
pub enum SecretSource {
    /// The value, written in the configuration file.
    Value(Secret),
    /// A variable of toolhost's own environment.
    Env(String),
    /// A file only its owner may access; its whole text, less one final line break.
    File(PathBuf),
    /// An entry of the system keyring: service and user.
    Keyring {
        /// The keyring service.
        service: String,
        /// The keyring user.
        user: String,
    },
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The file form: a string, or a table of one key.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawSource {
    Text(String),
    Table(BTreeMap<String, String>),
}

impl TryFrom<RawSource> for SecretSource {
    type Error = String;

    fn try_from(raw: RawSource) -> Result<Self, String> {
        let table = match raw {
            RawSource::Text(v) => return Ok(SecretSource::Value(Secret(v))),
            RawSource::Table(t) => t,
        };
        let expected = "a value is a string, or one of { env = \"VAR\" }, { file = \"PATH\" }, \
                        { keyring = \"SERVICE/USER\" }";
        let mut entries = table.into_iter();
        let (Some((kind, arg)), None) = (entries.next(), entries.next()) else {
            return Err(format!("{expected}: give exactly one source"));
        };
        match kind.as_str() {
            "env" if !arg.is_empty() => Ok(SecretSource::Env(arg)),
            "file" if !arg.is_empty() => Ok(SecretSource::File(PathBuf::from(arg))),
            "keyring" => match arg.split_once('/') {
                Some((service, user)) if !service.is_empty() && !user.is_empty() => {
                    Ok(SecretSource::Keyring {
                        service: service.to_string(),
                        user: user.to_string(),
                    })
                }
                _ => Err(format!(
                    "keyring {arg:?}: write it as \"SERVICE/USER\" (both parts non-empty)"
                )),
            },
            "env" | "file" => Err(format!("`{kind}` is empty")),
            other => Err(format!("unknown source `{other}`: {expected}")),
        }
    }
}

/// Why a secret could not be read. Never holds the value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The environment variable is not set (or not Unicode).
    #[error("the environment variable {0} is not set")]
    EnvUnset(String),
    /// The file cannot be read.
    #[error("cannot read {}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The file may be read or written by group or others.
    #[error(
        "{} is accessible by group or others (mode {mode:04o}); a secret file must be private: run `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The value is larger than [`MAX_SECRET_BYTES`].
    #[error("{what} is larger than {MAX_SECRET_BYTES} bytes")]
    TooLarge {
        /// Which source.
        what: String,
    },
    /// The value is empty, or not UTF-8 text.
    #[error("{what} {why}")]
    Unusable {
        /// Which source.
        what: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The keyring has no such entry, or refused.
    #[error("keyring {service}/{user}: {message}")]
    Keyring {
        /// The service.
        service: String,
        /// The user.
        user: String,
        /// What the keyring said.
        message: String,
    },
    /// The keyring did not answer within [`KEYRING_TIMEOUT`].
    #[error("keyring {service}/{user}: no answer within {} s; is the keyring service locked or hung?", KEYRING_TIMEOUT.as_secs())]
    KeyringTimeout {
        /// The service.
        service: String,
        /// The user.
        user: String,
    },
    /// toolhost was built without the `keyring` feature.
    #[error(
        "keyring {service}/{user}: this toolhost was built without keyring support (cargo feature `keyring`); use {{ file = ... }} or {{ env = ... }} instead"
    )]
    KeyringUnsupported {
        /// The service.
        service: String,
        /// The user.
        user: String,
    },
}

impl SecretSource {
    /// Where the value comes from, never the value: `value in the config file`,
    /// `env VAR`, `file PATH`, `keyring SERVICE/USER`.
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Value(_) => "value in the config file".into(),
            SecretSource::Env(v) => format!("env {v}"),
            SecretSource::File(p) => format!("file {}", p.display()),
            SecretSource::Keyring { service, user } => format!("keyring {service}/{user}"),
        }
    }

    /// The source with a relative `file` made relative to `base` (the configuration
    /// file's folder).
    pub fn anchored(&self, base: &Path) -> SecretSource {
        match self {
            SecretSource::File(p) if p.is_relative() => SecretSource::File(base.join(p)),
            other => other.clone(),
        }
    }

    /// Reads the value now, bounded: at most [`MAX_SECRET_BYTES`], a private file only,
    /// a keyring answer within [`KEYRING_TIMEOUT`]. An empty value read from elsewhere
    /// (a variable, a file, the keyring) is an error: it is a mistake far more often
    /// than a setting. An empty value written in the configuration file is what the
    /// operator wrote, and is kept.
    pub fn resolve(&self) -> Result<Secret, SecretError> {
        let value = match self {
            SecretSource::Value(v) => v.0.clone(),
            SecretSource::Env(var) => {
                std::env::var(var).map_err(|_| SecretError::EnvUnset(var.clone()))?
            }
            SecretSource::File(path) => read_private(path)?,
            SecretSource::Keyring { service, user } => keyring_get(service, user)?,
        };
        if value.len() > MAX_SECRET_BYTES {
            return Err(SecretError::TooLarge {
                what: self.describe(),
            });
        }
        if value.is_empty() && !matches!(self, SecretSource::Value(_)) {
            return Err(SecretError::Unusable {
                what: self.describe(),
                why: "is empty",
            });
        }
        Ok(Secret(value))
    }
}

/// The text of a secret file: refused unless only its owner may access it (as ssh does
/// for a key), at most [`MAX_SECRET_BYTES`], UTF-8; one final line break is dropped.
fn read_private(path: &Path) -> Result<String, SecretError> {
    let file_error = |e: std::io::Error| SecretError::File {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(file_error)?;
    let meta = file.metadata().map_err(file_error)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SecretError::NotPrivate {
                path: path.to_path_buf(),
                mode,
            });
        }
    }
    if !meta.is_file() {
        return Err(SecretError::File {
            path: path.to_path_buf(),
            message: "not a regular file".into(),
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_SECRET_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(file_error)?;
    let what = || format!("file {}", path.display());
    if bytes.len() > MAX_SECRET_BYTES {
        return Err(SecretError::TooLarge { what: what() });
    }
    let mut text = String::from_utf8(bytes).map_err(|_| SecretError::Unusable {
        what: what(),
        why: "is not UTF-8 text",
    })?;
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    Ok(text)
}

/// Runs `f` on its own thread and gives up after `limit`: a lookup that never returns
/// leaves one parked thread behind, never a stalled caller.
#[cfg_attr(
    not(feature = "keyring"),
    allow(
        dead_code,
        reason = "the keyring lookup's deadline; tested without the feature too"
    )
)]
pub(crate) fn within<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("toolhost-keyring".into())
        .spawn(move || {
            let _ = tx.send(f());
        });
    if spawned.is_err() {
        return None;
    }
    rx.recv_timeout(limit).ok()
}

#[cfg(feature = "keyring")]
fn keyring_get(service: &str, user: &str) -> Result<String, SecretError> {
    let (s, u) = (service.to_string(), user.to_string());
    let answer = within(KEYRING_TIMEOUT, move || {
        keyring::Entry::new(&s, &u).and_then(|e| e.get_password())
    });
    match answer {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(SecretError::Keyring {
            service: service.into(),
            user: user.into(),
            message: match e {
                keyring::Error::NoEntry => "no such entry".into(),
                keyring::Error::NoStorageAccess(e) | keyring::Error::PlatformFailure(e) => {
                    format!("no keyring service is reachable: {e}")
                }
                other => other.to_string(),
            },
        }),
        None => Err(SecretError::KeyringTimeout {
            service: service.into(),
            user: user.into(),
        }),
    }
}

#[cfg(not(feature = "keyring"))]
fn keyring_get(service: &str, user: &str) -> Result<String, SecretError> {
    Err(SecretError::KeyringUnsupported {
        service: service.into(),
        user: user.into(),
    })
}
