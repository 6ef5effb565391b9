//! OCI registries: fetching and publishing components as CNCF "Wasm OCI artifacts".
//!
//! The layout (what wkg and Wassette use, see docs/trust.md):
//! - config: media type [`WASM_CONFIG_MEDIA_TYPE`], a small JSON (`architecture: "wasm"`,
//!   `os: "wasip2"`, `layerDigests`);
//! - exactly one layer of media type [`WASM_LAYER_MEDIA_TYPE`]: the component;
//! - toolhost adds at most one [`REQUEST_MEDIA_TYPE`] layer (`NAME.toml`) and at most one
//!   [`SIGNATURE_MEDIA_TYPE`] layer (the `.minisig` text), and at most one
//!   [`STATEMENT_MEDIA_TYPE`] layer (the signed package statement, which carries the
//!   release version). Artifacts without them (pushed by
//!   other tools) fetch too; layers of other media types are ignored and never downloaded.
//!
//! `oci-client` speaks the protocol (auth challenges, blob uploads, blob downloads). The
//! manifest GET is done here with the same auth token because `oci-client` reads a manifest
//! body without a size cap; every blob is read with a cap and its sha256 is checked here
//! against the manifest's layer digest (on top of `oci-client`'s own check). Foreign layer
//! URLs (`urls` in a descriptor) are dropped, so a manifest cannot send the client elsewhere.
//! Manifest lists / image indexes are refused: a Wasm artifact is a single manifest.

use std::collections::BTreeMap;

use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};

use crate::error::clip;
use crate::http::error_chain;
use crate::source::{check_digest, is_loopback_host};
use crate::{DistError, FetchOptions, Fetched, Limits, OciRef, sha256_digest, utf8};

/// Config media type of a CNCF Wasm OCI artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// Media type of the component layer.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Media type of toolhost's request-file layer (`NAME.toml`).
pub const REQUEST_MEDIA_TYPE: &str = "application/vnd.toolhost.request.v1+toml";
/// Media type of toolhost's signature layer (minisign `.minisig` text).
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.toolhost.minisign.v1";
/// Media type of toolhost's package statement layer (the text the signature covers).
pub const STATEMENT_MEDIA_TYPE: &str = "application/vnd.toolhost.statement.v2+text";
/// The Docker v2 manifest media type, accepted when reading (some registries convert).
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// How to publish.
#[derive(Debug, Clone, Default)]
pub struct PublishOptions {
    /// Allow a plain-HTTP registry on a host that is not loopback.
    pub insecure: bool,
    /// Timeouts (the size limits do not apply to publishing one's own files).
    pub limits: Limits,
}

fn registry_error(registry: &str, reason: impl Into<String>) -> DistError {
    DistError::Registry {
        registry: registry.to_string(),
        reason: clip(&reason.into()),
    }
}

/// The client for `r`: plain HTTP on loopback or with `insecure`, TLS otherwise; no
/// image-index platform resolution (an index is refused).
fn client(r: &OciRef, insecure: bool, limits: &Limits) -> (Client, &'static str) {
    let plain = insecure || is_loopback_host(&r.host());
    let config = ClientConfig {
        protocol: if plain {
            ClientProtocol::Http
        } else {
            ClientProtocol::Https
        },
        platform_resolver: None,
        connect_timeout: Some(limits.connect_timeout),
        read_timeout: Some(limits.read_timeout),
        user_agent: concat!("toolhost/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    };
    (Client::new(config), if plain { "http" } else { "https" })
}

fn reference(r: &OciRef) -> Reference {
    match (&r.tag, &r.digest) {
        (Some(t), Some(d)) => Reference::with_tag_and_digest(
            r.registry.clone(),
            r.repository.clone(),
            t.clone(),
            d.clone(),
        ),
        (None, Some(d)) => {
            Reference::with_digest(r.registry.clone(), r.repository.clone(), d.clone())
        }
        (Some(t), None) => Reference::with_tag(r.registry.clone(), r.repository.clone(), t.clone()),
        // OciRef::parse requires a tag or a digest; "latest" is the registry's own default.
        (None, None) => Reference::with_tag(
            r.registry.clone(),
            r.repository.clone(),
            "latest".to_string(),
        ),
    }
}

/// Fetches the component (and request, signature) of a Wasm OCI artifact.
pub(crate) async fn fetch(r: &OciRef, opts: &FetchOptions) -> Result<Fetched, DistError> {
    let limits = &opts.limits;
    let (client, scheme) = client(r, opts.insecure, limits);
    let reference = reference(r);
    let auth = crate::creds::registry_auth(&r.registry);
    let reg_err = |reason: String| registry_error(&r.registry, reason);

    let token = client
        .auth(&reference, &auth, RegistryOperation::Pull)
        .await
        .map_err(|e| reg_err(format!("authentication failed: {}", error_chain(&e))))?;
    let manifest = pull_manifest(r, &reference, scheme, token, &auth, opts).await?;

    let mut wasm_layer = None;
    let mut request_layer = None;
    let mut signature_layer = None;
    let mut statement_layer = None;
    for layer in &manifest.layers {
        let slot = match layer.media_type.as_str() {
            WASM_LAYER_MEDIA_TYPE => &mut wasm_layer,
            REQUEST_MEDIA_TYPE => &mut request_layer,
            SIGNATURE_MEDIA_TYPE => &mut signature_layer,
            STATEMENT_MEDIA_TYPE => &mut statement_layer,
            other => {
                tracing::debug!(media_type = %clip(other), "ignoring a layer");
                continue;
            }
        };
        if slot.is_some() {
            return Err(reg_err(format!(
                "the manifest has several `{}` layers; a Wasm artifact has one",
                layer.media_type
            )));
        }
        *slot = Some(layer);
    }
    let wasm_layer = wasm_layer.ok_or_else(|| {
        reg_err(format!(
            "the manifest has no `{WASM_LAYER_MEDIA_TYPE}` layer: not a Wasm component artifact"
        ))
    })?;

    let wasm = pull_layer(
        &client,
        &reference,
        wasm_layer,
        limits.max_component_bytes,
        "the component",
        &r.registry,
    )
    .await?;
    let source = r.to_string();
    let request = match request_layer {
        Some(l) => Some(utf8(
            pull_layer(
                &client,
                &reference,
                l,
                limits.max_request_bytes,
                "the request file",
                &r.registry,
            )
            .await?,
            "the request file",
            &source,
        )?),
        None => None,
    };
    let signature = match signature_layer {
        Some(l) => Some(utf8(
            pull_layer(
                &client,
                &reference,
                l,
                limits.max_signature_bytes,
                "the signature",
                &r.registry,
            )
            .await?,
            "the signature",
            &source,
        )?),
        None => None,
    };
    let statement = match statement_layer {
        Some(l) => Some(utf8(
            pull_layer(
                &client,
                &reference,
                l,
                limits.max_statement_bytes,
                "the package statement",
                &r.registry,
            )
            .await?,
            "the package statement",
            &source,
        )?),
        None => None,
    };
    Ok(Fetched {
        name: r.basename().to_string(),
        digest: sha256_digest(&wasm),
        wasm,
        request,
        signature,
        statement,
        source,
    })
}

/// GETs the manifest with a size cap, checks it against a `@sha256:` reference, parses it.
async fn pull_manifest(
    r: &OciRef,
    reference: &Reference,
    scheme: &str,
    token: Option<String>,
    auth: &RegistryAuth,
    opts: &FetchOptions,
) -> Result<OciImageManifest, DistError> {
    let limits = &opts.limits;
    let reg_err = |reason: String| registry_error(&r.registry, reason);
    let http = crate::http::client(limits, opts.insecure)?;
    let target = reference.digest().or(reference.tag()).unwrap_or("latest");
    let url = format!(
        "{scheme}://{}/v2/{}/manifests/{target}",
        reference.resolve_registry(),
        reference.repository()
    );
    let req = authorized(
        http.get(&url).header(
            reqwest::header::ACCEPT,
            format!("{OCI_IMAGE_MEDIA_TYPE}, {DOCKER_MANIFEST_MEDIA_TYPE}"),
        ),
        token,
        auth,
    );
    tracing::debug!(%url, "GET manifest");
    let resp = req
        .send()
        .await
        .map_err(|e| reg_err(format!("manifest request failed: {}", error_chain(&e))))?;
    let status = resp.status();
    if !status.is_success() {
        let hint = if status == reqwest::StatusCode::NOT_FOUND {
            " (no such repository or tag)"
        } else if status == reqwest::StatusCode::UNAUTHORIZED {
            " (set TOOLHOST_REGISTRY_USER/TOOLHOST_REGISTRY_PASSWORD or log in with docker)"
        } else {
            ""
        };
        return Err(reg_err(format!(
            "manifest {}: server answered {status}{hint}",
            r
        )));
    }
    let body = crate::http::read_body(resp, limits.max_manifest_bytes, "the manifest").await?;
    let digest = sha256_digest(&body);
    if let Some(expected) = &r.digest {
        let expected = check_digest(expected)?;
        if digest != expected {
            return Err(reg_err(format!(
                "the manifest's digest is {digest}, not the {expected} asked for"
            )));
        }
    }
    let value: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|e| reg_err(format!("the manifest is not JSON: {e}")))?;
    match value.get("mediaType").and_then(|m| m.as_str()) {
        None | Some(OCI_IMAGE_MEDIA_TYPE) | Some(DOCKER_MANIFEST_MEDIA_TYPE) => {}
        Some(other) => {
            return Err(reg_err(format!(
                "the manifest has media type `{}`; a Wasm artifact is a single image manifest",
                clip(other)
            )));
        }
    }
    let manifest: OciImageManifest = serde_json::from_value(value)
        .map_err(|e| reg_err(format!("not an image manifest: {e}")))?;
    if manifest.schema_version != 2 {
        return Err(reg_err(format!(
            "unsupported manifest schema version {}",
            manifest.schema_version
        )));
    }
    if manifest.layers.len() > limits.max_layers {
        return Err(reg_err(format!(
            "the manifest lists {} layers; at most {} are accepted",
            manifest.layers.len(),
            limits.max_layers
        )));
    }
    tracing::debug!(manifest = %digest, layers = manifest.layers.len(), "manifest");
    Ok(manifest)
}

/// `req` with the registry's bearer token, or else the Basic credentials.
fn authorized(
    req: reqwest::RequestBuilder,
    token: Option<String>,
    auth: &RegistryAuth,
) -> reqwest::RequestBuilder {
    match (token, auth) {
        (Some(t), _) => req.bearer_auth(t),
        (None, RegistryAuth::Basic(u, p)) => req.basic_auth(u, Some(p)),
        (None, _) => req,
    }
}

/// The most tags [`list_tags`] asks the registry for.
pub const MAX_TAGS: usize = 1000;

/// The tags of `r`'s repository (at most [`MAX_TAGS`], the body capped like a manifest),
/// so `toolhost update --check` can show what the registry offers beside what is
/// installed: a registry that stops offering new releases (a freeze) shows as one whose
/// newest tag is the installed one.
pub async fn list_tags(r: &OciRef, opts: &FetchOptions) -> Result<Vec<String>, DistError> {
    let limits = &opts.limits;
    let (client, scheme) = client(r, opts.insecure, limits);
    let reference = reference(r);
    let auth = crate::creds::registry_auth(&r.registry);
    let reg_err = |reason: String| registry_error(&r.registry, reason);
    let token = client
        .auth(&reference, &auth, RegistryOperation::Pull)
        .await
        .map_err(|e| reg_err(format!("authentication failed: {}", error_chain(&e))))?;
    let http = crate::http::client(limits, opts.insecure)?;
    let url = format!(
        "{scheme}://{}/v2/{}/tags/list?n={MAX_TAGS}",
        reference.resolve_registry(),
        reference.repository()
    );
    let resp = authorized(http.get(&url), token, &auth)
        .send()
        .await
        .map_err(|e| reg_err(format!("tags request failed: {}", error_chain(&e))))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(reg_err(format!("tags of {r}: server answered {status}")));
    }
    let body = crate::http::read_body(resp, limits.max_manifest_bytes, "the tag list").await?;
    #[derive(serde::Deserialize)]
    struct Tags {
        #[serde(default)]
        tags: Option<Vec<String>>,
    }
    let tags: Tags = serde_json::from_slice(&body)
        .map_err(|e| reg_err(format!("the tag list is not JSON: {e}")))?;
    Ok(tags
        .tags
        .unwrap_or_default()
        .into_iter()
        .take(MAX_TAGS)
        .collect())
}

/// Downloads one layer with a cap and checks its sha256 against the manifest's layer digest.
async fn pull_layer(
    client: &Client,
    reference: &Reference,
    layer: &OciDescriptor,
    limit: u64,
    what: &str,
    registry: &str,
) -> Result<Vec<u8>, DistError> {
    let too_large = || DistError::TooLarge {
        what: what.to_string(),
        limit,
    };
    let expected = check_digest(&layer.digest)
        .map_err(|_| registry_error(registry, format!("{what}: the layer digest is not sha256")))?;
    if layer.size < 0 || layer.size as u64 > limit {
        return Err(too_large());
    }
    // Only the digest, media type and size: no foreign `urls`.
    let desc = OciDescriptor {
        media_type: layer.media_type.clone(),
        digest: expected.clone(),
        size: layer.size,
        ..OciDescriptor::default()
    };
    let mut stream = client
        .pull_blob_stream(reference, &desc)
        .await
        .map_err(|e| registry_error(registry, format!("{what}: {}", error_chain(&e))))?;
    if stream.content_length.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut data = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            registry_error(
                registry,
                format!("{what}: the layer does not match its digest or the download failed: {e}"),
            )
        })?;
        if data.len() as u64 + chunk.len() as u64 > limit {
            return Err(too_large());
        }
        data.extend_from_slice(&chunk);
    }
    let actual = sha256_digest(&data);
    if actual != expected {
        return Err(registry_error(
            registry,
            format!("{what}: the layer's bytes hash to {actual}, but the manifest says {expected}"),
        ));
    }
    Ok(data)
}

/// Pushes the component as a CNCF Wasm OCI artifact; returns the manifest digest.
///
/// `request` becomes a [`REQUEST_MEDIA_TYPE`] layer, `signature` a [`SIGNATURE_MEDIA_TYPE`]
/// layer and `statement` (the text the signature covers) a [`STATEMENT_MEDIA_TYPE`] layer.
/// `reference` must carry a tag (a digest is the result, not an input).
pub async fn publish(
    wasm: &[u8],
    request: Option<&str>,
    signature: Option<&str>,
    statement: Option<&str>,
    reference: &OciRef,
    opts: &PublishOptions,
) -> Result<String, DistError> {
    let reg_err = |reason: String| registry_error(&reference.registry, reason);
    if reference.tag.is_none() || reference.digest.is_some() {
        return Err(DistError::InvalidSource {
            source_str: reference.to_string(),
            reason: "publish needs oci://HOST/REPO:TAG (a digest is what publishing yields)".into(),
        });
    }
    if !wasm.starts_with(b"\0asm") {
        return Err(DistError::InvalidSource {
            source_str: reference.to_string(),
            reason: "the file to publish is not a WebAssembly binary".into(),
        });
    }
    let (client, _) = client(reference, opts.insecure, &opts.limits);
    let oci_ref = self::reference(reference);
    let auth = crate::creds::registry_auth(&reference.registry);
    client
        .auth(&oci_ref, &auth, RegistryOperation::Push)
        .await
        .map_err(|e| reg_err(format!("authentication failed: {}", error_chain(&e))))?;

    // Each layer: its bytes, media type and file name (the title annotation).
    let name = reference.basename();
    let mut blobs = vec![ImageLayer::new(
        wasm.to_vec(),
        WASM_LAYER_MEDIA_TYPE.to_string(),
        title(format!("{name}.wasm")),
    )];
    if let Some(req) = request {
        blobs.push(ImageLayer::new(
            req.as_bytes().to_vec(),
            REQUEST_MEDIA_TYPE.to_string(),
            title(format!("{name}.toml")),
        ));
    }
    if let Some(sig) = signature {
        blobs.push(ImageLayer::new(
            sig.as_bytes().to_vec(),
            SIGNATURE_MEDIA_TYPE.to_string(),
            title(format!("{name}.wasm.minisig")),
        ));
    }
    if let Some(text) = statement {
        blobs.push(ImageLayer::new(
            text.as_bytes().to_vec(),
            STATEMENT_MEDIA_TYPE.to_string(),
            title(format!("{name}.wasm.statement")),
        ));
    }
    let wasm_digest = sha256_digest(wasm);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [wasm_digest],
    }))
    .map_err(|e| reg_err(e.to_string()))?;

    let mut layers = Vec::new();
    for blob in blobs {
        let digest = sha256_digest(&blob.data);
        layers.push(OciDescriptor {
            media_type: blob.media_type.clone(),
            digest: digest.clone(),
            size: blob.data.len() as i64,
            annotations: blob.annotations,
            ..OciDescriptor::default()
        });
        tracing::info!(media_type = %blob.media_type, %digest, bytes = blob.data.len(), "pushing layer");
        push_blob(&client, &oci_ref, blob.data, &digest, &reference.registry).await?;
    }
    let config_digest = sha256_digest(&config);
    let config_desc = OciDescriptor {
        media_type: WASM_CONFIG_MEDIA_TYPE.to_string(),
        digest: config_digest.clone(),
        size: config.len() as i64,
        ..OciDescriptor::default()
    };
    push_blob(
        &client,
        &oci_ref,
        config,
        &config_digest,
        &reference.registry,
    )
    .await?;

    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_string()),
        config: config_desc,
        layers,
        subject: None,
        artifact_type: None,
        annotations: None,
    };
    let body = serde_json::to_vec(&manifest).map_err(|e| reg_err(e.to_string()))?;
    let manifest_digest = sha256_digest(&body);
    client
        .push_manifest_raw(
            &oci_ref,
            body,
            reqwest::header::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE),
        )
        .await
        .map_err(|e| reg_err(format!("pushing the manifest: {}", error_chain(&e))))?;
    tracing::info!(reference = %reference, manifest = %manifest_digest, "published");
    Ok(manifest_digest)
}

/// An `org.opencontainers.image.title` annotation.
fn title(t: String) -> Option<BTreeMap<String, String>> {
    Some(BTreeMap::from([(
        "org.opencontainers.image.title".to_string(),
        t,
    )]))
}

async fn push_blob(
    client: &Client,
    reference: &Reference,
    data: impl Into<bytes::Bytes>,
    digest: &str,
    registry: &str,
) -> Result<(), DistError> {
    client
        .push_blob(reference, data, digest)
        .await
        .map(|_| ())
        .map_err(|e| {
            registry_error(
                registry,
                format!("pushing blob {digest}: {}", error_chain(&e)),
            )
        })
}
