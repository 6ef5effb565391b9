//! Secret sources (parsing, files, bounds, the keyring deadline) and the redactor.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::source::within;
use super::*;
use crate::tools::{ContentBlock, ToolError, ToolOutput};

fn parse(toml_text: &str) -> Result<BTreeMap<String, SecretSource>, String> {
    // serde_json stands in for the TOML reader: the same data model.
    let v: serde_json::Value = serde_json::from_str(toml_text).unwrap();
    serde_json::from_value(v).map_err(|e| e.to_string())
}

#[test]
fn the_four_forms_parse_and_describe_without_the_value() {
    let m = parse(
        r#"{"A": "hunter2-long", "B": {"env": "VAR"}, "C": {"file": "k.txt"},
            "D": {"keyring": "svc/user"}}"#,
    )
    .unwrap();
    assert_eq!(m["A"].describe(), "value in the config file");
    assert_eq!(format!("{:?}", m["A"]), "value in the config file");
    assert_eq!(m["B"], SecretSource::Env("VAR".into()));
    assert_eq!(m["C"].describe(), "file k.txt");
    assert_eq!(
        m["D"],
        SecretSource::Keyring {
            service: "svc".into(),
            user: "user".into()
        }
    );
    assert_eq!(format!("{:?}", m["A"].resolve().unwrap()), "[secret]");
}

#[test]
fn a_wrong_source_says_what_is_expected() {
    for (text, says) in [
        (r#"{"A": {"vault": "x"}}"#, "unknown source `vault`"),
        (r#"{"A": {"env": "X", "file": "y"}}"#, "exactly one source"),
        (r#"{"A": {"keyring": "nouser"}}"#, "SERVICE/USER"),
        (r#"{"A": {"env": ""}}"#, "`env` is empty"),
    ] {
        let e = parse(text).unwrap_err();
        assert!(e.contains(says), "{text}: {e}");
    }
}

#[cfg(unix)]
#[test]
fn a_file_must_be_private_bounded_and_text() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("key");
    std::fs::write(&p, "s3cr3t-value\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let src = SecretSource::File("key".into()).anchored(dir.path());
    let e = src.resolve().unwrap_err();
    assert!(
        matches!(e, SecretError::NotPrivate { mode: 0o644, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("chmod 600"), "{e}");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(src.resolve().unwrap().expose(), "s3cr3t-value");

    std::fs::write(&p, vec![b'a'; MAX_SECRET_BYTES + 1]).unwrap();
    assert!(matches!(src.resolve(), Err(SecretError::TooLarge { .. })));
    std::fs::write(&p, [0xff, 0xfe]).unwrap();
    assert!(matches!(src.resolve(), Err(SecretError::Unusable { .. })));
    std::fs::write(&p, "").unwrap();
    assert!(matches!(src.resolve(), Err(SecretError::Unusable { .. })));
    let missing = SecretSource::File(dir.path().join("nope"));
    assert!(matches!(missing.resolve(), Err(SecretError::File { .. })));
}

#[test]
fn an_unset_variable_is_named() {
    let e = SecretSource::Env("TOOLHOST_TEST_SURELY_UNSET_VAR".into())
        .resolve()
        .unwrap_err();
    assert!(e.to_string().contains("TOOLHOST_TEST_SURELY_UNSET_VAR"));
    // An empty value written in the file is kept (`FLAG = ""` in an MCP server's env).
    let empty = SecretSource::Value(Secret::new("")).resolve().unwrap();
    assert_eq!(empty.expose(), "");
}

#[test]
fn a_lookup_that_hangs_is_given_up_at_the_deadline() {
    let t0 = std::time::Instant::now();
    let got = within(Duration::from_millis(100), || {
        std::thread::sleep(Duration::from_secs(30));
        1
    });
    assert_eq!(got, None);
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(within(Duration::from_secs(5), || 7), Some(7));
}

#[cfg(not(feature = "keyring"))]
#[test]
fn without_the_feature_a_keyring_source_says_how_to_do_without() {
    let src = SecretSource::Keyring {
        service: "s".into(),
        user: "u".into(),
    };
    let e = src.resolve().unwrap_err();
    assert!(matches!(e, SecretError::KeyringUnsupported { .. }), "{e}");
}

#[test]
fn the_redactor_replaces_exact_values_longest_first_and_skips_short_ones() {
    let r = Redactor::new([
        ("API_KEY", "sk-abcdef123456"),
        ("LONGER", "sk-abcdef123456-and-more"),
        ("REGION", "eu-west"),
    ]);
    assert_eq!(
        r.text("a sk-abcdef123456-and-more b sk-abcdef123456 c eu-west"),
        "a [redacted: LONGER] b [redacted: API_KEY] c eu-west"
    );
    assert!(matches!(
        r.text("nothing here"),
        std::borrow::Cow::Borrowed(_)
    ));
    assert!(Redactor::new([("R", "short")]).is_empty());
    let mut v = json!({"sk-abcdef123456": ["x sk-abcdef123456", 3, {"k": "sk-abcdef123456"}]});
    r.value(&mut v);
    assert_eq!(
        v,
        json!({"[redacted: API_KEY]": ["x [redacted: API_KEY]", 3, {"k": "[redacted: API_KEY]"}]})
    );
}

#[test]
fn the_redactor_covers_outputs_blocks_meta_and_errors() {
    let r = Redactor::new([("K", "topsecret-42")]);
    let mut out = ToolOutput::new(json!({"echo": "topsecret-42"}), "got topsecret-42");
    out.content = vec![ContentBlock::text("block topsecret-42")];
    let meta = json!({"ui": {"state": "topsecret-42"}});
    let out = r.output(out.with_meta(meta.as_object().cloned()));
    assert_eq!(
        out.meta.clone().map(serde_json::Value::Object),
        Some(json!({"ui": {"state": "[redacted: K]"}}))
    );
    let all = serde_json::to_string(&out).unwrap();
    assert!(!all.contains("topsecret-42"), "{all}");
    assert_eq!(out.render, "got [redacted: K]");
    let e = r.error(ToolError::failed("t", "bad key topsecret-42"));
    assert!(!e.to_string().contains("topsecret-42"), "{e}");
    assert!(e.to_string().contains("[redacted: K]"), "{e}");
}

#[cfg(all(feature = "keyring", target_os = "linux"))]
#[test]
fn a_keyring_entry_is_read_and_a_missing_one_is_named() {
    let service = format!("toolhost-test-{}", std::process::id());
    let entry = keyring::Entry::new(&service, "api").unwrap();
    if let Err(e) = entry.set_password("from-the-kernel-keyring") {
        eprintln!("no kernel keyring here ({e}): checking the error instead");
        // A kernel without keyutils (or a seccomp filter refusing keyctl) is a machine
        // with no keyring service: the source must say so.
        let src = SecretSource::Keyring {
            service: service.clone(),
            user: "api".into(),
        };
        let got = src.resolve().unwrap_err();
        assert!(matches!(got, SecretError::Keyring { .. }), "{e}: {got}");
        return;
    }
    let src = SecretSource::Keyring {
        service: service.clone(),
        user: "api".into(),
    };
    assert_eq!(src.resolve().unwrap().expose(), "from-the-kernel-keyring");
    entry.delete_credential().unwrap();
    let e = src.resolve().unwrap_err();
    assert!(e.to_string().contains("no such entry"), "{e}");
}
