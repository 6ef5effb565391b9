//! minisign interoperability both ways with the real `minisign` tool, and the refusals:
//! untrusted key, tampered component, garbage signature.

use toolhost_dist::{DistError, sign, signature_key_id, verify_signature};

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
        assert!(
            matches!(err, DistError::BadSignature(_) | DistError::TooLarge { .. }),
            "{err}"
        );
    }
    let sig = keys.minisign_sign(&wasm)?;
    let err = verify_signature(&wasm, &sig, &["not a key".to_string()]).unwrap_err();
    assert!(matches!(err, DistError::BadKey(_)), "{err}");
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
