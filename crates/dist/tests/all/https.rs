//! The URL source over real HTTP on 127.0.0.1 (an axum server): `NAME.wasm`, `NAME.toml`
//! and `NAME.wasm.minisig` beside it; plain HTTP off loopback refused before connecting;
//! oversized bodies (announced or not) refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use toolhost_dist::{
    DistError, FetchOptions, Limits, Source, fetch, sha256_digest, sign, verify_signature,
};

use crate::support::{Keys, calc_request, calc_wasm};

struct Files {
    wasm: Vec<u8>,
    request: String,
    signature: String,
    hits: AtomicUsize,
}

/// Serves the files on 127.0.0.1; returns the base URL.
async fn serve(files: Arc<Files>) -> anyhow::Result<String> {
    let app = Router::new()
        .route(
            "/p/calc.wasm",
            get(|State(f): State<Arc<Files>>| async move {
                f.hits.fetch_add(1, Ordering::SeqCst);
                f.wasm.clone()
            }),
        )
        .route(
            "/p/calc.toml",
            get(|State(f): State<Arc<Files>>| async move { f.request.clone() }),
        )
        .route(
            "/p/calc.wasm.minisig",
            get(|State(f): State<Arc<Files>>| async move { f.signature.clone() }),
        )
        .route(
            "/bare/calc.wasm",
            get(|State(f): State<Arc<Files>>| async move { f.wasm.clone() }),
        )
        // A body that does not announce its length and never ends early: 4 MiB in 64 KiB chunks.
        .route(
            "/endless/calc.wasm",
            get(|| async {
                let chunks = (0..64).map(|_| Ok::<_, std::io::Error>(vec![0u8; 64 * 1024]));
                Body::from_stream(futures::stream::iter(chunks))
            }),
        )
        // A body that trickles forever: one byte every 50 ms (never silent long enough for
        // the read timeout), so only the total timeout ends it.
        .route(
            "/drip/calc.wasm",
            get(|| async {
                let drip = futures::stream::unfold((), |()| async {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    Some((Ok::<_, std::io::Error>(vec![0u8]), ()))
                });
                Body::from_stream(drip)
            }),
        )
        .route(
            "/gone/calc.wasm",
            get(|| async { (StatusCode::FORBIDDEN, "no") }),
        )
        .with_state(files);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}"))
}

#[tokio::test]
async fn url_source_brings_request_and_signature() -> anyhow::Result<()> {
    let Some(keys) = Keys::generate()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let files = Arc::new(Files {
        signature: sign(&wasm, &keys.secret_file)?,
        request: calc_request(),
        wasm: wasm.clone(),
        hits: AtomicUsize::new(0),
    });
    let base = serve(files.clone()).await?;
    let source = Source::parse(&format!("{base}/p/calc.wasm"))?;
    let got = fetch(&source, &FetchOptions::default()).await?;
    assert_eq!(got.name, "calc");
    assert_eq!(got.wasm, wasm);
    assert_eq!(got.digest, sha256_digest(&wasm));
    assert_eq!(got.request.as_deref(), Some(files.request.as_str()));
    assert_eq!(got.signature.as_deref(), Some(files.signature.as_str()));
    assert_eq!(got.source, format!("{base}/p/calc.wasm"));
    let sig = got.signature.as_deref().unwrap_or_default();
    assert_eq!(
        verify_signature(&got.wasm, sig, std::slice::from_ref(&keys.public))?,
        keys.key_id
    );

    // No request or signature beside it: both None, not an error.
    let bare = fetch(
        &Source::parse(&format!("{base}/bare/calc.wasm"))?,
        &FetchOptions::default(),
    )
    .await?;
    assert_eq!(bare.wasm, wasm);
    assert_eq!((bare.request, bare.signature), (None, None));

    // An error status is an Http error that names it.
    let err = fetch(
        &Source::parse(&format!("{base}/gone/calc.wasm"))?,
        &FetchOptions::default(),
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(
        matches!(&err, DistError::Http { .. }) && err.to_string().contains("403"),
        "{err}"
    );
    Ok(())
}

#[tokio::test]
async fn plain_http_off_loopback_is_refused_without_connecting() -> anyhow::Result<()> {
    let wasm = calc_wasm();
    let files = Arc::new(Files {
        signature: String::new(),
        request: String::new(),
        wasm: wasm.clone(),
        hits: AtomicUsize::new(0),
    });
    let base = serve(files.clone()).await?;
    let port = base.rsplit(':').next().unwrap_or_default();
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers there, so a refusal that came
    // after a connection attempt would show up as an Http error, not InsecureRefused.
    for url in [
        format!("http://192.0.2.1:{port}/p/calc.wasm"),
        format!("http://example.invalid:{port}/p/calc.wasm"),
    ] {
        let err = fetch(&Source::parse(&url)?, &FetchOptions::default())
            .await
            .unwrap_err();
        eprintln!("refused as expected: {err}");
        assert!(
            matches!(err, DistError::InsecureRefused { .. }),
            "{url}: {err}"
        );
    }
    assert_eq!(files.hits.load(Ordering::SeqCst), 0);
    // Good call: loopback over plain HTTP is fine.
    let got = fetch(
        &Source::parse(&format!("{base}/p/calc.wasm"))?,
        &FetchOptions::default(),
    )
    .await?;
    assert_eq!(got.wasm, wasm);
    assert_eq!(files.hits.load(Ordering::SeqCst), 1);
    Ok(())
}

#[tokio::test]
async fn oversized_bodies_are_refused() -> anyhow::Result<()> {
    let wasm = calc_wasm();
    let files = Arc::new(Files {
        signature: "x".repeat(100 * 1024),
        request: "y".repeat(200 * 1024),
        wasm: wasm.clone(),
        hits: AtomicUsize::new(0),
    });
    let base = serve(files).await?;
    let limited = FetchOptions {
        limits: Limits {
            max_component_bytes: 1024 * 1024,
            ..Limits::default()
        },
        ..FetchOptions::default()
    };
    // No Content-Length: the cap stops the stream.
    let err = fetch(
        &Source::parse(&format!("{base}/endless/calc.wasm"))?,
        &limited,
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::TooLarge { .. }), "{err}");
    // With Content-Length: refused before reading.
    let tiny = FetchOptions {
        limits: Limits {
            max_component_bytes: wasm.len() as u64 - 1,
            ..Limits::default()
        },
        ..FetchOptions::default()
    };
    let err = fetch(&Source::parse(&format!("{base}/p/calc.wasm"))?, &tiny)
        .await
        .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::TooLarge { .. }), "{err}");
    // Oversized request file (200 KiB > 64 KiB default) and signature (100 KiB > 16 KiB).
    let err = fetch(
        &Source::parse(&format!("{base}/p/calc.wasm"))?,
        &FetchOptions::default(),
    )
    .await
    .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(
        matches!(&err, DistError::TooLarge { what, .. } if what.contains("request")),
        "{err}"
    );
    // Good call: a component without oversized side files.
    let got = fetch(
        &Source::parse(&format!("{base}/bare/calc.wasm"))?,
        &FetchOptions::default(),
    )
    .await?;
    assert_eq!(got.wasm, wasm);
    Ok(())
}

#[tokio::test]
async fn a_never_ending_trickle_hits_the_total_timeout() -> anyhow::Result<()> {
    let wasm = calc_wasm();
    let files = Arc::new(Files {
        signature: String::new(),
        request: String::new(),
        wasm: wasm.clone(),
        hits: AtomicUsize::new(0),
    });
    let base = serve(files).await?;
    let opts = FetchOptions {
        limits: Limits {
            total_timeout: std::time::Duration::from_secs(1),
            ..Limits::default()
        },
        ..FetchOptions::default()
    };
    let err = fetch(&Source::parse(&format!("{base}/drip/calc.wasm"))?, &opts)
        .await
        .unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::TimedOut { .. }), "{err}");
    // Good call with the same limits.
    let got = fetch(&Source::parse(&format!("{base}/bare/calc.wasm"))?, &opts).await?;
    assert_eq!(got.wasm, wasm);
    Ok(())
}
