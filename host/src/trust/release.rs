//! How `approve`, `install`, `update` and the console show a package against its approval: the release
//! version (`approved → offered`) and the signer (`old key → new key`), and what the one
//! release rule of `toolhost_trust::version` refuses. The rule itself lives in
//! `toolhost-trust`, shared with the loader, so every route decides alike (docs/trust.md,
//! "Rollback and freeze").

use std::fmt::Write;

use toolhost_trust::version::{compare, shown};
use toolhost_trust::{PluginEntry, Version};

/// A package reviewed against its lock entry.
#[derive(Debug, Default)]
pub struct Release {
    /// The lines to show (`  version: …`, `  signer change: …`), each ending in `\n`.
    pub text: String,
    /// Why the release may not replace the approved file without `--allow-downgrade`.
    pub refusal: Option<String>,
    /// A signer change: (the recorded signer, the new signer).
    pub signer_change: Option<(String, String)>,
}

/// Reviews a package of component digest `digest`, signed by `signer` as release
/// `version` (both from a verified signature over the package, or `None`), against the
/// lock entry `entry` of its plugin.
pub fn review(
    entry: Option<&PluginEntry>,
    digest: &str,
    signer: Option<&str>,
    version: Option<&Version>,
) -> Release {
    let mut r = Release::default();
    let Some(e) = entry else {
        let _ = writeln!(r.text, "  version: {}", shown(version));
        return r;
    };
    if e.digest == digest {
        let _ = writeln!(
            r.text,
            "  version: {} (as approved)",
            shown(e.version.as_ref())
        );
        return r;
    }
    let change = compare(e.version.as_ref(), version);
    let _ = writeln!(r.text, "  version: {change}");
    r.refusal = change.refusal();
    match (&e.signer, signer) {
        (Some(old), Some(new)) if old != new => {
            let _ = writeln!(r.text, "  signer change: {old} → {new}");
            r.signer_change = Some((old.clone(), new.to_string()));
        }
        (Some(old), None) => {
            let _ = writeln!(r.text, "  signer: {old} → (unsigned)");
        }
        (None, Some(new)) => {
            let _ = writeln!(r.text, "  signer: (unsigned) → {new}");
        }
        _ => {}
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> PluginEntry {
        PluginEntry {
            source: "file:///x.wasm".into(),
            digest: "sha256:old".into(),
            signer: Some("AAAA".into()),
            version: Some(Version::new(2, 0, 0)),
            signature_covers: None,
            approved_at: String::new(),
            grant: toolhost_trust::Capabilities::default(),
            tools: Default::default(),
        }
    }

    #[test]
    fn a_review_shows_both_versions_and_keys_and_refuses_what_is_not_newer() {
        let e = entry();
        let v1 = Version::new(1, 0, 0);
        let r = review(Some(&e), "sha256:new", Some("AAAA"), Some(&v1));
        assert!(r.text.contains("2.0.0 → 1.0.0"), "{}", r.text);
        assert!(r.refusal.is_some());
        let v3 = Version::new(3, 0, 0);
        let r = review(Some(&e), "sha256:new", Some("BBBB"), Some(&v3));
        assert!(r.refusal.is_none(), "{:?}", r.refusal);
        assert_eq!(r.signer_change, Some(("AAAA".into(), "BBBB".into())));
        assert!(r.text.contains("signer change: AAAA → BBBB"), "{}", r.text);
        let r = review(Some(&e), "sha256:old", None, None);
        assert!(r.refusal.is_none() && r.text.contains("2.0.0 (as approved)"));
        let r = review(None, "sha256:new", None, Some(&v1));
        assert!(r.refusal.is_none() && r.text.contains("1.0.0"));
    }
}
