//! How the gateway names what several wrapped servers offer, and finds the server again.
//!
//! Both follow the registry's one naming rule (docs/design.md, "One naming rule"), decided
//! on the set of servers, never on their order or names:
//!
//! - **Prompts**: a name one server offers is served as it is; a name two or more servers
//!   offer is `server__name` for **each** of them.
//! - **Resource URIs and templates** are kept unchanged, so a client that knows a server's
//!   URIs reads them through toolhost as it would directly. A URI (or template) that two
//!   or more servers list is renamed for each of them, to `toolhost://SERVER/ORIGINAL`;
//!   that form always routes to SERVER, listed or not.
//! - A URI nobody listed goes to the first server with a template that matches it (RFC 6570
//!   expressions, matched leniently), else to the only server that offers resources.

/// The prefix of a URI renamed because another server lists the same one.
pub const ROUTED_PREFIX: &str = "toolhost://";

/// The most expressions a template may have to be matched (more: it never matches).
const MAX_TEMPLATE_VARS: usize = 32;

/// The URI under which `server`'s `uri` is served when another server lists it too.
pub fn routed_uri(server: &str, uri: &str) -> String {
    format!("{ROUTED_PREFIX}{server}/{uri}")
}

/// `(server, original uri)` of a `toolhost://SERVER/ORIGINAL` URI whose SERVER is one of
/// `servers`.
pub fn split_routed<'a>(uri: &'a str, servers: &[&str]) -> Option<(String, &'a str)> {
    let rest = uri.strip_prefix(ROUTED_PREFIX)?;
    let (server, original) = rest.split_once('/')?;
    servers
        .contains(&server)
        .then(|| (server.to_string(), original))
}

/// The prompt name served for `server`'s `name` when another server offers it too.
pub fn prefixed_name(server: &str, name: &str) -> String {
    format!("{server}{}{name}", toolhost_core::tools::QUALIFIER)
}

#[derive(Debug, PartialEq)]
enum Part<'a> {
    Lit(&'a str),
    /// An expression; `true` when its values may contain `/` (`{+x}`, `{#x}`, `{/x}`...).
    Var(bool),
}

fn parse(template: &str) -> Option<Vec<Part<'_>>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find('{') {
            Some(0) => {
                let end = rest.find('}')?;
                let op = rest[1..end].chars().next();
                parts.push(Part::Var(matches!(
                    op,
                    Some('+' | '#' | '/' | '.' | ';' | '?' | '&')
                )));
                rest = &rest[end + 1..];
            }
            Some(i) => {
                parts.push(Part::Lit(&rest[..i]));
                rest = &rest[i..];
            }
            None => {
                parts.push(Part::Lit(rest));
                rest = "";
            }
        }
    }
    let vars = parts.iter().filter(|p| matches!(p, Part::Var(_))).count();
    (vars <= MAX_TEMPLATE_VARS).then_some(parts)
}

/// Whether `uri` is an expansion of the RFC 6570 `template`. Simple expressions match one
/// or more characters other than `/`, `?` and `#`; reserved and path-style ones match any.
/// Linear in the URI's length per template part (a set of reachable positions, no
/// backtracking), so a hostile template cannot make it slow.
pub fn template_matches(template: &str, uri: &str) -> bool {
    let Some(parts) = parse(template) else {
        return false;
    };
    let bytes = uri.as_bytes();
    let n = bytes.len();
    let mut reach = vec![false; n + 1];
    reach[0] = true;
    for part in parts {
        let mut next = vec![false; n + 1];
        match part {
            Part::Lit(lit) => {
                for p in 0..=n {
                    if reach[p] && bytes[p..].starts_with(lit.as_bytes()) {
                        next[p + lit.len()] = true;
                    }
                }
            }
            Part::Var(any) => {
                // q is reachable if some reachable p < q has only allowed bytes in p..q.
                let mut run = false;
                for q in 1..=n {
                    let ok = any || !matches!(bytes[q - 1], b'/' | b'?' | b'#');
                    run = ok && (run || reach[q - 1]);
                    next[q] = run;
                }
            }
        }
        reach = next;
    }
    reach[n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_their_expansions_only() {
        let t = "test://template/{id}/data";
        assert!(template_matches(t, "test://template/123/data"));
        assert!(!template_matches(t, "test://template//data"));
        assert!(!template_matches(t, "test://template/1/2/data"));
        assert!(!template_matches(t, "test://template/123/datax"));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("x://{a}{b}", "x://ab"));
        assert!(!template_matches("x://{a}{b}", "x://a"));
        assert!(template_matches("plain://no-vars", "plain://no-vars"));
        assert!(!template_matches("broken://{id", "broken://{id"));
        // Many expressions and a long URI: still linear, and too many never match.
        let many = "{a}".repeat(MAX_TEMPLATE_VARS + 1);
        assert!(!template_matches(&many, &"x".repeat(100)));
        let long = "y".repeat(100_000);
        assert!(template_matches(&"{a}-".repeat(30), &"z-".repeat(30)));
        assert!(!template_matches(&"{a}-".repeat(30), &long));
    }

    #[test]
    fn routed_uris_round_trip() {
        let u = routed_uri("two", "test://static-text");
        assert_eq!(u, "toolhost://two/test://static-text");
        assert_eq!(
            split_routed(&u, &["one", "two"]),
            Some(("two".to_string(), "test://static-text"))
        );
        assert_eq!(split_routed(&u, &["one"]), None);
        assert_eq!(split_routed("test://x", &["two"]), None);
        assert_eq!(prefixed_name("s", "p"), "s__p");
    }
}
