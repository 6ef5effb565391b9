//! minisign signatures of components: [`verify_signature`] against the operator's trusted keys,
//! [`sign`] with a secret key file.
//!
//! The format is minisign's (Ed25519 over the BLAKE2b-512 prehash of the file, plus a signed
//! trusted comment), so signatures interoperate both ways with the `minisign` tool: `minisign -S`
//! output verifies here, and [`sign`] output verifies with `minisign -V`. Legacy (non-prehashed)
//! signatures are refused, as `minisign` itself does by default since 0.8.
//!
//! A trusted key is the base64 public-key line of a minisign `.pub` file (`RWQ…`); a whole
//! `.pub` file's text is accepted too (its last non-empty line is the key).

use std::io::{Cursor, Read};
use std::path::Path;

use crate::DistError;

/// The largest signature text accepted (a real one is about 300 bytes).
pub const MAX_SIGNATURE_BYTES: u64 = 16 * 1024;
/// The largest secret key file read (a real one is about 200 bytes).
const MAX_SECRET_KEY_BYTES: u64 = 16 * 1024;

/// Verifies a minisign signature of `wasm` against trusted public keys (each the base64
/// public-key line of a minisign .pub file, "RWQ..."). Returns the signer's key id (16 hex
/// digits, as minisign prints it).
///
/// Errors: [`DistError::BadSignature`] if the text is not a minisign signature or does not
/// verify, [`DistError::UntrustedKey`] if no trusted key has the signature's key id,
/// [`DistError::BadKey`] if a trusted key cannot be parsed.
pub fn verify_signature(
    wasm: &[u8],
    signature: &str,
    trusted_keys: &[String],
) -> Result<String, DistError> {
    if signature.len() as u64 > MAX_SIGNATURE_BYTES {
        return Err(DistError::TooLarge {
            what: "the signature".into(),
            limit: MAX_SIGNATURE_BYTES,
        });
    }
    let sig = minisign::SignatureBox::from_string(signature).map_err(|e| {
        DistError::BadSignature(format!(
            "not a minisign signature: {}",
            crate::error::clip(&e.to_string())
        ))
    })?;
    let key_id = key_id(sig.keynum());
    for key in trusted_keys {
        let pk = parse_public_key(key)?;
        if pk.keynum() != sig.keynum() {
            continue;
        }
        return match minisign::verify(&pk, &sig, Cursor::new(wasm), true, false, false) {
            Ok(()) => Ok(key_id),
            Err(e) => Err(DistError::BadSignature(format!(
                "the signature by trusted key {key_id} does not match the component ({e})"
            ))),
        };
    }
    Err(DistError::UntrustedKey { key_id })
}

/// Signs with a minisign secret key file (unencrypted, as `minisign -G -W` makes). Returns
/// the `.minisig` text.
pub fn sign(wasm: &[u8], secret_key_file: &Path) -> Result<String, DistError> {
    let io = |source| DistError::Io {
        path: secret_key_file.to_path_buf(),
        source,
    };
    let mut text = String::new();
    std::fs::File::open(secret_key_file)
        .map_err(io)?
        .take(MAX_SECRET_KEY_BYTES)
        .read_to_string(&mut text)
        .map_err(io)?;
    let sk = parse_unencrypted_secret_key(&text).map_err(|reason| {
        DistError::BadKey(format!(
            "{}: {reason} (an unencrypted key made with `minisign -G -W` is needed)",
            secret_key_file.display()
        ))
    })?;
    let pk =
        minisign::PublicKey::from_secret_key(&sk).map_err(|e| DistError::BadKey(e.to_string()))?;
    let untrusted = format!("signature from toolhost secret key {}", key_id(pk.keynum()));
    let sig = minisign::sign(Some(&pk), &sk, Cursor::new(wasm), None, Some(&untrusted))
        .map_err(|e| DistError::BadKey(e.to_string()))?;
    Ok(sig.into_string())
}

/// Decodes an unencrypted minisign secret key file (comment line, then base64 of
/// `"Ed" | kdf "\0\0" | chk "B2" | salt | ops | mem | keynum | sk | checksum`).
///
/// `minisign::SecretKey::from_unencrypted_box` is not used because the `minisign` tool 0.11
/// writes an all-zero checksum for `-W` keys, which that function rejects as corrupted.
/// Instead the key material is checked by use: [`sign`] passes the derived public key to
/// `minisign::sign`, which verifies the fresh signature with it, so a key whose halves do not
/// belong together fails there.
fn parse_unencrypted_secret_key(text: &str) -> Result<minisign::SecretKey, String> {
    use base64::Engine;
    /// 2 + 2 + 2 + 32 + 8 + 8 + 8 + 64 + 32 bytes.
    const LEN: usize = 158;
    let line = text
        .lines()
        .nth(1)
        .ok_or("not a minisign secret key file (no key line)")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(line.trim())
        .map_err(|e| format!("not a minisign secret key file: {e}"))?;
    if bytes.len() != LEN || &bytes[..2] != b"Ed" {
        return Err("not a minisign Ed25519 secret key".into());
    }
    if bytes[2..4] != [0, 0] {
        return Err("the key is encrypted with a password".into());
    }
    minisign::SecretKey::from_bytes(&bytes).map_err(|e| e.to_string())
}

/// The key id that made a signature (16 uppercase hex digits), without verifying it.
pub fn signature_key_id(signature: &str) -> Result<String, DistError> {
    if signature.len() as u64 > MAX_SIGNATURE_BYTES {
        return Err(DistError::TooLarge {
            what: "the signature".into(),
            limit: MAX_SIGNATURE_BYTES,
        });
    }
    minisign::SignatureBox::from_string(signature)
        .map(|s| key_id(s.keynum()))
        .map_err(|e| {
            DistError::BadSignature(format!(
                "not a minisign signature: {}",
                crate::error::clip(&e.to_string())
            ))
        })
}

/// The key id of a minisign public key line (or `.pub` file text): 16 uppercase hex digits.
pub fn public_key_id(key: &str) -> Result<String, DistError> {
    parse_public_key(key).map(|pk| key_id(pk.keynum()))
}

fn parse_public_key(key: &str) -> Result<minisign::PublicKey, DistError> {
    let line = key
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    minisign::PublicKey::from_base64(line).map_err(|e| {
        DistError::BadKey(format!(
            "`{}` is not a minisign public key: {e}",
            crate::error::clip(line)
        ))
    })
}

/// minisign prints a key id as the little-endian u64 of its 8 bytes, in 16 uppercase hex digits.
fn key_id(keynum: &[u8]) -> String {
    let mut b = [0u8; 8];
    let n = keynum.len().min(8);
    b[..n].copy_from_slice(&keynum[..n]);
    format!("{:016X}", u64::from_le_bytes(b))
}
