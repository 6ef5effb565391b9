//! The Skills extension on the server side (`io.modelcontextprotocol/skills`; the skills
//! themselves are `crate::skills`): `skills/list` and `skills/get` (rmcp's handler methods
//! and types), the skills' files in `resources/list`, `resources/read` of their
//! `skill://` URIs, and `resources/directory/read` of their folders. Every entry carries
//! the file digests and sizes the extension requires, so a client verifies what it reads.
//!
//! rmcp's own `SkillCatalog` serves a folder from disk as it is; toolhost serves the
//! skills the operator approved, from the bytes read and digested at load
//! (`crate::skills`), so it keeps the protocol types and not the catalog.

use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::JsonObject;
use rmcp::model::{
    CacheScope, DIRECTORY_MIME_TYPE, GetSkillResult, ListSkillsResult, ReadResourceDirectoryResult,
    ReadResourceResult, Resource, Skill,
};
use serde_json::json;

use crate::skills::{DirEntry, SkillSet, TTL_MS, mime_type, uri};

/// A skill's entry as rmcp models it (`skills/list`, `skills/get`).
fn entry(skill: &crate::skills::Skill) -> Result<Skill, ErrorData> {
    serde_json::from_value::<Skill>(skill.entry())
        .map_err(|e| ErrorData::internal_error(format!("skill {}: {e}", skill.name), None))
}

/// `skills/list`: every skill's entry, then the wrapped servers' (`wrapped`), on one
/// page. A wrapped skill at a URI toolhost serves itself is not listed: the URI names
/// toolhost's own.
pub(super) fn list(set: &SkillSet, wrapped: Vec<Skill>) -> Result<ListSkillsResult, ErrorData> {
    let mut skills = set
        .skills()
        .iter()
        .map(|s| entry(s))
        .collect::<Result<Vec<_>, _>>()?;
    skills.extend(wrapped.into_iter().filter(|w| set.by_uri(&w.uri).is_none()));
    Ok(ListSkillsResult::with_all_items(skills)
        .with_ttl_ms(TTL_MS)
        .with_cache_scope(CacheScope::Public))
}

/// `skills/get`: the entry of the skill whose `SKILL.md` is `uri` (toolhost's own, else
/// `wrapped`, a wrapped server's); -32602 (with the URI) for a URI that names no skill
/// served.
pub(super) fn get(
    set: &SkillSet,
    uri: &str,
    wrapped: Option<Skill>,
) -> Result<GetSkillResult, ErrorData> {
    let found = match set.by_uri(uri) {
        Some(s) => Some(entry(s)?),
        None => wrapped,
    };
    match found {
        Some(s) => Ok(GetSkillResult::new(s)
            .with_ttl_ms(TTL_MS)
            .with_cache_scope(CacheScope::Public)),
        None => Err(ErrorData::invalid_params(
            format!("no skill is served at {uri}"),
            Some(json!({ "uri": uri })),
        )),
    }
}

/// The skills' files as resources: each `SKILL.md` with the skill's name and
/// description, the other files by path.
pub(super) fn resources(set: &SkillSet) -> Vec<Resource> {
    let mut out = Vec::new();
    for s in set.skills() {
        for f in &s.files {
            let (name, description) = if f.path == "SKILL.md" {
                (s.name.clone(), Some(s.description().to_string()))
            } else {
                (format!("{}/{}", s.name, f.path), None)
            };
            let value = json!({"uri": uri(&s.name, &f.path), "name": name,
                "description": description, "mimeType": mime_type(&f.path, &f.bytes),
                "size": f.bytes.len()});
            match serde_json::from_value::<Resource>(value) {
                Ok(r) => out.push(r),
                Err(e) => tracing::warn!("skill resource {}: {e}", f.path),
            }
        }
    }
    out
}

/// `resources/directory/read` of a `skill://` directory URI (a skill's own folder, or a
/// folder in it): its direct children, folders (`inode/directory`) then files (with MIME
/// type and size), on one page (a skill has at most 512 files); `None` when the URI names
/// no folder of a skill served.
pub(super) fn directory(
    set: &SkillSet,
    dir: &str,
) -> Option<Result<ReadResourceDirectoryResult, ErrorData>> {
    let (skill, children) = set.directory(dir)?;
    let mut out = Vec::with_capacity(children.len());
    for child in children {
        let value = match child {
            DirEntry::Folder(path) => {
                let name = path.rsplit('/').next().unwrap_or(&path);
                json!({"uri": uri(&skill.name, &path), "name": name,
                    "mimeType": DIRECTORY_MIME_TYPE})
            }
            DirEntry::File(f) => {
                let name = f.path.rsplit('/').next().unwrap_or(&f.path);
                json!({"uri": uri(&skill.name, &f.path), "name": name,
                    "mimeType": mime_type(&f.path, &f.bytes), "size": f.bytes.len()})
            }
        };
        match serde_json::from_value::<Resource>(value) {
            Ok(r) => out.push(r),
            Err(e) => return Some(Err(ErrorData::internal_error(format!("{dir}: {e}"), None))),
        }
    }
    Some(Ok(ReadResourceDirectoryResult::with_all_items(out)))
}

/// `resources/read` of a `skill://` URI: the file as text (or base64 when it is not
/// UTF-8); `None` when the URI names no file served.
pub(super) fn read(set: &SkillSet, uri: &str) -> Option<Result<ReadResourceResult, ErrorData>> {
    let (_, file) = set.file(uri)?;
    let mime = mime_type(&file.path, &file.bytes);
    let contents = match std::str::from_utf8(&file.bytes) {
        Ok(text) => json!({"uri": uri, "mimeType": mime, "text": text}),
        Err(_) => json!({"uri": uri, "mimeType": mime,
            "blob": base64::engine::general_purpose::STANDARD.encode(&file.bytes)}),
    };
    Some(
        serde_json::from_value::<ReadResourceResult>(json!({"contents": [contents]}))
            .map_err(|e| ErrorData::internal_error(format!("skill file {uri}: {e}"), None)),
    )
}

/// The skills extension's settings `serve` declares: `directoryRead` when it answers
/// `resources/directory/read` for some skill (its own, or a wrapped server's that does).
pub(super) fn settings(set: &SkillSet, gateway: Option<&crate::gateway::Gateway>) -> JsonObject {
    let mut settings = JsonObject::new();
    if !set.is_empty() || gateway.is_some_and(crate::gateway::Gateway::offers_directory_read) {
        settings.insert("directoryRead".into(), serde_json::Value::Bool(true));
    }
    settings
}

impl super::McpServer {
    /// `resources/directory/read`: a folder of a skill of toolhost's own, else of a wrapped
    /// server's (passed through, see `gateway/skills.rs`); -32602 with the URI for any
    /// other URI (a file, a folder of no skill served, a skill withheld).
    pub(super) async fn read_skill_directory(
        &self,
        dir: &str,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        if let Some(read) = directory(&self.skills, dir) {
            return read;
        }
        if let Some(gateway) = &self.gateway
            && let Some(read) = Box::pin(gateway.read_skill_directory(dir)).await
        {
            return read
                .map(ReadResourceDirectoryResult::with_all_items)
                .map_err(|e| {
                    let mut e = ErrorData::from(crate::gateway::GatewayError::from(e));
                    // The wrapped server's own `data` never passes (unbounded).
                    e.data = Some(json!({ "uri": dir }));
                    e
                });
        }
        Err(ErrorData::invalid_params(
            format!("not a folder of a skill served: {dir}"),
            Some(json!({ "uri": dir })),
        ))
    }
}
