//! The local-file source: `NAME.wasm` with `NAME.toml` and `NAME.wasm.minisig` beside it.

use toolhost_dist::{DistError, FetchOptions, Limits, Source, fetch, sha256_digest};

use crate::support::{calc_request, calc_wasm};

#[tokio::test]
async fn local_file_with_request_and_signature() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let wasm = calc_wasm();
    let path = dir.path().join("calc.wasm");
    std::fs::write(&path, &wasm)?;
    std::fs::write(dir.path().join("calc.toml"), calc_request())?;
    std::fs::write(dir.path().join("calc.wasm.minisig"), "sig text")?;
    let source = Source::parse(&path.display().to_string())?;
    assert_eq!(
        source.to_string(),
        format!("file://{}", path.display()),
        "canonical form"
    );

    // Wrong pin first.
    let err = fetch(
        &source,
        &FetchOptions {
            expected_digest: Some(sha256_digest(b"x")),
            ..FetchOptions::default()
        },
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::DigestMismatch { .. }), "{err}");
    // Too large.
    let err = fetch(
        &source,
        &FetchOptions {
            limits: Limits {
                max_component_bytes: 100,
                ..Limits::default()
            },
            ..FetchOptions::default()
        },
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::TooLarge { .. }), "{err}");
    // Not a component.
    let not_wasm = dir.path().join("text.wasm");
    std::fs::write(&not_wasm, "hello")?;
    let err = fetch(&Source::File(not_wasm), &FetchOptions::default())
        .await
        .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::InvalidSource { .. }), "{err}");

    // Good call.
    let got = fetch(
        &source,
        &FetchOptions {
            expected_digest: Some(sha256_digest(&wasm)),
            ..FetchOptions::default()
        },
    )
    .await?;
    assert_eq!(got.name, "calc");
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.request.as_deref(), Some(calc_request().as_str()));
    assert_eq!(got.signature.as_deref(), Some("sig text"));
    assert_eq!(got.source, source.to_string());
    Ok(())
}
