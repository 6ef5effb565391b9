//! The wrapped servers' skills (the Skills extension), passed through the gateway: the
//! entries of every server that declares the extension, as the server wrote them, and
//! its skill files read under the URIs the entries name.
//!
//! What a server sends is bounded first: at most [`MAX_SKILLS_PER_SERVER`] entries, each
//! a valid entry (rmcp's `Skill::validate`: the URI ends in the frontmatter's name and
//! `SKILL.md`, digests are sha256) of at most the extension's 512 files and of at most
//! [`MAX_ENTRY_BYTES`] of JSON. A skill URI two servers both serve is passed from neither
//! (a skill is the pair of its server and its URI, and one URI cannot name two things to
//! a client), with a warning. Digests are passed unchanged: the client verifies what it
//! reads against them, through the gateway.

use std::collections::{BTreeSet, HashMap};

use rmcp::model::{Skill, SkillResources};

use super::Gateway;
use crate::client::UpstreamInfo;

/// Most skills passed from one server.
pub const MAX_SKILLS_PER_SERVER: usize = 256;
/// Largest entry passed, as JSON.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024;

/// Whether `skill` from `server` may pass; logs why not.
fn bounded(server: &str, skill: &Skill) -> bool {
    let why = if let Err(e) = skill.validate() {
        Some(e.to_string())
    } else if matches!(&skill.resources, SkillResources::Files(f) if f.len() > crate::skills::MAX_FILES)
    {
        Some(format!("more than {} files", crate::skills::MAX_FILES))
    } else if serde_json::to_vec(skill).map_or(usize::MAX, |v| v.len()) > MAX_ENTRY_BYTES {
        Some(format!("an entry of more than {MAX_ENTRY_BYTES} bytes"))
    } else {
        None
    };
    if let Some(why) = &why {
        tracing::warn!(
            server = %server,
            "gateway: a skill of server {server} is not passed on: {}",
            toolhost_core::tools::escape::escape_line(why)
        );
    }
    why.is_none()
}

/// The URIs of a skill: its `SKILL.md` and every file its entry names.
fn uris(skill: &Skill) -> Vec<String> {
    let mut out = vec![skill.uri.clone()];
    if let SkillResources::Files(files) = &skill.resources {
        out.extend(files.iter().map(|f| f.uri.clone()));
    }
    out
}

impl Gateway {
    /// Every wrapped server's skills (bounded, uncontested; see the module docs), and
    /// the route of each of their URIs for `resources/read` and `skills/get`.
    pub async fn list_skills(&self) -> Vec<Skill> {
        let lists = self
            .lists(
                UpstreamInfo::skills,
                |c| async move { c.list_skills().await },
            )
            .await;
        let mut claimed: HashMap<String, BTreeSet<String>> = HashMap::new();
        let mut kept: Vec<(String, Skill)> = Vec::new();
        for (server, list) in lists {
            for skill in list.into_iter().take(MAX_SKILLS_PER_SERVER) {
                if bounded(&server, &skill) {
                    claimed
                        .entry(skill.uri.clone())
                        .or_default()
                        .insert(server.clone());
                    kept.push((server.clone(), skill));
                }
            }
        }
        let mut table = HashMap::new();
        let mut out = Vec::new();
        for (server, skill) in kept {
            if claimed.get(&skill.uri).is_some_and(|s| s.len() > 1) {
                tracing::warn!(
                    "gateway: skill {} is served by more than one server; passed from none",
                    toolhost_core::tools::escape::escape_line(&skill.uri)
                );
                continue;
            }
            for uri in uris(&skill) {
                table.entry(uri).or_insert_with(|| server.clone());
            }
            out.push(skill);
        }
        self.inner
            .routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .skills = table;
        out
    }

    /// The entry of the skill at `uri`, from the server whose listing named it (or the
    /// first server in name order that answers for it); `None` when no wrapped server
    /// serves it.
    pub async fn get_skill(&self, uri: &str) -> Option<Skill> {
        let listed = {
            let routes = self.inner.routes.read().unwrap_or_else(|e| e.into_inner());
            routes.skills.get(uri).cloned()
        };
        let mut ups: Vec<_> = self
            .upstreams()
            .into_iter()
            .filter(|u| u.info.skills())
            .collect();
        ups.sort_by(|a, b| {
            let first = |u: &super::Upstream| Some(u.name()) != listed.as_deref();
            (first(a), a.name()).cmp(&(first(b), b.name()))
        });
        for u in ups {
            match u.client.get_skill(uri).await {
                Ok(skill) if skill.uri == uri && bounded(u.name(), &skill) => {
                    let server = u.name().to_string();
                    let mut routes = self.inner.routes.write().unwrap_or_else(|e| e.into_inner());
                    for f in uris(&skill) {
                        routes.skills.entry(f).or_insert_with(|| server.clone());
                    }
                    return Some(skill);
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(server = %u.name(), "gateway: skills/get: {e}"),
            }
        }
        None
    }

    /// Whether a wrapped server offers skills.
    pub fn offers_skills(&self) -> bool {
        self.upstreams().iter().any(|u| u.info.skills())
    }

    /// Whether a wrapped server offers skills and answers `resources/directory/read`.
    pub fn offers_directory_read(&self) -> bool {
        self.upstreams()
            .iter()
            .any(|u| u.info.skills() && u.info.directory_read())
    }

    /// `resources/directory/read` of `dir`, a folder of a wrapped server's skill: asked
    /// of the server that serves the files under it (the skills are listed again first
    /// when none is known yet). `None` when no wrapped server's skill holds it; a
    /// server's error otherwise. The children passed are those directly under `dir`
    /// (see [`children_of`]), at most the extension's 512.
    pub async fn read_skill_directory(
        &self,
        dir: &str,
    ) -> Option<Result<Vec<rmcp::model::Resource>, crate::client::UpstreamError>> {
        let server = match self.skill_server_of(dir) {
            Some(s) => s,
            None => {
                self.list_skills().await;
                self.skill_server_of(dir)?
            }
        };
        let upstream = self.upstreams().into_iter().find(|u| u.name() == server)?;
        let got = match upstream.client.read_resource_directory(dir).await {
            Ok(got) => got,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(children_of(&server, dir, got)))
    }

    /// The server whose skill holds a file under the folder `dir`.
    fn skill_server_of(&self, dir: &str) -> Option<String> {
        let under = under(dir);
        let routes = self.inner.routes.read().unwrap_or_else(|e| e.into_inner());
        routes
            .skills
            .iter()
            .find(|(uri, _)| uri.starts_with(&under))
            .map(|(_, server)| server.clone())
    }
}

/// The prefix of every URI under the folder `dir` (`dir/`, whether or not `dir` ends in
/// `/`).
fn under(dir: &str) -> String {
    format!("{}/", dir.trim_end_matches('/'))
}

/// Of what `server` answered for the folder `dir`: the entries directly under it (a URI
/// of `dir/NAME`, no further `/`), at most the extension's file bound, each `_meta`
/// bounded as in a resource list; any other entry
/// (elsewhere, deeper, another scheme) is left out with a warning, so a server cannot
/// list another skill's or server's URIs as its folder's.
pub(crate) fn children_of(
    server: &str,
    dir: &str,
    got: Vec<rmcp::model::Resource>,
) -> Vec<rmcp::model::Resource> {
    let under = under(dir);
    let total = got.len();
    let kept: Vec<_> = got
        .into_iter()
        .filter(|r| {
            r.uri
                .strip_prefix(&under)
                .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'))
        })
        .take(crate::skills::MAX_FILES)
        .map(|mut r| {
            // Their `_meta` passes bounded, as a resource list's does.
            let uri = r.uri.clone();
            r.meta = crate::meta::meta_object(r.meta.take(), || format!("{server}/{uri}"));
            r
        })
        .collect();
    if kept.len() < total {
        tracing::warn!(
            server = %server,
            "gateway: {} of the {total} entries server {server} listed in {} are not \
             directly under it (or beyond {}); left out",
            total - kept.len(),
            toolhost_core::tools::escape::escape_line(dir),
            crate::skills::MAX_FILES
        );
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_passes_only_the_entries_directly_under_it() {
        let r = |uri: &str| rmcp::model::Resource::new(uri, "x");
        let got = vec![
            r("skill://a/refs/x.md"),
            r("skill://a/refs/deep"),
            r("skill://a/refs/deep/y.md"),
            r("skill://b/SKILL.md"),
            r("file:///etc/passwd"),
            r("skill://a/refs/"),
            r("skill://a/refsx/z.md"),
        ];
        let kept: Vec<String> = children_of("s", "skill://a/refs", got)
            .into_iter()
            .map(|r| r.uri)
            .collect();
        assert_eq!(kept, ["skill://a/refs/x.md", "skill://a/refs/deep"]);
        // A `_meta` of 10,000 keys is not passed on.
        let mut fat = r("skill://a/refs/fat.md");
        let keys: serde_json::Map<String, serde_json::Value> = (0..10_000)
            .map(|i| (format!("k{i}"), serde_json::json!(i)))
            .collect();
        fat.meta = Some(rmcp::model::MetaObject(keys));
        let kept = children_of("s", "skill://a/refs", vec![fat]);
        assert_eq!(kept.len(), 1);
        assert!(
            kept[0].meta.is_none(),
            "{:?}",
            kept[0].meta.as_ref().map(|m| m.0.len())
        );
        let many = (0..600).map(|i| r(&format!("skill://a/f{i}"))).collect();
        assert_eq!(
            children_of("s", "skill://a", many).len(),
            crate::skills::MAX_FILES
        );
    }
}
