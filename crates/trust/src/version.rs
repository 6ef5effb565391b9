//! Release versions in the trust decision: how an offered package's version stands to the
//! approved one. One function, [`compare`], decides for every route (the plugins folder,
//! live reload, `install`, `update`, `approve`), so a rollback is refused the same way
//! wherever it comes from (docs/trust.md, "Rollback and freeze").
//!
//! Versions are ordered by semantic-versioning *precedence*: pre-releases before their
//! release (`2.0.0-rc.1 < 2.0.0`), build metadata ignored (`1.0.0+a` and `1.0.0+b` are the
//! same version, so two different files under them are "the same version, another
//! digest"). Only a version covered by a verified signature counts; an unsigned file is
//! unversioned whatever its metadata says.

use std::cmp::Ordering;
use std::fmt;

pub use semver::Version;

/// How an offered package's version stands to the approved one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionChange {
    /// Neither is versioned.
    Unversioned,
    /// The approval was unversioned; the offered package is versioned (it may replace it
    /// under the other rules, and its version is recorded from then on).
    First(Version),
    /// Newer than the approved version.
    Upgrade {
        /// The approved version.
        from: Version,
        /// The offered version.
        to: Version,
    },
    /// The same version (by precedence).
    Same(Version),
    /// Older than the approved version: a rollback.
    Downgrade {
        /// The approved version.
        from: Version,
        /// The offered version.
        to: Version,
    },
    /// The approval was versioned and the offered package is not (unsigned, signed the
    /// old way, or its statement has no version): its age is unknown.
    Lost(Version),
}

impl VersionChange {
    /// Whether a package with this change may replace a different approved file without
    /// the operator's explicit word (`--allow-downgrade`): only an upgrade, a first
    /// version, or a change between unversioned files (decided by the other rules).
    pub fn may_replace(&self) -> bool {
        matches!(
            self,
            VersionChange::Unversioned | VersionChange::First(_) | VersionChange::Upgrade { .. }
        )
    }

    /// Why a package with this change is held when it replaces a different approved
    /// file, `None` when it [`may_replace`](Self::may_replace) it.
    pub fn refusal(&self) -> Option<String> {
        match self {
            VersionChange::Downgrade { from, to } => Some(format!(
                "version {to} is older than the approved {from} (a downgrade: {from} → {to})"
            )),
            VersionChange::Same(v) => Some(format!(
                "it is version {v}, the approved version, but another file (the same \
                 version with another digest)"
            )),
            VersionChange::Lost(v) => Some(format!(
                "it carries no signed version and the approved release is {v} (an \
                 unversioned package never replaces a versioned approval: {v} → unversioned)"
            )),
            _ => None,
        }
    }
}

impl fmt::Display for VersionChange {
    /// `1.0.0 → 2.0.0`, `unversioned → 1.0.0`, `2.0.0 (same)`, `unversioned`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionChange::Unversioned => write!(f, "unversioned"),
            VersionChange::First(to) => write!(f, "unversioned → {to}"),
            VersionChange::Upgrade { from, to } => write!(f, "{from} → {to}"),
            VersionChange::Same(v) => write!(f, "{v} → {v}"),
            VersionChange::Downgrade { from, to } => write!(f, "{from} → {to} (older)"),
            VersionChange::Lost(from) => write!(f, "{from} → unversioned"),
        }
    }
}

/// How `offered` stands to `approved` (either may be absent: unversioned).
pub fn compare(approved: Option<&Version>, offered: Option<&Version>) -> VersionChange {
    match (approved, offered) {
        (None, None) => VersionChange::Unversioned,
        (None, Some(to)) => VersionChange::First(to.clone()),
        (Some(from), None) => VersionChange::Lost(from.clone()),
        (Some(from), Some(to)) => match to.cmp_precedence(from) {
            Ordering::Greater => VersionChange::Upgrade {
                from: from.clone(),
                to: to.clone(),
            },
            Ordering::Equal => VersionChange::Same(to.clone()),
            Ordering::Less => VersionChange::Downgrade {
                from: from.clone(),
                to: to.clone(),
            },
        },
    }
}

/// A version as the operator reads it: the version, or `unversioned`.
pub fn shown(v: Option<&Version>) -> String {
    v.map_or_else(|| "unversioned".to_string(), Version::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn precedence_orders_pre_releases_and_ignores_build_metadata() {
        let up = |a: &str, b: &str| compare(Some(&v(a)), Some(&v(b)));
        assert!(matches!(
            up("1.0.0", "1.0.1"),
            VersionChange::Upgrade { .. }
        ));
        assert!(matches!(
            up("1.9.0", "1.10.0"),
            VersionChange::Upgrade { .. }
        ));
        assert!(matches!(
            up("2.0.0-rc.1", "2.0.0"),
            VersionChange::Upgrade { .. }
        ));
        assert!(matches!(
            up("2.0.0-alpha", "2.0.0-alpha.1"),
            VersionChange::Upgrade { .. }
        ));
        assert!(matches!(
            up("2.0.0-alpha.2", "2.0.0-alpha.10"),
            VersionChange::Upgrade { .. }
        ));
        assert!(matches!(
            up("2.0.0", "2.0.0-rc.1"),
            VersionChange::Downgrade { .. }
        ));
        assert!(matches!(
            up("2.0.0", "1.99.99"),
            VersionChange::Downgrade { .. }
        ));
        assert_eq!(up("1.0.0+a", "1.0.0+b"), VersionChange::Same(v("1.0.0+b")));
        assert_eq!(compare(None, None), VersionChange::Unversioned);
        assert_eq!(
            compare(None, Some(&v("1.0.0"))),
            VersionChange::First(v("1.0.0"))
        );
        assert_eq!(
            compare(Some(&v("1.0.0")), None),
            VersionChange::Lost(v("1.0.0"))
        );
    }

    #[test]
    fn only_newer_or_first_versions_replace_without_the_operator() {
        let all = [
            compare(None, None),
            compare(None, Some(&v("1.0.0"))),
            compare(Some(&v("1.0.0")), Some(&v("2.0.0"))),
            compare(Some(&v("1.0.0")), Some(&v("1.0.0"))),
            compare(Some(&v("2.0.0")), Some(&v("1.0.0"))),
            compare(Some(&v("1.0.0")), None),
        ];
        let may: Vec<bool> = all.iter().map(VersionChange::may_replace).collect();
        assert_eq!(may, [true, true, true, false, false, false]);
        for c in &all {
            assert_eq!(c.refusal().is_none(), c.may_replace(), "{c:?}");
        }
        let down = compare(Some(&v("2.0.0")), Some(&v("1.0.0")));
        let why = down.refusal().unwrap_or_default();
        assert!(why.contains("2.0.0 → 1.0.0"), "{why}");
        assert_eq!(down.to_string(), "2.0.0 → 1.0.0 (older)");
    }

    fn version() -> impl Strategy<Value = Version> {
        // Pre-release and build identifiers from small alphabets, so that equal and
        // neighbouring versions come up often.
        let pre = prop_oneof![
            Just(String::new()),
            (0usize..3).prop_map(|i| ["alpha", "beta", "rc"][i].to_string()),
            (0usize..3, 0u64..12).prop_map(|(i, n)| format!("{}.{n}", ["alpha", "beta", "rc"][i])),
        ];
        let build = prop_oneof![
            Just(String::new()),
            (0usize..3).prop_map(|i| ["a", "b7", "ci.9"][i].to_string()),
        ];
        (0u64..4, 0u64..4, 0u64..4, pre, build).prop_map(|(a, b, c, pre, build)| {
            let mut s = format!("{a}.{b}.{c}");
            if !pre.is_empty() {
                s = format!("{s}-{pre}");
            }
            if !build.is_empty() {
                s = format!("{s}+{build}");
            }
            v(&s)
        })
    }

    proptest! {
        /// The order is total and antisymmetric: exactly one of a→b and b→a is an
        /// upgrade unless they are the same version; build metadata never matters.
        #[test]
        fn the_order_is_antisymmetric(a in version(), b in version()) {
            let ab = compare(Some(&a), Some(&b));
            let ba = compare(Some(&b), Some(&a));
            match (&ab, &ba) {
                (VersionChange::Upgrade { .. }, VersionChange::Downgrade { .. })
                | (VersionChange::Downgrade { .. }, VersionChange::Upgrade { .. })
                | (VersionChange::Same(_), VersionChange::Same(_)) => {}
                other => prop_assert!(false, "{a} / {b}: {other:?}"),
            }
            let mut a_nobuild = a.clone();
            a_nobuild.build = semver::BuildMetadata::EMPTY;
            prop_assert_eq!(
                std::mem::discriminant(&compare(Some(&a_nobuild), Some(&b))),
                std::mem::discriminant(&ab)
            );
            // A rollback is never accepted without the operator.
            if matches!(ab, VersionChange::Downgrade { .. } | VersionChange::Same(_)) {
                prop_assert!(!ab.may_replace());
            }
        }

        /// Transitivity: if a < b and b < c then a < c.
        #[test]
        fn the_order_is_transitive(a in version(), b in version(), c in version()) {
            let up = |x: &Version, y: &Version| matches!(compare(Some(x), Some(y)), VersionChange::Upgrade { .. });
            if up(&a, &b) && up(&b, &c) {
                prop_assert!(up(&a, &c), "{a} < {b} < {c}");
            }
        }
    }
}
