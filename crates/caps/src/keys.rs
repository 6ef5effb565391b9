//! Config keys: the names of `wasi:config/store` entries a plugin's request may ask for
//! (its `config = [...]`). A key is part of the capability set ([`crate::Capabilities`]):
//! requested, approved and granted like a folder, while its value is the operator's
//! (never in the request or the lock). Keys are bounded in number, length and alphabet so
//! a hostile request cannot grow what the approval shows.

/// The most keys one request file may ask for.
pub const MAX_CONFIG_KEYS: usize = 64;
/// The longest key, in bytes.
pub const MAX_CONFIG_KEY_LEN: usize = 128;

/// Why `key` cannot be a config key, if it cannot: 1 to [`MAX_CONFIG_KEY_LEN`] bytes of
/// ASCII letters, digits, `_`, `-` and `.`.
pub fn key_problem(key: &str) -> Option<String> {
    if key.is_empty() {
        return Some("is empty".into());
    }
    if key.len() > MAX_CONFIG_KEY_LEN {
        return Some(format!(
            "is {} bytes long (at most {MAX_CONFIG_KEY_LEN})",
            key.len()
        ));
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Some("may hold only ASCII letters, digits, `_`, `-` and `.`".into());
    }
    None
}

/// The first problem of a requested key list: too many keys, a bad key or a repeated
/// one, as `(key shown, why)`. Keys are shown cut to 40 characters.
pub fn check_keys(keys: &[String]) -> Result<(), (String, String)> {
    let shown = |k: &str| -> String {
        let cut: String = k.chars().take(40).collect();
        if cut.len() < k.len() {
            format!("{}…", cut.escape_debug())
        } else {
            cut.escape_debug().to_string()
        }
    };
    if keys.len() > MAX_CONFIG_KEYS {
        return Err((
            shown(&keys[MAX_CONFIG_KEYS]),
            format!(
                "asks for {} keys; a plugin may ask for at most {MAX_CONFIG_KEYS}",
                keys.len()
            ),
        ));
    }
    for (i, k) in keys.iter().enumerate() {
        if let Some(why) = key_problem(k) {
            return Err((shown(k), why));
        }
        if keys[..i].contains(k) {
            return Err((shown(k), "is asked for twice".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_in_number_length_and_alphabet() {
        assert!(check_keys(&["API_KEY".into(), "region.name-2".into()]).is_ok());
        let many: Vec<String> = (0..10_000).map(|i| format!("K{i}")).collect();
        let (key, why) = check_keys(&many).unwrap_err();
        assert_eq!(key, "K64");
        assert!(why.contains("10000 keys"), "{why}");
        let (key, why) = check_keys(&["x".repeat(1 << 20)]).unwrap_err();
        assert!(key.ends_with('…') && key.len() < 50, "{key}");
        assert!(why.contains("1048576 bytes"), "{why}");
        assert!(check_keys(&["a b".into()]).is_err());
        assert!(check_keys(&["".into()]).is_err());
        assert!(check_keys(&["K".into(), "K".into()]).is_err());
    }
}
