//! OCI: publish to a real `docker-registry`, fetch by tag and by manifest digest, the digest
//! pin, a tampered blob in the registry's storage, a wkg-style artifact (one application/wasm
//! layer, pushed with oci-client directly), several wasm layers, size limits.

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use toolhost_dist::{
    DistError, FetchOptions, Limits, PublishOptions, Source, WASM_CONFIG_MEDIA_TYPE,
    WASM_LAYER_MEDIA_TYPE, fetch, publish, sha256_digest, sign, verify_signature,
};

use crate::support::{Keys, OciOf, Registry, calc_request, calc_wasm};

fn opts() -> FetchOptions {
    FetchOptions::default()
}

/// Pushes `layers` with oci-client itself (as another tool would), wasm config media type.
async fn push_raw(reg: &Registry, repo: &str, tag: &str, layers: Vec<ImageLayer>) {
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    });
    let reference = Reference::with_tag(reg.addr.clone(), repo.to_string(), tag.to_string());
    let config = Config::new(
        br#"{"architecture":"wasm","os":"wasip2"}"#.to_vec(),
        WASM_CONFIG_MEDIA_TYPE.to_string(),
        None,
    );
    client
        .push(&reference, &layers, config, &RegistryAuth::Anonymous, None)
        .await
        .expect("raw push");
}

#[tokio::test]
async fn publish_then_fetch_by_tag_and_by_digest() -> anyhow::Result<()> {
    let (Some(reg), Some(keys)) = (Registry::start()?, Keys::generate()?) else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let request = calc_request();
    let sig = sign(&wasm, &keys.secret_file)?;
    let target = reg.oci("tools/calc:1.0");
    let manifest = publish(
        &wasm,
        Some(&request),
        Some(&sig),
        None,
        &target,
        &PublishOptions::default(),
    )
    .await?;
    assert!(
        manifest.starts_with("sha256:") && manifest.len() == 71,
        "{manifest}"
    );

    let got = fetch(&Source::Oci(target.clone()), &opts()).await?;
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.digest, sha256_digest(&wasm));
    assert_eq!(got.request.as_deref(), Some(request.as_str()));
    assert_eq!(got.signature.as_deref(), Some(sig.as_str()));
    assert_eq!(got.name, "calc");
    assert_eq!(got.source, format!("oci://{}/tools/calc:1.0", reg.addr));
    assert_eq!(
        verify_signature(
            &got.wasm,
            got.signature.as_deref().unwrap_or(""),
            std::slice::from_ref(&keys.public)
        )?,
        keys.key_id
    );

    // By manifest digest: the same artifact.
    let by_digest = Source::parse(&format!("oci://{}/tools/calc@{manifest}", reg.addr))?;
    let got = fetch(&by_digest, &opts()).await?;
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.request.as_deref(), Some(request.as_str()));

    // A digest that names no manifest: refused by the registry.
    let missing = Source::parse(&format!(
        "oci://{}/tools/calc@sha256:{}",
        reg.addr,
        "0".repeat(64)
    ))?;
    assert!(matches!(
        fetch(&missing, &opts()).await,
        Err(DistError::Registry { .. })
    ));
    Ok(())
}

#[tokio::test]
async fn digest_pin_is_enforced() -> anyhow::Result<()> {
    let Some(reg) = Registry::start()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let target = reg.oci("pin/calc:v1");
    publish(&wasm, None, None, None, &target, &PublishOptions::default()).await?;
    let wrong = sha256_digest(b"something else");
    let err = fetch(
        &Source::Oci(target.clone()),
        &FetchOptions {
            expected_digest: Some(wrong.clone()),
            ..opts()
        },
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    match &err {
        DistError::DigestMismatch { expected, actual } => {
            assert_eq!(expected, &wrong);
            assert_eq!(actual, &sha256_digest(&wasm));
        }
        _ => panic!("expected DigestMismatch, got {err}"),
    }
    assert!(matches!(
        fetch(
            &Source::Oci(target.clone()),
            &FetchOptions {
                expected_digest: Some("sha256:xyz".into()),
                ..opts()
            }
        )
        .await,
        Err(DistError::InvalidDigest(_))
    ));
    // Good call: the right pin (in upper case, as some tools print it).
    let right = sha256_digest(&wasm)
        .to_uppercase()
        .replace("SHA256:", "sha256:");
    let got = fetch(
        &Source::Oci(target),
        &FetchOptions {
            expected_digest: Some(right),
            ..opts()
        },
    )
    .await?;
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.request, None);
    assert_eq!(got.signature, None);
    Ok(())
}

#[tokio::test]
async fn tampered_blob_in_the_registry_is_refused() -> anyhow::Result<()> {
    let Some(reg) = Registry::start()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let target = reg.oci("tamper/calc:1");
    publish(&wasm, None, None, None, &target, &PublishOptions::default()).await?;
    let blob = reg.blob_file(&sha256_digest(&wasm));
    let original = std::fs::read(&blob)?;
    assert_eq!(original, wasm, "the registry stores the layer as is");
    let mut evil = original.clone();
    let mid = evil.len() / 2;
    evil[mid] ^= 0xff;
    std::fs::write(&blob, &evil)?;

    let err = fetch(&Source::Oci(target.clone()), &opts())
        .await
        .unwrap_err();

    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::Registry { .. }), "{err}");
    assert!(err.to_string().contains("digest"), "{err}");

    // Good call: restored, it fetches again.
    std::fs::write(&blob, &original)?;
    assert_eq!(fetch(&Source::Oci(target), &opts()).await?.wasm, wasm);
    Ok(())
}

#[tokio::test]
async fn wkg_style_artifact_fetches_and_several_wasm_layers_are_refused() -> anyhow::Result<()> {
    let Some(reg) = Registry::start()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    // What wkg / Wassette push: one application/wasm layer, no request, no signature.
    push_raw(
        &reg,
        "wkg/calc",
        "0.1.0",
        vec![ImageLayer::new(
            wasm.clone(),
            WASM_LAYER_MEDIA_TYPE.to_string(),
            None,
        )],
    )
    .await;
    // Hostile: two components in one artifact (which one would be approved?).
    let mut other = wasm.clone();
    other.extend_from_slice(b"\0");
    push_raw(
        &reg,
        "evil/calc",
        "1",
        vec![
            ImageLayer::new(wasm.clone(), WASM_LAYER_MEDIA_TYPE.to_string(), None),
            ImageLayer::new(other, WASM_LAYER_MEDIA_TYPE.to_string(), None),
        ],
    )
    .await;
    // Hostile: no wasm layer at all.
    push_raw(
        &reg,
        "evil/empty",
        "1",
        vec![ImageLayer::new(
            b"hello".to_vec(),
            "text/plain".to_string(),
            None,
        )],
    )
    .await;

    let err = fetch(&Source::Oci(reg.oci("evil/calc:1")), &opts())
        .await
        .unwrap_err();

    eprintln!("refused as expected: {err}");
    assert!(err.to_string().contains("several"), "{err}");
    let err = fetch(&Source::Oci(reg.oci("evil/empty:1")), &opts())
        .await
        .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(
        err.to_string().contains("no `application/wasm` layer"),
        "{err}"
    );

    // Good call: the wkg-style artifact.
    let got = fetch(&Source::Oci(reg.oci("wkg/calc:0.1.0")), &opts()).await?;
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.digest, sha256_digest(&wasm));
    assert_eq!(got.request, None);
    assert_eq!(got.signature, None);
    Ok(())
}

#[tokio::test]
async fn oversized_layers_and_manifests_are_refused() -> anyhow::Result<()> {
    let Some(reg) = Registry::start()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let request = calc_request();
    let target = reg.oci("big/calc:1");
    publish(
        &wasm,
        Some(&request),
        None,
        None,
        &target,
        &PublishOptions::default(),
    )
    .await?;
    let small = |limits: Limits| FetchOptions { limits, ..opts() };
    let cases = [
        Limits {
            max_component_bytes: wasm.len() as u64 - 1,
            ..Limits::default()
        },
        Limits {
            max_request_bytes: request.len() as u64 - 1,
            ..Limits::default()
        },
        Limits {
            max_manifest_bytes: 100,
            ..Limits::default()
        },
    ];
    for limits in cases {
        let err = fetch(&Source::Oci(target.clone()), &small(limits.clone()))
            .await
            .unwrap_err();
        eprintln!("refused as expected: {err}");
        assert!(
            matches!(err, DistError::TooLarge { .. }),
            "{limits:?}: {err}"
        );
    }
    let err = fetch(
        &Source::Oci(target.clone()),
        &small(Limits {
            max_layers: 1,
            ..Limits::default()
        }),
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(err.to_string().contains("2 layers"), "{err}");
    // Good call: exactly at the limits.
    let got = fetch(
        &Source::Oci(target),
        &small(Limits {
            max_component_bytes: wasm.len() as u64,
            max_request_bytes: request.len() as u64,
            max_layers: 2,
            ..Limits::default()
        }),
    )
    .await?;
    assert_eq!(got.wasm, wasm);
    Ok(())
}

#[tokio::test]
async fn publish_refuses_what_is_not_a_component_or_has_no_tag() -> anyhow::Result<()> {
    let Some(reg) = Registry::start()? else {
        return Ok(());
    };
    let err = publish(
        b"not wasm",
        None,
        None,
        None,
        &reg.oci("x/y:1"),
        &PublishOptions::default(),
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::InvalidSource { .. }), "{err}");
    let by_digest = Source::parse(&format!("oci://{}/x/y@{}", reg.addr, sha256_digest(b"")))?;
    let Source::Oci(by_digest) = by_digest else {
        panic!("not an OCI source")
    };
    assert!(
        publish(
            &calc_wasm(),
            None,
            None,
            None,
            &by_digest,
            &PublishOptions::default()
        )
        .await
        .is_err()
    );
    // Good call.
    publish(
        &calc_wasm(),
        None,
        None,
        None,
        &reg.oci("x/y:1"),
        &PublishOptions::default(),
    )
    .await?;
    Ok(())
}
