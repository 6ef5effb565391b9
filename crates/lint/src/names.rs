//! The name rules: can a model (or the operator) tell the tools apart?
//!
//! - `name-invalid` ([`check_one`]): the name is outside `^[a-zA-Z0-9_-]{1,64}$`; the
//!   registry refuses a plugin tool so named and renames an MCP tool.
//! - `name-duplicate`: the same name comes from two sources, or twice from one. The
//!   registry then offers both as `SOURCE__NAME`, and a plugin whose file sorts first
//!   may be squatting a well-known tool's name.
//! - `name-confusable`: two different names with the same *fold*: the UTS #39 confusable
//!   skeleton (from `unicode-security`: `0`/`O`, `1`/`l`/`I`, Cyrillic `а`/Latin `a`,
//!   fullwidth forms ...), lowercased, `-` read as `_`. Such names look alike to a reader.
//! - `name-similar`: names of different sources whose folds are one edit apart
//!   (optimal string alignment distance 1: one character inserted, deleted, replaced or
//!   two neighbours swapped), both folds at least [`MIN_SIMILAR_CHARS`] long (shorter
//!   names are legitimately close: `add`/`and`). Names of one source are allowed to be
//!   close (`read_file`, `read_files`).
//!
//! Comparing every pair would be quadratic in the number of tools (an MCP server may
//! list 10 000), so candidates for `name-similar` come from a deletion neighbourhood: two
//! strings one edit apart share a key among "the string" and "the string with one
//! character deleted". At most [`MAX_SIMILAR_PAIRS`] candidate pairs are checked.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::text::excerpt;
use super::{Finding, Rule, Subject};
use toolhost_core::tools::is_valid_tool_name;

/// Folds shorter than this (in characters) are never `name-similar`.
pub const MIN_SIMILAR_CHARS: usize = 4;

/// Folds longer than this (in characters) are not compared for `name-similar`.
pub const MAX_SIMILAR_CHARS: usize = 64;

/// At most this many candidate pairs are checked for `name-similar`.
pub const MAX_SIMILAR_PAIRS: usize = 250_000;

/// The fold of a name (see the module docs).
pub fn fold(name: &str) -> String {
    unicode_security::skeleton(name)
        .collect::<String>()
        .to_lowercase()
        .replace('-', "_")
}

/// `name-invalid` for one subject.
pub fn check_one(subject: &Subject) -> Option<Finding> {
    let name = &subject.definition.name;
    (!is_valid_tool_name(name)).then(|| {
        Finding::new(
            Rule::NameInvalid,
            subject,
            "name",
            format!(
                "the name \"{}\" is not ^[a-zA-Z0-9_-]{{1,64}}$",
                excerpt(name)
            ),
        )
    })
}

/// "NAME (of SOURCE)" for a message.
fn shown(s: &Subject) -> String {
    format!(
        "{} (of {})",
        excerpt(&s.definition.name),
        excerpt(&s.source)
    )
}

/// At most five items, then how many more.
fn listed(items: &BTreeSet<String>) -> String {
    let mut out: Vec<&str> = items.iter().take(5).map(String::as_str).collect();
    let extra = items.len().saturating_sub(5);
    let more = format!("{extra} more");
    if extra > 0 {
        out.push(&more);
    }
    out.join(", ")
}

/// The set-wide name rules over every subject of a load (see the module docs).
pub fn check(subjects: &[Subject]) -> Vec<Finding> {
    let mut out = Vec::new();
    // Duplicates: the same name more than once.
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in subjects.iter().enumerate() {
        by_name.entry(&s.definition.name).or_default().push(i);
    }
    for members in by_name.values().filter(|m| m.len() > 1) {
        for &i in members {
            let others: BTreeSet<String> = members
                .iter()
                .filter(|&&j| j != i)
                .filter_map(|&j| subjects.get(j))
                .map(|s| excerpt(&s.source))
                .collect();
            if let Some(s) = subjects.get(i) {
                out.push(Finding::new(
                    Rule::NameDuplicate,
                    s,
                    "name",
                    format!("also offered by {}", listed(&others)),
                ));
            }
        }
    }
    // Confusables: different names, one fold.
    let folds: Vec<String> = subjects.iter().map(|s| fold(&s.definition.name)).collect();
    let mut by_fold: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in folds.iter().enumerate() {
        by_fold.entry(f).or_default().push(i);
    }
    for members in by_fold.values().filter(|m| m.len() > 1) {
        for &i in members {
            let Some(s) = subjects.get(i) else { continue };
            let others: BTreeSet<String> = members
                .iter()
                .filter_map(|&j| subjects.get(j))
                .filter(|o| o.definition.name != s.definition.name)
                .map(shown)
                .collect();
            if !others.is_empty() {
                out.push(Finding::new(
                    Rule::NameConfusable,
                    s,
                    "name",
                    format!("looks like {}", listed(&others)),
                ));
            }
        }
    }
    out.extend(similar(subjects, &by_fold));
    out
}

/// `name-similar` (see the module docs); `by_fold` groups the subjects by fold. Buckets
/// are visited in key order, so which pairs fit in [`MAX_SIMILAR_PAIRS`] never depends on
/// hashing.
fn similar(subjects: &[Subject], by_fold: &HashMap<&str, Vec<usize>>) -> Vec<Finding> {
    let mut folds: Vec<&str> = by_fold
        .keys()
        .copied()
        .filter(|f| (MIN_SIMILAR_CHARS..=MAX_SIMILAR_CHARS).contains(&f.chars().count()))
        .collect();
    folds.sort_unstable();
    // Deletion-neighbourhood key -> the folds (indices into `folds`) that have it.
    let mut keys: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for (k, f) in folds.iter().enumerate() {
        keys.entry((*f).to_string()).or_default().insert(k);
        let chars: Vec<char> = f.chars().collect();
        for skip in 0..chars.len() {
            let key: String = chars
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, c)| c)
                .collect();
            keys.entry(key).or_default().insert(k);
        }
    }
    // Subject index -> up to six names of other sources one edit away.
    let mut near: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    let mut checked = BTreeSet::new();
    'buckets: for bucket in keys.values().filter(|b| b.len() > 1) {
        for (x, &a) in bucket.iter().enumerate() {
            for &b in bucket.iter().skip(x + 1) {
                if checked.len() >= MAX_SIMILAR_PAIRS {
                    break 'buckets;
                }
                if !checked.insert((a, b)) {
                    continue;
                }
                let (Some(fa), Some(fb)) = (folds.get(a), folds.get(b)) else {
                    continue;
                };
                if strsim::osa_distance(fa, fb) != 1 {
                    continue;
                }
                let (Some(xs), Some(ys)) = (by_fold.get(fa), by_fold.get(fb)) else {
                    continue;
                };
                for &x in xs {
                    for &y in ys {
                        let (Some(sx), Some(sy)) = (subjects.get(x), subjects.get(y)) else {
                            continue;
                        };
                        if sx.source == sy.source {
                            continue;
                        }
                        for (at, other) in [(x, sy), (y, sx)] {
                            let set = near.entry(at).or_default();
                            if set.len() < 6 {
                                set.insert(shown(other));
                            }
                        }
                    }
                }
            }
        }
    }
    near.into_iter()
        .filter_map(|(i, others)| {
            let s = subjects.get(i)?;
            let mut names: Vec<&str> = others.iter().take(5).map(String::as_str).collect();
            if others.len() > 5 {
                names.push("and more");
            }
            Some(Finding::new(
                Rule::NameSimilar,
                s,
                "name",
                format!("one edit from {}", names.join(", ")),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::clean;
    use super::super::{Rule, lint};
    use super::*;

    fn tool(source: &str, name: &str) -> Subject {
        let mut s = clean();
        s.source = source.into();
        s.definition.name = name.into();
        s
    }

    fn found(subjects: &[Subject]) -> Vec<(Rule, String, String, String)> {
        lint(subjects)
            .into_iter()
            .map(|f| (f.rule, f.source, f.tool, f.message))
            .collect()
    }

    fn f(rule: Rule, source: &str, tool: &str, message: &str) -> (Rule, String, String, String) {
        (rule, source.into(), tool.into(), message.into())
    }

    #[test]
    fn folds_see_through_lookalikes() {
        assert_eq!(fold("read_fi1e"), fold("read_file"));
        assert_eq!(fold("Read-File"), fold("read_file"));
        assert_eq!(fold("\u{0430}dd"), fold("add"));
        assert_eq!(fold("l0g"), fold("lOg"));
        assert_ne!(fold("add"), fold("and"));
    }

    #[test]
    fn the_same_name_from_two_sources_is_a_duplicate() {
        assert_eq!(
            found(&[tool("plugin:calc", "add"), tool("plugin:aaa_shadow", "add")]),
            vec![
                f(
                    Rule::NameDuplicate,
                    "plugin:aaa_shadow",
                    "add",
                    "also offered by plugin:calc"
                ),
                f(
                    Rule::NameDuplicate,
                    "plugin:calc",
                    "add",
                    "also offered by plugin:aaa_shadow"
                ),
            ]
        );
    }

    #[test]
    fn lookalike_names_are_confusable_anywhere() {
        assert_eq!(
            found(&[
                tool("plugin:files", "read_file"),
                tool("mcp:evil", "read_fi1e")
            ]),
            vec![
                f(
                    Rule::NameConfusable,
                    "mcp:evil",
                    "read_fi1e",
                    "looks like read_file (of plugin:files)"
                ),
                f(
                    Rule::NameConfusable,
                    "plugin:files",
                    "read_file",
                    "looks like read_fi1e (of mcp:evil)"
                ),
            ]
        );
        // Within one source too, and a homoglyph name is also invalid.
        let got = found(&[tool("mcp:x", "add"), tool("mcp:x", "\u{0430}dd")]);
        let rules: Vec<Rule> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            rules,
            vec![
                Rule::NameConfusable,
                Rule::NameConfusable,
                Rule::NameInvalid
            ],
            "{got:?}"
        );
    }

    #[test]
    fn names_one_edit_apart_across_sources_are_similar() {
        assert_eq!(
            found(&[
                tool("plugin:files", "read_file"),
                tool("mcp:fs", "read_files")
            ]),
            vec![
                f(
                    Rule::NameSimilar,
                    "mcp:fs",
                    "read_files",
                    "one edit from read_file (of plugin:files)"
                ),
                f(
                    Rule::NameSimilar,
                    "plugin:files",
                    "read_file",
                    "one edit from read_files (of mcp:fs)"
                ),
            ]
        );
        assert_eq!(
            found(&[tool("plugin:m", "send_mial"), tool("mcp:m", "send_mail")]).len(),
            2
        );
        // One source may have close names; short names are legitimately close.
        assert_eq!(
            found(&[
                tool("plugin:files", "read_file"),
                tool("plugin:files", "read_files")
            ]),
            vec![]
        );
        assert_eq!(
            found(&[tool("plugin:a", "add"), tool("mcp:b", "and")]),
            vec![]
        );
        assert_eq!(
            found(&[
                tool("plugin:a", "c_add"),
                tool("mcp:b", "js_add"),
                tool("mcp:c", "py_add")
            ]),
            vec![]
        );
    }

    #[test]
    fn many_names_are_compared_without_comparing_every_pair() {
        let subjects: Vec<Subject> = (0..5000)
            .map(|i| tool(&format!("mcp:s{}", i % 2), &format!("tool_{i:05}")))
            .collect();
        let started = std::time::Instant::now();
        let got = check(&subjects);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        // tool_00000 (s0) and tool_00001 (s1) are one edit apart: similar, across sources.
        assert!(
            got.iter()
                .any(|g| g.rule == Rule::NameSimilar && g.tool == "tool_00000"),
            "{:?}",
            got.first()
        );
    }
}
