//! Converting content blocks and icons between rmcp's MCP types and toolhost's own
//! ([`toolhost_core::tools::content`], [`Icon`]), both ways, without losing a field the
//! core model has (text, data, MIME types, URIs, names, sizes, annotations).
//!
//! A wrapped server's blocks are taken as they come; the registry bounds and checks them
//! (pipeline stage 5). Icons are part of a tool's listing and never pass the registry's
//! result checks, so they are filtered here ([`icons_from_mcp`]): at most [`MAX_ICONS`],
//! only `https:` URLs and `data:image/...` URIs, each at most [`MAX_ICON_SRC_BYTES`],
//! with a well-formed MIME type and sizes; anything else is dropped (logged at debug).

use rmcp::model as m;
use toolhost_core::tools::Icon;
use toolhost_core::tools::content::{
    Audience, ContentAnnotations, ContentBlock, EmbeddedResource, MediaContent, ResourceBody,
    ResourceContents, ResourceLink, TextContent, is_mime_type,
};

/// Most icons kept per tool.
pub const MAX_ICONS: usize = 8;
/// Longest icon `src` kept, in bytes (a `data:` URI holds the whole image).
pub const MAX_ICON_SRC_BYTES: usize = 64 * 1024;
/// Most `sizes` entries kept per icon.
const MAX_ICON_SIZES: usize = 8;

fn annotations_from_mcp(a: Option<m::Annotations>) -> Option<ContentAnnotations> {
    a.map(|a| ContentAnnotations {
        audience: a.audience.map(|roles| {
            roles
                .into_iter()
                .map(|r| match r {
                    m::Role::User => Audience::User,
                    m::Role::Assistant => Audience::Assistant,
                })
                .collect()
        }),
        // Through the shortest decimal form: 0.7f32 becomes 0.7, not 0.699999988.
        priority: a
            .priority
            .map(|p| p.to_string().parse().unwrap_or(f64::from(p))),
        last_modified: a.last_modified,
    })
}

fn annotations_to_mcp(a: &Option<ContentAnnotations>) -> Option<m::Annotations> {
    a.as_ref().map(|a| {
        let mut out = m::Annotations::default();
        out.audience = a.audience.as_ref().map(|roles| {
            roles
                .iter()
                .map(|r| match r {
                    Audience::User => m::Role::User,
                    Audience::Assistant => m::Role::Assistant,
                })
                .collect()
        });
        // MCP priorities are f32 in rmcp; the shortest decimal form survives the cut.
        #[allow(clippy::cast_possible_truncation)]
        let priority = a.priority.map(|p| p as f32);
        out.priority = priority;
        out.last_modified = a.last_modified.clone();
        out
    })
}

/// An MCP content block as a toolhost block (`_meta` is not kept).
pub fn block_from_mcp(b: m::ContentBlock) -> ContentBlock {
    match b {
        m::ContentBlock::Text(t) => ContentBlock::Text(TextContent {
            text: t.text,
            annotations: annotations_from_mcp(t.annotations),
        }),
        m::ContentBlock::Image(i) => ContentBlock::Image(MediaContent {
            data: i.data,
            mime_type: i.mime_type,
            annotations: annotations_from_mcp(i.annotations),
        }),
        m::ContentBlock::Audio(a) => ContentBlock::Audio(MediaContent {
            data: a.data,
            mime_type: a.mime_type,
            annotations: annotations_from_mcp(a.annotations),
        }),
        m::ContentBlock::ResourceLink(l) => ContentBlock::ResourceLink(ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
            annotations: annotations_from_mcp(l.annotations),
        }),
        m::ContentBlock::Resource(r) => {
            let resource = match r.resource {
                m::ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => ResourceContents {
                    uri,
                    mime_type,
                    body: ResourceBody::Text(text),
                },
                m::ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => ResourceContents {
                    uri,
                    mime_type,
                    body: ResourceBody::Blob(blob),
                },
                // A contents shape this rmcp version adds later: keep that it was there.
                #[allow(unreachable_patterns)]
                _ => ResourceContents {
                    uri: String::new(),
                    mime_type: None,
                    body: ResourceBody::Text("[unsupported resource contents]".into()),
                },
            };
            ContentBlock::Resource(EmbeddedResource {
                resource,
                annotations: annotations_from_mcp(r.annotations),
            })
        }
        #[allow(unreachable_patterns)]
        _ => ContentBlock::text("[unsupported content]"),
    }
}

/// A toolhost block as an MCP content block.
pub fn block_to_mcp(b: &ContentBlock) -> m::ContentBlock {
    match b {
        ContentBlock::Text(t) => {
            let mut c = m::TextContent::new(t.text.clone());
            c.annotations = annotations_to_mcp(&t.annotations);
            m::ContentBlock::Text(c)
        }
        ContentBlock::Image(i) => {
            let mut c = m::ImageContent::new(i.data.clone(), i.mime_type.clone());
            c.annotations = annotations_to_mcp(&i.annotations);
            m::ContentBlock::Image(c)
        }
        ContentBlock::Audio(a) => {
            let mut c = m::AudioContent::new(a.data.clone(), a.mime_type.clone());
            c.annotations = annotations_to_mcp(&a.annotations);
            m::ContentBlock::Audio(c)
        }
        ContentBlock::ResourceLink(l) => {
            let mut r = m::Resource::new(l.uri.clone(), l.name.clone());
            r.title = l.title.clone();
            r.description = l.description.clone();
            r.mime_type = l.mime_type.clone();
            r.size = l.size;
            r.annotations = annotations_to_mcp(&l.annotations);
            m::ContentBlock::ResourceLink(r)
        }
        ContentBlock::Resource(e) => {
            let uri = e.resource.uri.clone();
            let mime_type = e.resource.mime_type.clone();
            let contents = match &e.resource.body {
                ResourceBody::Text(text) => m::ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text: text.clone(),
                    meta: None,
                },
                ResourceBody::Blob(blob) => m::ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob: blob.clone(),
                    meta: None,
                },
            };
            let mut r = m::EmbeddedResource::new(contents);
            r.annotations = annotations_to_mcp(&e.annotations);
            m::ContentBlock::Resource(r)
        }
    }
}

/// Whether an icon `src` is one toolhost passes on: an `https:` URL, or a
/// `data:image/SUBTYPE[;base64],...` URI, within [`MAX_ICON_SRC_BYTES`].
pub fn is_allowed_icon_src(src: &str) -> bool {
    if src.len() > MAX_ICON_SRC_BYTES || src.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if let Some(rest) = src.strip_prefix("data:") {
        let Some((header, _payload)) = rest.split_once(',') else {
            return false;
        };
        let mime = header.strip_suffix(";base64").unwrap_or(header);
        return mime.starts_with("image/") && is_mime_type(mime);
    }
    matches!(url::Url::parse(src), Ok(u) if u.scheme() == "https" && u.host().is_some())
}

fn is_icon_size(s: &str) -> bool {
    s == "any"
        || s.split_once('x').is_some_and(|(w, h)| {
            (1..=5).contains(&w.len())
                && (1..=5).contains(&h.len())
                && w.bytes().all(|b| b.is_ascii_digit())
                && h.bytes().all(|b| b.is_ascii_digit())
        })
}

/// A server's icons, filtered (see the module docs).
pub fn icons_from_mcp(icons: Option<Vec<m::Icon>>) -> Vec<Icon> {
    let mut out = Vec::new();
    for i in icons.unwrap_or_default() {
        if out.len() == MAX_ICONS {
            tracing::debug!("icons past the first {MAX_ICONS} dropped");
            break;
        }
        if !is_allowed_icon_src(&i.src) {
            tracing::debug!(
                src = %toolhost_core::tools::escape::escape_line(&i.src.chars().take(80).collect::<String>()),
                "icon dropped: only https: URLs and data:image/... URIs are passed on"
            );
            continue;
        }
        let theme = i.theme.map(|t| match t {
            m::IconTheme::Dark => "dark".to_string(),
            _ => "light".to_string(),
        });
        out.push(Icon {
            src: i.src,
            mime_type: i
                .mime_type
                .filter(|t| t.starts_with("image/") && is_mime_type(t)),
            sizes: i.sizes.map(|s| {
                s.into_iter()
                    .filter(|s| is_icon_size(s))
                    .take(MAX_ICON_SIZES)
                    .collect()
            }),
            theme,
        });
    }
    out
}

/// A toolhost icon as an MCP icon.
pub fn icon_to_mcp(i: &Icon) -> m::Icon {
    let mut out = m::Icon::new(i.src.clone());
    out.mime_type = i.mime_type.clone();
    out.sizes = i.sizes.clone();
    out.theme = match i.theme.as_deref() {
        Some("dark") => Some(m::IconTheme::Dark),
        Some("light") => Some(m::IconTheme::Light),
        _ => None,
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_trip_through_mcp_unchanged() {
        let json = serde_json::json!([
            {"type": "text", "text": "hi", "annotations": {"audience": ["user", "assistant"], "priority": 0.7}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav", "annotations": {"lastModified": "2025-01-01T00:00:00Z"}},
            {"type": "resource_link", "uri": "demo://r/1", "name": "r1", "title": "R", "description": "d", "mimeType": "text/plain", "size": 3},
            {"type": "resource", "resource": {"uri": "demo://r/2", "mimeType": "application/octet-stream", "blob": "aGk="}},
            {"type": "resource", "resource": {"uri": "demo://r/3", "text": "body"}}
        ]);
        let mcp: Vec<m::ContentBlock> = serde_json::from_value(json.clone()).unwrap();
        let ours: Vec<ContentBlock> = mcp.into_iter().map(block_from_mcp).collect();
        assert_eq!(serde_json::to_value(&ours).unwrap(), json);
        let back: Vec<m::ContentBlock> = ours.iter().map(block_to_mcp).collect();
        // As on the wire (an f32 is written in its shortest form).
        let wire: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&back).unwrap()).unwrap();
        assert_eq!(wire, json);
    }

    #[test]
    fn only_https_and_data_image_icons_pass() {
        assert!(is_allowed_icon_src("https://example.com/i.png"));
        assert!(is_allowed_icon_src("data:image/png;base64,aGk="));
        for bad in [
            "javascript:alert(1)",
            "http://example.com/i.png",
            "data:text/html;base64,PHNjcmlwdD4=",
            "file:///etc/passwd",
            "https://",
            "data:image/png\u{1b};base64,aGk=",
        ] {
            assert!(!is_allowed_icon_src(bad), "{bad}");
        }
        let many: Vec<m::Icon> = (0..20)
            .map(|i| m::Icon::new(format!("https://example.com/{i}.png")))
            .collect();
        assert_eq!(icons_from_mcp(Some(many)).len(), MAX_ICONS);
    }
}
