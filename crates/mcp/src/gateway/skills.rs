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
}
