//! `toolhost publish FILE.wasm oci://HOST[:PORT]/REPO:TAG`: pushes a component as a CNCF
//! Wasm OCI artifact, with its request file (`FILE.toml` beside it, if any) and a minisign
//! signature (`--signature FILE.minisig`, or made here with `--sign SECRET_KEY_FILE`).
//! The layout and the rules are in docs/trust.md.

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
    /// Where to: `oci://HOST[:PORT]/REPO:TAG`.
    pub reference: String,
    /// A minisign signature of the file to attach (as written by `minisign -S`).
    #[arg(long, conflicts_with = "sign")]
    pub signature: Option<PathBuf>,
    /// Sign with this minisign secret key (unencrypted, made with `minisign -G -W`).
    #[arg(long, value_name = "SECRET_KEY_FILE")]
    pub sign: Option<PathBuf>,
    /// Allow a plain-HTTP registry on a host that is not loopback.
    #[arg(long)]
    pub insecure: bool,
}

/// Runs `toolhost publish`.
pub async fn run(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(&args.reference)?;
    let wasm =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let request_path = args.file.with_extension("toml");
    let request = match std::fs::read_to_string(&request_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e).with_context(|| format!("reading {}", request_path.display())),
    };
    let signature = match (&args.signature, &args.sign) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            toolhost_dist::signature_key_id(&text)
                .with_context(|| format!("{} is not a minisign signature", path.display()))?;
            Some(text)
        }
        (None, Some(key)) => Some(toolhost_dist::sign(&wasm, key)?),
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
    let manifest = toolhost_dist::publish(
        &wasm,
        request.as_deref(),
        signature.as_deref(),
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
        "  signed by: {}",
        signer.as_deref().unwrap_or("nobody (unsigned)")
    );
    println!(
        "install with: toolhost install oci://{}/{}@{manifest} --digest {digest}",
        reference.registry, reference.repository
    );
    Ok(ExitCode::SUCCESS)
}
