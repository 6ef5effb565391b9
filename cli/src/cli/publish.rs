//! `toolhost publish FILE.wasm oci://HOST[:PORT]/REPO:TAG`: pushes a component as a CNCF
//! Wasm OCI artifact, with its request file (`FILE.toml` beside it, if any) and a minisign
//! signature of the package statement (the plugin's name and the digests of the component
//! and the request file: `toolhost_dist::Statement`), made here with
//! `--sign SECRET_KEY_FILE` or by an offline signer: `--statement-out FILE` writes the
//! statement and pushes nothing, `minisign -S -m FILE` signs it, and `--signature
//! FILE.minisig` attaches that signature. The layout and the rules are in docs/trust.md.
//!
//! The statement names the release version: `--version`, else the component's own
//! `version` metadata, else the reference's tag when it parses as a semantic version.
//! Signing (`--sign`, `--statement-out`, `--signature`) refuses a package with no version,
//! so every signed release can be ordered against the one an operator approved.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use toolhost_dist::{OciRef, PublishOptions};

/// Arguments of `toolhost publish`.
#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The component to publish (`NAME.wasm`; `NAME.toml` beside it goes along as the request).
    pub file: PathBuf,
    /// Where to: `oci://HOST[:PORT]/REPO:TAG` (its last path segment is the plugin's name
    /// that installers see and that the signature names).
    #[arg(required_unless_present = "statement_out")]
    pub reference: Option<String>,
    /// A minisign signature of the package statement to attach (as `minisign -S` writes
    /// it for the file of `--statement-out`).
    #[arg(long, conflicts_with = "sign")]
    pub signature: Option<PathBuf>,
    /// Write the package statement to sign to this file and push nothing (the name is the
    /// reference's last segment, or the file's stem without a reference).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["sign", "signature"])]
    pub statement_out: Option<PathBuf>,
    /// Sign with this minisign secret key (unencrypted, made with `minisign -G -W`).
    #[arg(long, value_name = "SECRET_KEY_FILE")]
    pub sign: Option<PathBuf>,
    /// Allow a plain-HTTP registry on a host that is not loopback.
    #[arg(long)]
    pub insecure: bool,
    /// The release version the statement names (semver, at most 64 characters; default:
    /// the component's `version` metadata, else the reference's tag if it is a version).
    #[arg(long)]
    pub version: Option<String>,
}

/// The release version of the package: `--version`, else the component's metadata, else
/// a tag that is a semantic version (`1.2.0` or `v1.2.0`). A malformed one is an error
/// naming where it came from.
fn release_version(
    args: &PublishArgs,
    wasm: &[u8],
    reference: Option<&OciRef>,
) -> anyhow::Result<Option<toolhost_trust::Version>> {
    if let Some(v) = &args.version {
        return toolhost_dist::parse_version(v)
            .map(Some)
            .map_err(|e| anyhow::anyhow!("--version: {e}"));
    }
    if let Some(v) = toolhost_dist::component_version(wasm)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?
    {
        return Ok(Some(v));
    }
    Ok(reference
        .and_then(|r| r.tag.as_deref())
        .and_then(|t| toolhost_dist::parse_version(t.strip_prefix('v').unwrap_or(t)).ok()))
}

/// Runs `toolhost publish`.
pub async fn run(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let reference = args.reference.as_deref().map(OciRef::parse).transpose()?;
    let wasm =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let request_path = args.file.with_extension("toml");
    let request = match std::fs::read_to_string(&request_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", request_path.display())),
    };
    let name = match &reference {
        Some(r) => r.basename().to_string(),
        None => toolhost::trust::plugin_name(&args.file),
    };
    let signing = args.sign.is_some() || args.signature.is_some() || args.statement_out.is_some();
    let version = release_version(&args, &wasm, reference.as_ref())?;
    let mut statement =
        toolhost_dist::Statement::of(&name, &wasm, request.as_deref().map(str::as_bytes));
    match version {
        Some(v) => statement = statement.versioned(v),
        None if signing => anyhow::bail!(
            "a signed package needs a release version, so that an older one can never \
             replace it: give --version X.Y.Z (or publish to a tag that is a version, or \
             set the component's `version` metadata); nothing was written"
        ),
        None => {}
    }
    if let Some(out) = &args.statement_out {
        std::fs::write(out, statement.text())
            .with_context(|| format!("writing {}", out.display()))?;
        println!("wrote the package statement of {name} to {}", out.display());
        println!(
            "sign it with: minisign -S -s KEY.key -m {0} -x {0}.minisig",
            out.display()
        );
        println!(
            "ship the statement beside the component as NAME.wasm.statement and the signature as NAME.wasm.minisig (publish attaches both)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let Some(reference) = reference else {
        anyhow::bail!("a reference (oci://HOST/REPO:TAG) is needed to publish");
    };
    let signature = match (&args.signature, &args.sign) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toolhost_dist::signature_key_id(&text)
                .with_context(|| format!("{} is not a minisign signature", path.display()))?;
            Some(text)
        }
        (None, Some(key)) => Some(toolhost_dist::sign(statement.text().as_bytes(), key)?),
        (None, None) => None,
    };
    let signer = signature
        .as_deref()
        .map(toolhost_dist::signature_key_id)
        .transpose()?;
    let opts = PublishOptions {
        insecure: args.insecure,
        ..PublishOptions::default()
    };
    let statement_text = statement.text();
    let manifest = toolhost_dist::publish(
        &wasm,
        request.as_deref(),
        signature.as_deref(),
        signature.as_ref().map(|_| statement_text.as_str()),
        &reference,
        &opts,
    )
    .await?;
    let digest = toolhost_dist::sha256_digest(&wasm);
    println!("published {reference}");
    println!("  manifest:  {manifest}");
    println!("  component: {digest}");
    println!(
        "  request:   {}",
        if request.is_some() {
            request_path.display().to_string()
        } else {
            "none".into()
        }
    );
    println!(
        "  version:   {}",
        statement
            .version
            .as_ref()
            .map_or_else(|| "unversioned".into(), ToString::to_string)
    );
    println!(
        "  signed by: {}",
        signer.as_deref().unwrap_or("nobody (unsigned)")
    );
    println!(
        "install with: toolhost install oci://{}/{}@{manifest} --digest {digest}",
        reference.registry, reference.repository
    );
    Ok(ExitCode::SUCCESS)
}
