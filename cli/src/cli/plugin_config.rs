//! `toolhost config set|unset|list`: the operator's `[plugins.NAME.config]` tables of
//! `toolhost.toml` (docs/secrets.md), edited with `toml_edit` so the file's comments and
//! layout stay as the operator wrote them.
//!
//! A value typed in is read from the terminal without echo (`rpassword`), or from stdin
//! when that is not a terminal; it is written into the file only when the file is
//! private to its owner (mode 0600 or stricter; a new file is created so). A value kept
//! elsewhere is written as its source: `--env VAR`, `--file PATH` (checked to be readable
//! and private now), `--keyring SERVICE/USER`. `list` shows keys and sources, never a
//! value.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use toolhost_core::secrets::{MAX_SECRET_BYTES, SecretSource};

/// Arguments of `toolhost config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    host: super::HostArgs,
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Give plugin NAME a value for KEY (typed without echo, or from stdin), or a source.
    Set(SetArgs),
    /// Remove KEY from plugin NAME's config.
    Unset {
        /// The plugin (NAME of NAME.wasm).
        plugin: String,
        /// The key.
        key: String,
    },
    /// Show each plugin's keys and where their values come from (never a value).
    List {
        /// Only this plugin.
        plugin: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
struct SetArgs {
    /// The plugin (NAME of NAME.wasm).
    plugin: String,
    /// The key, as the plugin's request file asks for it.
    key: String,
    /// The value is this variable of toolhost's environment.
    #[arg(long, group = "source")]
    env: Option<String>,
    /// The value is this file's text (it must be private: mode 0600).
    #[arg(long, group = "source")]
    file: Option<std::path::PathBuf>,
    /// The value is this system keyring entry, `SERVICE/USER`.
    #[arg(long, group = "source")]
    keyring: Option<String>,
}

/// Runs `toolhost config`.
pub async fn run(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let path = args.host.config.clone();
    match args.command {
        ConfigCommand::Set(set) => {
            super::common::plugin_name_arg(&set.plugin)?;
            key_arg(&set.key)?;
            if set.env.is_none() && set.file.is_none() && set.keyring.is_none() {
                // Refused before the value is typed, not after.
                refuse_shared(&path)?;
            }
            let value = source_item(&set)?;
            edit(&path, value.inline, |doc| {
                let plugins = plugins_table(doc)?;
                let table = plugins
                    .entry(&set.plugin)
                    .or_insert_with(implicit_table)
                    .as_table_mut()
                    .with_context(|| format!("plugins.{} is not a table", set.plugin))?;
                let config = table
                    .entry("config")
                    .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
                    .as_table_mut()
                    .with_context(|| format!("plugins.{}.config is not a table", set.plugin))?;
                config.insert(&set.key, toml_edit::value(value.item));
                Ok(())
            })?;
            eprintln!(
                "config: {}.{} is given from {} in {}",
                set.plugin,
                set.key,
                value.describe,
                path.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        ConfigCommand::Unset { plugin, key } => {
            super::common::plugin_name_arg(&plugin)?;
            let mut removed = false;
            edit(&path, false, |doc| {
                let config = doc
                    .get_mut("plugins")
                    .and_then(|p| p.get_mut(&plugin))
                    .and_then(|p| p.get_mut("config"))
                    .and_then(toml_edit::Item::as_table_like_mut);
                if let Some(config) = config {
                    removed = config.remove(&key).is_some();
                }
                Ok(())
            })?;
            if !removed {
                anyhow::bail!(
                    "plugin '{plugin}' has no config key {key:?} in {}",
                    path.display()
                );
            }
            eprintln!("config: {plugin}.{key} removed from {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        ConfigCommand::List { plugin, json } => {
            let config = toolhost::config::HostConfig::load(&path, true)
                .with_context(|| format!("reading {}", path.display()))?;
            let rows: Vec<(String, String, String)> = config
                .plugins
                .named
                .iter()
                .filter(|(name, _)| plugin.as_ref().is_none_or(|p| p == *name))
                .flat_map(|(name, s)| {
                    s.config
                        .iter()
                        .map(move |(k, src)| (name.clone(), k.clone(), src.describe()))
                })
                .collect();
            if json {
                let doc: Vec<_> = rows
                    .iter()
                    .map(|(p, k, s)| serde_json::json!({"plugin": p, "key": k, "source": s}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                for (p, k, s) in &rows {
                    println!(
                        "{}\t{}\t{}",
                        super::term::cell(p),
                        super::term::cell(k),
                        super::term::cell(s)
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn key_arg(key: &str) -> anyhow::Result<()> {
    match toolhost::wasm::config::key_problem(key) {
        Some(why) => anyhow::bail!("invalid config key {key:?}: it {why}"),
        None => Ok(()),
    }
}

fn implicit_table() -> toml_edit::Item {
    let mut t = toml_edit::Table::new();
    t.set_implicit(true);
    toml_edit::Item::Table(t)
}

/// The `[plugins]` table, made from the `plugins = "FOLDER"` form when the file has it
/// (the folder kept as `folder`).
fn plugins_table(doc: &mut toml_edit::DocumentMut) -> anyhow::Result<&mut toml_edit::Table> {
    let folder = doc
        .get("plugins")
        .and_then(toml_edit::Item::as_str)
        .map(str::to_string);
    if let Some(folder) = folder {
        let mut t = toml_edit::Table::new();
        t.insert("folder", toml_edit::value(folder));
        // The comments above `plugins = ...` stay above `[plugins]`.
        let prefix = doc
            .as_table()
            .key("plugins")
            .and_then(|k| k.leaf_decor().prefix())
            .and_then(|p| p.as_str())
            .map(str::to_string);
        if let Some(prefix) = prefix {
            t.decor_mut().set_prefix(prefix);
        }
        // The table goes last, after the other top-level keys, as TOML requires.
        t.set_position(None);
        doc.remove("plugins");
        doc.insert("plugins", toml_edit::Item::Table(t));
    }
    doc.entry("plugins")
        .or_insert_with(implicit_table)
        .as_table_mut()
        .context("`plugins` is neither a folder nor a table")
}

/// What `set` writes: the TOML value, whether it is the secret itself, and its source
/// as `list` shows it.
struct SourceItem {
    item: toml_edit::Value,
    inline: bool,
    describe: String,
}

fn source_item(set: &SetArgs) -> anyhow::Result<SourceItem> {
    let table = |kind: &str, arg: String| {
        let mut t = toml_edit::InlineTable::new();
        t.insert(kind, arg.into());
        toml_edit::Value::InlineTable(t)
    };
    let (item, source) = if let Some(var) = &set.env {
        (table("env", var.clone()), SecretSource::Env(var.clone()))
    } else if let Some(file) = &set.file {
        let abs = std::path::absolute(file).unwrap_or_else(|_| file.clone());
        let shown = abs.display().to_string();
        (table("file", shown), SecretSource::File(abs))
    } else if let Some(entry) = &set.keyring {
        // Checked by the one parser of sources, as toolhost will read it.
        let item = table("keyring", entry.clone());
        let source = toml::from_str::<KeyringOnly>(&format!("k = {item}"))
            .map_err(|e| anyhow::anyhow!("--keyring {entry:?}: {}", e.message()))?
            .k;
        (item, source)
    } else {
        let value = read_value()?;
        return Ok(SourceItem {
            item: value.into(),
            inline: true,
            describe: "value in the config file".into(),
        });
    };
    // A source that cannot be read now is refused, so the mistake shows here rather than
    // at the next start; a keyring entry may be stored after, so that is only a warning.
    if let Err(e) = source.resolve() {
        match source {
            SecretSource::Keyring { .. } => {
                eprintln!("toolhost: warning: {e}; the plugin fails to load until it can be read")
            }
            _ => anyhow::bail!("{e}"),
        }
    }
    Ok(SourceItem {
        item,
        inline: false,
        describe: source.describe(),
    })
}

/// `k = { keyring = ... }`: the keyring form checked by the one parser of sources.
#[derive(serde::Deserialize)]
struct KeyringOnly {
    k: SecretSource,
}

/// The value: typed without echo on a terminal, else all of stdin (one final line break
/// dropped), at most [`MAX_SECRET_BYTES`], never empty.
fn read_value() -> anyhow::Result<String> {
    let mut value = if std::io::stdin().is_terminal() {
        rpassword::prompt_password("value (not shown): ").context("reading the value")?
    } else {
        let mut buf = Vec::new();
        std::io::stdin()
            .lock()
            .take(MAX_SECRET_BYTES as u64 + 2)
            .read_to_end(&mut buf)
            .context("reading the value from stdin")?;
        String::from_utf8(buf).map_err(|_| anyhow::anyhow!("the value is not UTF-8 text"))?
    };
    if value.ends_with('\n') {
        value.pop();
        if value.ends_with('\r') {
            value.pop();
        }
    }
    if value.len() > MAX_SECRET_BYTES {
        anyhow::bail!("the value is larger than {MAX_SECRET_BYTES} bytes");
    }
    if value.is_empty() {
        anyhow::bail!("the value is empty; nothing written");
    }
    Ok(value)
}

/// Applies `change` to the file at `path` (an empty document when there is none) and
/// writes it back whole, through a temporary file of the same mode renamed over it. With
/// `secret`, a file group or others may access is refused: a secret is never put where
/// others can read it.
fn edit(
    path: &Path,
    secret: bool,
    change: impl FnOnce(&mut toml_edit::DocumentMut) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if secret {
        refuse_shared(path)?;
    }
    let (text, mode) = match std::fs::read_to_string(path) {
        Ok(t) => (t, file_mode(path)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), 0o600),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))?;
    change(&mut doc)?;
    let out = doc.to_string();
    // The result must still be a configuration toolhost reads: checked before it
    // replaces the file.
    toml::from_str::<toolhost::config::HostConfig>(&out)
        .map_err(|e| anyhow::anyhow!("the edited {} would not load: {e}", path.display()))?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    set_mode(tmp.as_file(), mode & 0o7777)?;
    tmp.write_all(out.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Refuses a configuration file that group or others may access (a missing one is
/// created private).
fn refuse_shared(path: &Path) -> anyhow::Result<()> {
    if !path.exists() {
        return Ok(());
    }
    let mode = file_mode(path)?;
    if mode & 0o077 != 0 {
        anyhow::bail!(
            "{} is accessible by group or others (mode {:04o}): a secret is not written \
             there; run `chmod 600 {}`, or give the value as --file, --env or --keyring",
            path.display(),
            mode & 0o7777,
            path.display()
        );
    }
    Ok(())
}

#[cfg(unix)]
fn file_mode(path: &Path) -> anyhow::Result<u32> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)
        .with_context(|| format!("reading {}", path.display()))?
        .permissions()
        .mode())
}

#[cfg(not(unix))]
fn file_mode(_path: &Path) -> anyhow::Result<u32> {
    Ok(0o600)
}

#[cfg(unix)]
fn set_mode(file: &std::fs::File, mode: u32) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .context("setting the file's mode")
}

#[cfg(not(unix))]
fn set_mode(_file: &std::fs::File, _mode: u32) -> anyhow::Result<()> {
    Ok(())
}
