//! `toolhost install SOURCE` and `toolhost update [NAME]`: fetch a plugin (a local `.wasm`,
//! an `https://` URL or `oci://…`, through `toolhost-dist`), check its digest pin and its
//! minisign signature against `[trust] keys`, load the component from the fetched bytes to
//! show its tools, ask, and only then write `NAME.wasm`, `NAME.toml` and the lock entry.
//! If any check fails nothing is written and the error names the check. See
//! `docs/trust.md`.
//!
//! Both follow the one release rule (`toolhost_trust::version`): a package that is not
//! newer than the approved release is refused unless `--allow-downgrade`, and `update`
//! refuses a package signed by another key than the recorded signer unless
//! `--accept-signer KEYID` names that key. `update --check` writes nothing and shows what
//! each source offers against what is installed (docs/trust.md, "Rollback and freeze").

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use toolhost::Host;
use toolhost::config::HostConfig;
use toolhost::trust::Candidate;
use toolhost::wasm::Policy;
use toolhost_dist::{Coverage, FetchOptions, Fetched, Source, Verified};
use toolhost_trust::{DefStore, Lock, SignatureCovers, write_atomically};

/// Arguments of `toolhost install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// Where the plugin comes from: a local `.wasm` path, an `https://` URL, or
    /// `oci://HOST[:PORT]/REPO:TAG` (or `@sha256:HEX`).
    pub source: String,
    /// The plugin name (default: suggested by the source, e.g. the file stem).
    #[arg(long)]
    pub name: Option<String>,
    /// Refuse unless the fetched `.wasm` has this digest (`sha256:HEX`).
    #[arg(long)]
    pub digest: Option<String>,
    /// Approve without asking (required when there is no terminal to ask on).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Install even when the plugin is unsigned or signed by a key not in `[trust] keys`
    /// (a signature that does not verify is refused regardless).
    #[arg(long)]
    pub allow_unsigned: bool,
    /// Allow plain-HTTP registries and URLs that are not on loopback.
    #[arg(long)]
    pub insecure: bool,
    /// Accept a release that is not newer than the one the lock still approves for this
    /// name.
    #[arg(long)]
    pub allow_downgrade: bool,
}

/// Arguments of `toolhost update`.
#[derive(Debug, Args)]
pub struct UpdateArgs {
    #[command(flatten)]
    host: super::HostArgs,
    /// The plugin to update (default: every plugin in the lock).
    pub name: Option<String>,
    /// Approve without asking (required when there is no terminal to ask on).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Accept an update that is unsigned or signed by a key not in `[trust] keys`.
    #[arg(long)]
    pub allow_unsigned: bool,
    /// Allow plain-HTTP registries and URLs that are not on loopback.
    #[arg(long)]
    pub insecure: bool,
    /// Accept a release that is not newer than the approved one: an older version (a
    /// rollback), the same version with another file, or an unversioned package after a
    /// versioned one.
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Accept a package signed by this key (a key id of `[trust] keys`) instead of the
    /// recorded signer: a signer change.
    #[arg(long, value_name = "KEYID")]
    pub accept_signer: Option<String>,
    /// Show what each source offers against what is installed (version, digest, signer,
    /// and an OCI repository's newest version tag); write nothing.
    #[arg(long, conflicts_with_all = ["yes", "allow_downgrade", "accept_signer"])]
    pub check: bool,
}

/// A source string (as given, or as the lock records it) as a [`Source`].
fn parse_source(text: &str) -> anyhow::Result<Source> {
    Source::parse(text).map_err(|e| anyhow::anyhow!("source check failed: {e}"))
}

/// Fetches `source` and runs the digest and signature checks.
async fn fetch_checked(
    source: &Source,
    digest: Option<&str>,
    insecure: bool,
    keys: &[String],
    allow_unsigned: bool,
) -> anyhow::Result<(Fetched, Option<Verified>)> {
    let opts = FetchOptions {
        expected_digest: digest.map(str::to_string),
        insecure,
        ..FetchOptions::default()
    };
    let fetched = toolhost_dist::fetch(source, &opts)
        .await
        .map_err(|e| anyhow::anyhow!("fetch failed: {e}"))?;
    // The digest pin, checked here too on the bytes we will write.
    let actual = toolhost_trust::canon::sha256(&fetched.wasm);
    if let Some(want) = digest
        && !want.eq_ignore_ascii_case(&actual)
    {
        bail!("digest check failed: expected {want}, the fetched plugin is {actual}");
    }
    // Unsigned or unknown key, or a request the signature does not cover: refused unless
    // allowed; a signature over anything else: always refused. The statement checked is
    // the one of the name the publisher signed (the source's), not a local rename.
    let signed = toolhost_dist::check_package(&fetched, &fetched.name, keys, allow_unsigned)
        .map_err(|e| anyhow::anyhow!("{}", strip_check_prefix(&e.to_string())))
        .context("signature check failed")?;
    match &signed {
        None => eprintln!(
            "warning: {} is unsigned or signed by a key not in [trust] keys (accepted: --allow-unsigned)",
            fetched.source
        ),
        Some(v) if v.coverage == Coverage::Component => eprintln!(
            "warning: the signature of {} covers its component only; its request file is unsigned (accepted: --allow-unsigned)",
            fetched.source
        ),
        Some(_) => {}
    }
    Ok((fetched, signed))
}

/// An error of `toolhost-dist` without its own "signature check failed: " (the context
/// adds it once).
fn strip_check_prefix(text: &str) -> &str {
    text.strip_prefix("signature check failed: ")
        .unwrap_or(text)
}

/// What install and update print as the signer: the key and what its signature covers.
fn signer_line(signed: Option<&Verified>) -> String {
    match signed {
        None => "(unsigned)".into(),
        Some(v) if v.coverage == Coverage::Package => {
            format!("{} (the component and its request file)", v.signer)
        }
        Some(v) => format!(
            "{} (the component only; the request file above is UNSIGNED)",
            v.signer
        ),
    }
}

/// A fetched plugin staged in a private temp folder inside the plugins folder (so the
/// final renames stay on one filesystem), described, and ready to be committed.
struct Staged {
    _tmp: tempfile::TempDir,
    wasm: PathBuf,
    request_text: Option<String>,
    cand: Candidate,
}

/// Stages `fetched` as plugin `name` of `dir` and describes it with no capability. The
/// request is parsed as if it were already `dir/NAME.toml` (its relative folders are
/// relative to the plugins folder).
async fn stage(host: &Host, dir: &Path, name: &str, fetched: &Fetched) -> anyhow::Result<Staged> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".toolhost-install-")
        .tempdir_in(dir)
        .with_context(|| format!("creating a staging folder in {}", dir.display()))?;
    let wasm = tmp.path().join(format!("{name}.wasm"));
    std::fs::write(&wasm, &fetched.wasm).with_context(|| format!("writing {}", wasm.display()))?;
    let final_toml = dir.join(format!("{name}.toml"));
    let request = match &fetched.request {
        Some(text) => Policy::parse_protected(text, &final_toml, &host.engine().protected_paths())
            .map_err(|e| anyhow::anyhow!("request check failed: {e}"))?,
        None => Policy::default(),
    };
    let cand = Candidate::load_with_request(host, name, &wasm, &request)
        .await
        .map_err(|e| anyhow::anyhow!("component check failed: {e:#}"))?;
    Ok(Staged {
        _tmp: tmp,
        wasm,
        request_text: fetched.request.clone(),
        cand,
    })
}

/// Writes `NAME.wasm`, `NAME.toml` (each atomically) and then the lock entry. If the lock
/// cannot be written the new files are removed again, so nothing is left half-installed.
fn commit(
    dir: &Path,
    name: &str,
    staged: &Staged,
    source: String,
    signed: Option<&Verified>,
) -> anyhow::Result<()> {
    let lock_path = Lock::path_in(dir);
    let mut lock = Lock::load(&lock_path)?;
    let store = DefStore::in_dir(dir);
    let mut entry = staged.cand.entry(
        source,
        signed.map(|v| v.signer.clone()),
        signed
            .filter(|v| v.coverage == Coverage::Package)
            .and_then(|v| v.version.clone()),
        &store,
    )?;
    entry.signature_covers = signed.map(|v| match v.coverage {
        Coverage::Package => SignatureCovers::Package,
        Coverage::Component => SignatureCovers::Component,
    });
    let wasm = dir.join(format!("{name}.wasm"));
    let toml = dir.join(format!("{name}.toml"));
    let bytes = std::fs::read(&staged.wasm)?;
    write_atomically(&wasm, &bytes)?;
    match &staged.request_text {
        Some(text) => write_atomically(&toml, text.as_bytes())?,
        None => match std::fs::remove_file(&toml) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", toml.display())),
        },
    }
    lock.plugins.insert(name.to_string(), entry);
    if let Err(e) = lock.save(&lock_path) {
        let _ = std::fs::remove_file(&wasm);
        let _ = std::fs::remove_file(&toml);
        return Err(e.into());
    }
    Ok(())
}

fn config_and_dir(host: &super::HostArgs) -> anyhow::Result<(HostConfig, PathBuf)> {
    let config = super::common::load_config(host)?;
    let dir = super::common::plugins_dir(host, &config);
    Ok((config, dir))
}

/// Runs `toolhost install`.
pub async fn run_install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let (config, dir) = config_and_dir(&args.host)?;
    let host = super::common::host(&args.host, &config, false)?;
    let source = parse_source(&args.source)?;
    let (fetched, signed) = fetch_checked(
        &source,
        args.digest.as_deref(),
        args.insecure,
        &config.trust.keys,
        args.allow_unsigned,
    )
    .await?;
    let name = args.name.clone().unwrap_or_else(|| fetched.name.clone());
    let name = super::common::plugin_name_arg(&name)?.to_string();
    if dir.join(format!("{name}.wasm")).exists() {
        bail!(
            "{name}.wasm already exists in {}; use `toolhost update {name}`, or `toolhost remove {name}` first",
            dir.display()
        );
    }
    let staged = stage(&host, &dir, &name, &fetched).await?;
    print!("{}", staged.cand.summary());
    super::lint::show_for_approval(
        &config,
        &super::lint::subjects(&format!("plugin:{name}"), &staged.cand.tools),
    )
    .await;
    super::common::refuse_denied_folders(&config, &name, &staged.cand.request)?;
    println!(
        "  source: {}\n  signer: {}",
        fetched.source,
        signer_line(signed.as_ref())
    );
    // A name the lock still approves (its file was deleted by hand) is a replacement: the
    // release rule applies as for `update`.
    let lock = Lock::load(&Lock::path_in(&dir))?;
    let release = review(lock.plugins.get(&name), &fetched.digest, signed.as_ref());
    print!("{}", release.text);
    if let Some(why) = release.refusal.filter(|_| !args.allow_downgrade) {
        bail!(
            "not installed: the lock approves {name} as another release: {why}; to accept it deliberately: `toolhost install {} --allow-downgrade`",
            args.source
        );
    }
    super::common::confirm(args.yes, &format!("install and approve plugin {name}?"))?;
    commit(
        &dir,
        &name,
        &staged,
        fetched.source.clone(),
        signed.as_ref(),
    )?;
    println!("installed {name} into {}", dir.display());
    Ok(ExitCode::SUCCESS)
}

/// [`super::release::review`] of a fetched package: its signer and version count only
/// from a signature over the whole package.
fn review(
    entry: Option<&toolhost_trust::PluginEntry>,
    digest: &str,
    signed: Option<&Verified>,
) -> super::release::Release {
    let package = signed.filter(|v| v.coverage == Coverage::Package);
    super::release::review(
        entry,
        digest,
        signed.map(|v| v.signer.as_str()),
        package.and_then(|v| v.version.as_ref()),
    )
}

/// Runs `toolhost update`.
pub async fn run_update(args: UpdateArgs) -> anyhow::Result<ExitCode> {
    let (config, dir) = config_and_dir(&args.host)?;
    let host = super::common::host(&args.host, &config, false)?;
    let lock = Lock::load(&Lock::path_in(&dir))?;
    let names: Vec<String> = match &args.name {
        Some(n) => {
            let n = super::common::plugin_name_arg(n)?;
            if !lock.plugins.contains_key(n) {
                bail!(
                    "{n} is not in the lock of {}; install it first",
                    dir.display()
                );
            }
            vec![n.to_string()]
        }
        None => lock.plugins.keys().cloned().collect(),
    };
    if args.check {
        return check_updates(&args, &config, &lock, &names).await;
    }
    let store = DefStore::in_dir(&dir);
    let mut refused = 0usize;
    for name in names {
        let Some(entry) = lock.plugins.get(&name) else {
            continue;
        };
        let source = parse_source(&entry.source)?;
        // A plugin that was signed stays signed: an unsigned update needs --allow-unsigned.
        let (fetched, signed) = fetch_checked(
            &source,
            None,
            args.insecure,
            &config.trust.keys,
            args.allow_unsigned,
        )
        .await
        .with_context(|| format!("updating {name}"))?;
        let staged = stage(&host, &dir, &name, &fetched).await?;
        let diff = staged.cand.diff(Some(entry), &store).unwrap_or_default();
        if diff.is_empty() {
            println!("{name}: up to date");
            continue;
        }
        print!("{}", staged.cand.summary());
        super::lint::show_for_approval(
            &config,
            &super::lint::subjects(&format!("plugin:{name}"), &staged.cand.tools),
        )
        .await;
        super::common::refuse_denied_folders(&config, &name, &staged.cand.request)?;
        let release = review(Some(entry), &fetched.digest, signed.as_ref());
        println!(
            "changes since the approval of {}:\n{diff}{}  signer: {}",
            entry.approved_at,
            release.text,
            signer_line(signed.as_ref())
        );
        // One rule on every route: held, and the operator's explicit word accepts it.
        let held = match (&release.refusal, &release.signer_change) {
            (Some(why), _) if !args.allow_downgrade => Some(format!(
                "{why}; to accept this release deliberately: `toolhost update {name} --allow-downgrade`"
            )),
            (_, Some((old, new)))
                if !args
                    .accept_signer
                    .as_deref()
                    .is_some_and(|k| k.eq_ignore_ascii_case(new)) =>
            {
                Some(format!(
                    "a signer change, {old} → {new}: the package is signed by another key than \
                     the recorded signer; to accept the new signer: `toolhost update {name} \
                     --accept-signer {new}`"
                ))
            }
            _ => None,
        };
        if let Some(why) = held {
            eprintln!("error: {name} held, not updated: {why}");
            refused += 1;
            continue;
        }
        super::common::confirm(args.yes, &format!("update and approve plugin {name}?"))?;
        commit(&dir, &name, &staged, entry.source.clone(), signed.as_ref())?;
        println!("updated {name}");
    }
    if refused > 0 {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolhost update --check`: for each plugin, what is installed and what its source
/// offers now (version, digest, signer, and for an OCI source the newest version tag of
/// the repository), with the verdict `update` would reach. Writes nothing; exits 1 when a
/// source could not be checked.
async fn check_updates(
    args: &UpdateArgs,
    config: &HostConfig,
    lock: &Lock,
    names: &[String],
) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    for name in names {
        let Some(entry) = lock.plugins.get(name) else {
            continue;
        };
        println!(
            "{name}\n  installed: {} {} signed by {}",
            toolhost_trust::version::shown(entry.version.as_ref()),
            entry.digest,
            entry.signer.as_deref().unwrap_or("nobody")
        );
        let checked = async {
            let source = parse_source(&entry.source)?;
            let (fetched, signed) =
                fetch_checked(&source, None, args.insecure, &config.trust.keys, true).await?;
            let newest = match &source {
                Source::Oci(r) => {
                    let opts = FetchOptions {
                        insecure: args.insecure,
                        ..FetchOptions::default()
                    };
                    let tags = toolhost_dist::list_tags(r, &opts).await?;
                    newest_version_tag(&tags)
                }
                _ => None,
            };
            anyhow::Ok((fetched, signed, newest))
        };
        match checked.await {
            Ok((fetched, signed, newest)) => {
                let release = review(Some(entry), &fetched.digest, signed.as_ref());
                let version = signed
                    .as_ref()
                    .filter(|v| v.coverage == Coverage::Package)
                    .and_then(|v| v.version.as_ref());
                println!(
                    "  offered:   {} {} signed by {} ({})",
                    toolhost_trust::version::shown(version),
                    fetched.digest,
                    signed.as_ref().map_or("nobody", |v| v.signer.as_str()),
                    fetched.source
                );
                if let Some(tag) = newest {
                    println!("  newest version tag in the repository: {tag}");
                }
                let verdict = if fetched.digest == entry.digest {
                    "up to date".to_string()
                } else if let Some(why) = &release.refusal {
                    format!("would be held: {why}")
                } else if let Some((old, new)) = &release.signer_change {
                    format!("would be held: a signer change, {old} → {new}")
                } else {
                    "an update is offered".to_string()
                };
                println!("  {verdict}");
            }
            Err(e) => {
                failed = true;
                println!(
                    "  could not check: {}",
                    toolhost::trust::clean(&format!("{e:#}"))
                );
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The highest tag that parses as a semantic version (with an optional `v`), if any.
fn newest_version_tag(tags: &[String]) -> Option<String> {
    tags.iter()
        .filter_map(|t| {
            let v = toolhost_dist::parse_version(t.strip_prefix('v').unwrap_or(t)).ok()?;
            Some((v, t))
        })
        .max_by(|a, b| a.0.cmp_precedence(&b.0))
        .map(|(_, t)| t.clone())
}
