//! minisign interoperability both ways with the real `minisign` tool, and the refusals:
//! untrusted key, tampered component, garbage signature.

use toolhost_dist::{
    Coverage, DistError, Fetched, Statement, check_package, sha256_digest, sign, signature_key_id,
    verify_signature,
};

use crate::support::{Keys, calc_wasm};

#[test]
fn minisign_tool_signature_verifies_and_tampering_is_refused() -> anyhow::Result<()> {
    let Some(keys) = Keys::generate()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let sig = keys.minisign_sign(&wasm)?;

    // Tampered component: one byte flipped in the middle.
    let mut tampered = wasm.clone();
    let mid = tampered.len() / 2;
    tampered[mid] ^= 0x01;
    let err = verify_signature(&tampered, &sig, std::slice::from_ref(&keys.public)).unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::BadSignature(_)), "{err}");

    // Good call: the untouched component verifies, and the key id is minisign's.
    let id = verify_signature(&wasm, &sig, std::slice::from_ref(&keys.public))?;
    assert_eq!(id, keys.key_id);
    assert_eq!(signature_key_id(&sig)?, keys.key_id);
    Ok(())
}

#[test]
fn signature_by_an_untrusted_key_is_refused() -> anyhow::Result<()> {
    let (Some(signer), Some(other)) = (Keys::generate()?, Keys::generate()?) else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let sig = signer.minisign_sign(&wasm)?;
    let err = verify_signature(&wasm, &sig, std::slice::from_ref(&other.public)).unwrap_err();
    eprintln!("refused as expected: {err}");
    match &err {
        DistError::UntrustedKey { key_id } => assert_eq!(key_id, &signer.key_id),
        _ => panic!("expected UntrustedKey, got {err}"),
    }
    assert!(err.to_string().contains(&signer.key_id), "{err}");
    // No trusted keys at all: untrusted too.
    assert!(matches!(
        verify_signature(&wasm, &sig, &[]),
        Err(DistError::UntrustedKey { .. })
    ));
    // Good call: with the signer's key among the trusted ones (a whole .pub file's text works too).
    let pub_text = std::fs::read_to_string(&signer.public_file)?;
    let id = verify_signature(&wasm, &sig, &[other.public.clone(), pub_text])?;
    assert_eq!(id, signer.key_id);
    Ok(())
}

#[test]
fn toolhost_signature_verifies_with_minisign_tool() -> anyhow::Result<()> {
    let Some(keys) = Keys::generate()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let sig = sign(&wasm, &keys.secret_file)?;
    assert!(
        keys.minisign_verify(&wasm, &sig)?,
        "minisign -V refused:\n{sig}"
    );
    // The real tool refuses it for other bytes, so the check above can fail.
    let mut tampered = wasm.clone();
    tampered[8] ^= 0x80;
    assert!(!keys.minisign_verify(&tampered, &sig)?);
    // And it verifies here with the same key id minisign printed.
    assert_eq!(
        verify_signature(&wasm, &sig, std::slice::from_ref(&keys.public))?,
        keys.key_id
    );
    Ok(())
}

#[test]
fn garbage_signatures_and_keys_are_typed_errors() -> anyhow::Result<()> {
    let Some(keys) = Keys::generate()? else {
        return Ok(());
    };
    let wasm = calc_wasm();
    for garbage in [
        "",
        "hello",
        "untrusted comment: x\n!!!\n",
        &"A".repeat(100_000),
    ] {
        let err = verify_signature(&wasm, garbage, std::slice::from_ref(&keys.public)).unwrap_err();
        eprintln!("refused as expected: {err}");
        assert!(
            matches!(err, DistError::BadSignature(_) | DistError::TooLarge { .. }),
            "{err}"
        );
    }
    let sig = keys.minisign_sign(&wasm)?;
    let err = verify_signature(&wasm, &sig, &["not a key".to_string()]).unwrap_err();
    eprintln!("refused as expected: {err}");
    assert!(matches!(err, DistError::BadKey(_)), "{err}");
    // An encrypted secret key (the kdf field set) is refused with a message saying so.
    let text = std::fs::read_to_string(&keys.secret_file)?;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut raw = base64_decode(&lines[1]);
    raw[2..4].copy_from_slice(b"Sc");
    lines[1] = base64_encode(&raw);
    let encrypted = keys.dir.path().join("encrypted.key");
    std::fs::write(&encrypted, lines.join("\n"))?;
    let err = sign(&wasm, &encrypted).unwrap_err();
    assert!(err.to_string().contains("encrypted"), "{err}");
    // A secret key that is not one.
    let bogus = keys.dir.path().join("bogus.key");
    std::fs::write(&bogus, "untrusted comment: nope\nAAAA\n")?;
    assert!(matches!(sign(&wasm, &bogus), Err(DistError::BadKey(_))));
    // Good call.
    assert_eq!(
        verify_signature(&wasm, &sig, std::slice::from_ref(&keys.public))?,
        keys.key_id
    );
    Ok(())
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .unwrap()
}

fn base64_encode(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn fetched(wasm: &[u8], signature: Option<String>) -> Fetched {
    Fetched {
        name: "calc".into(),
        wasm: wasm.to_vec(),
        digest: sha256_digest(wasm),
        request: None,
        signature,
        statement: None,
        source: "file:///calc.wasm".into(),
    }
}

#[test]
fn install_rule_refuses_unsigned_and_untrusted_unless_allowed_and_bad_always() -> anyhow::Result<()>
{
    let (Some(signer), Some(other)) = (Keys::generate()?, Keys::generate()?) else {
        return Ok(());
    };
    let wasm = calc_wasm();
    let trusted = std::slice::from_ref(&signer.public);
    let sig = signer.minisign_sign(&wasm)?;
    let by_other = other.minisign_sign(&wasm)?;
    let mut tampered = wasm.clone();
    tampered[100] ^= 1;

    assert!(matches!(
        check_package(&fetched(&wasm, None), "calc", trusted, false),
        Err(DistError::Unsigned)
    ));
    assert!(matches!(
        check_package(
            &fetched(&wasm, Some(by_other.clone())),
            "calc",
            trusted,
            false
        ),
        Err(DistError::UntrustedKey { .. })
    ));
    // A bad signature by a trusted key is refused even with allow_unsigned.
    assert!(matches!(
        check_package(
            &fetched(&tampered, Some(sig.clone())),
            "calc",
            trusted,
            true
        ),
        Err(DistError::BadSignature(_))
    ));
    assert!(matches!(
        check_package(
            &fetched(&wasm, Some("garbage".into())),
            "calc",
            trusted,
            true
        ),
        Err(DistError::BadSignature(_))
    ));
    // Allowed: unsigned and untrusted pass without a signer.
    assert_eq!(
        check_package(&fetched(&wasm, None), "calc", trusted, true)?,
        None
    );
    assert_eq!(
        check_package(&fetched(&wasm, Some(by_other)), "calc", trusted, true)?,
        None
    );
    // Good call: signed by the trusted key (the old way, and there is no request file,
    // so the component is the whole package).
    let v = check_package(&fetched(&wasm, Some(sig)), "calc", trusted, false)?
        .expect("a trusted signature");
    assert_eq!(
        (v.signer, v.coverage),
        (signer.key_id.clone(), Coverage::Package)
    );
    Ok(())
}

/// The `minisign` tool signs the statement file `publish --statement-out` writes; the
/// package verifies over it, and every swap a registry writer could make is refused.
#[test]
fn a_signed_statement_covers_the_request_and_the_name() -> anyhow::Result<()> {
    let Some(signer) = Keys::generate()? else {
        return Ok(());
    };
    let trusted = std::slice::from_ref(&signer.public);
    let wasm = calc_wasm();
    let request = "read = [\"data\"]\n";
    let statement = Statement::of("calc", &wasm, Some(request.as_bytes()));
    let sig = signer.minisign_sign(statement.text().as_bytes())?;
    let package = |wasm: &[u8], request: &str, sig: &str| Fetched {
        request: Some(request.to_string()),
        ..fetched(wasm, Some(sig.to_string()))
    };

    // A swapped request layer (same component, same signature).
    let err = check_package(
        &package(&wasm, "read = [\"/etc\"]\n", &sig),
        "calc",
        trusted,
        true,
    )
    .unwrap_err();
    assert!(matches!(err, DistError::BadSignature(_)), "{err}");
    assert!(err.to_string().contains("covers neither"), "{err}");
    // A swapped component with the original request.
    let mut other = wasm.clone();
    other.extend_from_slice(b"\0extra");
    let err = check_package(&package(&other, request, &sig), "calc", trusted, true).unwrap_err();
    assert!(matches!(err, DistError::BadSignature(_)), "{err}");
    // The same package installed under the name of another plugin, or a statement naming
    // another plugin: the name is part of what was signed.
    let err = check_package(&package(&wasm, request, &sig), "files", trusted, true).unwrap_err();
    assert!(matches!(err, DistError::BadSignature(_)), "{err}");
    assert!(err.to_string().contains("name: files"), "{err}");
    // A request file dropped from the package.
    let err = check_package(&fetched(&wasm, Some(sig.clone())), "calc", trusted, true).unwrap_err();
    assert!(matches!(err, DistError::BadSignature(_)), "{err}");

    // Signed the old way (the component alone) with a request beside it: the request is
    // not covered; refused, or with allow_unsigned accepted as covering the component only.
    let old = signer.minisign_sign(&wasm)?;
    let err = check_package(&package(&wasm, request, &old), "calc", trusted, false).unwrap_err();
    assert!(matches!(err, DistError::RequestUnsigned { .. }), "{err}");
    let v = check_package(&package(&wasm, request, &old), "calc", trusted, true)?
        .expect("the component's signature");
    assert_eq!(v.coverage, Coverage::Component);

    // Good: the package as it was signed.
    let v = check_package(&package(&wasm, request, &sig), "calc", trusted, false)?
        .expect("a trusted signature");
    assert_eq!((v.signer, v.coverage), (signer.key_id, Coverage::Package));
    Ok(())
}

/// The statement that travels with a package carries its version: the real `minisign`
/// signs it, and the version is believed only when the statement names exactly the
/// package fetched. A statement for another package (another name, component or
/// request), one with two versions, or one a signature does not cover is refused or
/// unversioned; then the genuine one verifies with its version.
#[test]
fn a_shipped_statement_carries_the_version_and_must_name_this_package() -> anyhow::Result<()> {
    let Some(signer) = Keys::generate()? else {
        return Ok(());
    };
    let trusted = std::slice::from_ref(&signer.public);
    let wasm = calc_wasm();
    let request = "read = [\"data\"]\n";
    let v = |s: &str| toolhost_dist::parse_version(s).unwrap();
    let statement = Statement::of("calc", &wasm, Some(request.as_bytes())).versioned(v("2.1.0"));
    let text = statement.text();
    let sig = signer.minisign_sign(text.as_bytes())?;
    let package = |statement: Option<String>| Fetched {
        request: Some(request.to_string()),
        statement,
        ..fetched(&wasm, Some(sig.clone()))
    };

    // A statement for another component, with a signature over it: refused, naming both.
    let mut other = wasm.clone();
    other.extend_from_slice(b"\0v1");
    let foreign = Statement::of("calc", &other, Some(request.as_bytes())).versioned(v("9.0.0"));
    let foreign_sig = signer.minisign_sign(foreign.text().as_bytes())?;
    let err = check_package(
        &Fetched {
            signature: Some(foreign_sig),
            ..package(Some(foreign.text()))
        },
        "calc",
        trusted,
        true,
    )
    .unwrap_err();
    assert!(matches!(err, DistError::BadSignature(_)), "{err}");
    assert!(
        err.to_string().contains("describes another package"),
        "{err}"
    );
    // Two versions: a malformed statement, refused naming where it came from.
    let doubled = text.replace("version: 2.1.0\n", "version: 2.1.0\nversion: 9.0.0\n");
    let err = check_package(&package(Some(doubled)), "calc", trusted, true).unwrap_err();
    assert!(matches!(err, DistError::BadStatement { .. }), "{err}");
    assert!(
        err.to_string().contains("appears twice") && err.to_string().contains("file:///calc.wasm"),
        "{err}"
    );
    // A bumped version the signature does not cover: not believed; the signature then
    // matches no statement of this package at all.
    let bumped = text.replace("2.1.0", "3.0.0");
    let err = check_package(&package(Some(bumped)), "calc", trusted, true).unwrap_err();
    assert!(matches!(err, DistError::BadSignature(_)), "{err}");
    // No statement beside it: the signature is over the v2 text, so nothing verifies.
    assert!(check_package(&package(None), "calc", trusted, true).is_err());

    // Good: the genuine statement, with its version.
    let verified =
        check_package(&package(Some(text)), "calc", trusted, false)?.expect("a trusted signature");
    assert_eq!(verified.coverage, Coverage::Package);
    assert_eq!(verified.version, Some(v("2.1.0")));
    Ok(())
}
