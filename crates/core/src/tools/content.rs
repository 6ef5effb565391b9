//! Content blocks of a tool result ([`ContentBlock`]): text, image, audio, resource link
//! and embedded resource, each with optional [`ContentAnnotations`], and the checks the
//! registry runs on them ([`check_content`], pipeline stage 5).
//!
//! The model mirrors MCP's `ContentBlock` (same JSON shape: `{"type": "image", "data":
//! ..., "mimeType": ...}`) without depending on an MCP library: `toolhost-core` knows
//! nothing of MCP (`docs/design.md`, "The crates and the one-way rule"). A tool that
//! returns blocks keeps them through the registry; the MCP server serves them as given.
//!
//! Blocks come from tools that are not trusted (an MCP server, a plugin), so the registry
//! bounds and checks them before anyone sees them (`docs/mcp.md`, "Content blocks"):
//! at most `max_content_blocks` blocks and `max_content_bytes` bytes of strings in all
//! (over either: [`ContentError::TooManyBlocks`] / [`ContentError::TooLarge`]); every
//! base64 payload decodes, every MIME type is a `type/subtype` token (parameters
//! allowed), every URI parses as an absolute URI without control characters, every
//! priority is a number in `0..=1`.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::tools::escape::escape_line;

/// Default limit of the bytes in a result's content blocks (all their strings: base64
/// data, text, URIs, names), 16 MiB.
pub const DEFAULT_MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;

/// Default limit of the number of content blocks in one result.
pub const DEFAULT_MAX_CONTENT_BLOCKS: usize = 1024;

/// Longest MIME type accepted, in bytes (RFC 6838 caps type and subtype at 127 each).
pub const MAX_MIME_TYPE_BYTES: usize = 255;

/// How much of an offending value an error message quotes, in characters.
const QUOTE_CHARS: usize = 80;

/// Who a block is meant for (MCP `Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Audience {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Optional hints about a block: for whom, how important, how fresh (MCP `Annotations`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentAnnotations {
    /// Who the block is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Audience>>,
    /// Importance from 0 (least) to 1 (most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the content was last modified (ISO 8601), as the tool says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Annotations, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ContentAnnotations>,
}

/// An image or audio block: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaContent {
    /// The bytes, base64-encoded (standard alphabet, padded).
    pub data: String,
    /// The MIME type (`image/png`, `audio/wav`).
    pub mime_type: String,
    /// Annotations, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ContentAnnotations>,
}

/// A link to a resource the client may read (MCP `resource_link`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Annotations, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ContentAnnotations>,
}

/// The body of an embedded resource: text, or base64 bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceBody {
    /// Text contents.
    Text(String),
    /// Binary contents, base64-encoded.
    Blob(String),
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its contents (`text` or `blob` in the JSON).
    #[serde(flatten)]
    pub body: ResourceBody,
}

/// A resource embedded in the result (MCP `resource`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource.
    pub resource: ResourceContents,
    /// Annotations, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ContentAnnotations>,
}

/// One content block of a tool result. The JSON shape is MCP's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(MediaContent),
    /// Audio.
    Audio(MediaContent),
    /// A link to a resource.
    ResourceLink(ResourceLink),
    /// An embedded resource.
    Resource(EmbeddedResource),
}

impl ContentBlock {
    /// A text block without annotations.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent {
            text: text.into(),
            annotations: None,
        })
    }

    /// An image block without annotations (`data` is base64).
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(MediaContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
        })
    }

    /// An audio block without annotations (`data` is base64).
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(MediaContent {
            data: data.into(),
            mime_type: mime_type.into(),
            annotations: None,
        })
    }

    /// `text`, `image`, `audio`, `resource_link` or `resource` (the MCP `type`).
    pub fn kind(&self) -> &'static str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::ResourceLink(_) => "resource_link",
            ContentBlock::Resource(_) => "resource",
        }
    }

    /// The block's annotations, if any.
    pub fn annotations(&self) -> Option<&ContentAnnotations> {
        match self {
            ContentBlock::Text(t) => t.annotations.as_ref(),
            ContentBlock::Image(m) | ContentBlock::Audio(m) => m.annotations.as_ref(),
            ContentBlock::ResourceLink(l) => l.annotations.as_ref(),
            ContentBlock::Resource(r) => r.annotations.as_ref(),
        }
    }

    /// How the block reads as text for a model: text (and text resources) as they are,
    /// anything else as a short summary such as `[image image/png (5380 base64 bytes)]`.
    pub fn summary(&self) -> String {
        match self {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(m) => {
                format!("[image {} ({} base64 bytes)]", m.mime_type, m.data.len())
            }
            ContentBlock::Audio(m) => {
                format!("[audio {} ({} base64 bytes)]", m.mime_type, m.data.len())
            }
            ContentBlock::ResourceLink(l) => format!("[resource link {}]", l.uri),
            ContentBlock::Resource(r) => match &r.resource.body {
                ResourceBody::Text(t) => t.clone(),
                ResourceBody::Blob(_) => format!("[resource {}]", r.resource.uri),
            },
        }
    }

    /// The bytes of every string in the block (what [`check_content`] counts).
    pub fn byte_len(&self) -> usize {
        let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let ann =
            |a: &Option<ContentAnnotations>| a.as_ref().map_or(0, |a| opt(&a.last_modified) + 16);
        match self {
            ContentBlock::Text(t) => t.text.len() + ann(&t.annotations),
            ContentBlock::Image(m) | ContentBlock::Audio(m) => {
                m.data.len() + m.mime_type.len() + ann(&m.annotations)
            }
            ContentBlock::ResourceLink(l) => {
                l.uri.len()
                    + l.name.len()
                    + opt(&l.title)
                    + opt(&l.description)
                    + opt(&l.mime_type)
                    + ann(&l.annotations)
            }
            ContentBlock::Resource(r) => {
                let body = match &r.resource.body {
                    ResourceBody::Text(s) | ResourceBody::Blob(s) => s.len(),
                };
                r.resource.uri.len() + opt(&r.resource.mime_type) + body + ann(&r.annotations)
            }
        }
    }
}

/// The render text of blocks: each block's [`ContentBlock::summary`], one per line.
pub fn render_blocks(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .map(ContentBlock::summary)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The limits [`check_content`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentLimits {
    /// Most blocks in one result.
    pub max_blocks: usize,
    /// Most bytes of strings in all blocks together ([`ContentBlock::byte_len`]).
    pub max_bytes: usize,
}

impl Default for ContentLimits {
    fn default() -> Self {
        Self {
            max_blocks: DEFAULT_MAX_CONTENT_BLOCKS,
            max_bytes: DEFAULT_MAX_CONTENT_BYTES,
        }
    }
}

/// Why a result's content blocks were refused. Offending values are quoted escaped
/// (control characters made visible) and cut short: they come from untrusted tools.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ContentError {
    /// More blocks than the limit.
    #[error(
        "the result has {count} content blocks, more than the limit of {max}; return fewer, \
         larger blocks (or raise max_content_blocks)"
    )]
    TooManyBlocks {
        /// Blocks in the result.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// More bytes than the limit.
    #[error(
        "the result's content blocks hold {bytes} bytes, more than the limit of {max}; \
         return less data (or raise max_content_bytes)"
    )]
    TooLarge {
        /// Bytes in the blocks (at least; counting stops past the limit).
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A base64 payload does not decode.
    #[error("content block {index} ({kind}): the {field} is not valid base64: {reason}")]
    InvalidBase64 {
        /// The block's position (0-based).
        index: usize,
        /// The block's type.
        kind: &'static str,
        /// `data` or `blob`.
        field: &'static str,
        /// The decoder's complaint.
        reason: String,
    },
    /// A MIME type is not a `type/subtype` token.
    #[error(
        "content block {index} ({kind}): \"{value}\" is not a MIME type (expected type/subtype, \
         such as image/png)"
    )]
    InvalidMimeType {
        /// The block's position (0-based).
        index: usize,
        /// The block's type.
        kind: &'static str,
        /// The offending value, escaped and cut short.
        value: String,
    },
    /// A URI does not parse.
    #[error("content block {index} ({kind}): \"{value}\" is not a valid URI: {reason}")]
    InvalidUri {
        /// The block's position (0-based).
        index: usize,
        /// The block's type.
        kind: &'static str,
        /// The offending value, escaped and cut short.
        value: String,
        /// Why.
        reason: String,
    },
    /// An annotation is out of range.
    #[error("content block {index} ({kind}): {reason}")]
    InvalidAnnotation {
        /// The block's position (0-based).
        index: usize,
        /// The block's type.
        kind: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl ContentError {
    /// Whether the blocks were refused for their size or number (rather than for being
    /// malformed).
    pub fn is_limit(&self) -> bool {
        matches!(
            self,
            ContentError::TooManyBlocks { .. } | ContentError::TooLarge { .. }
        )
    }
}

/// `s` escaped for one line and cut to a few dozen characters, for an error message.
fn quote(s: &str) -> String {
    let cut: String = s.chars().take(QUOTE_CHARS).collect();
    let mut q = escape_line(&cut).into_owned();
    if cut.len() < s.len() {
        q.push('…');
    }
    q
}

/// Checks blocks against the limits and the format rules (see the module docs).
pub fn check_content(blocks: &[ContentBlock], limits: ContentLimits) -> Result<(), ContentError> {
    if blocks.len() > limits.max_blocks {
        return Err(ContentError::TooManyBlocks {
            count: blocks.len(),
            max: limits.max_blocks,
        });
    }
    let mut total = 0usize;
    for b in blocks {
        total = total.saturating_add(b.byte_len());
        if total > limits.max_bytes {
            return Err(ContentError::TooLarge {
                bytes: total,
                max: limits.max_bytes,
            });
        }
    }
    for (index, b) in blocks.iter().enumerate() {
        check_block(index, b)?;
    }
    Ok(())
}

fn check_block(index: usize, b: &ContentBlock) -> Result<(), ContentError> {
    let kind = b.kind();
    let mime = |m: &str| {
        if is_mime_type(m) {
            Ok(())
        } else {
            Err(ContentError::InvalidMimeType {
                index,
                kind,
                value: quote(m),
            })
        }
    };
    let b64 = |field: &'static str, data: &str| {
        // Decoded into a sink, a buffer at a time: checking 16 MiB allocates nothing.
        let mut reader = base64::read::DecoderReader::new(
            data.as_bytes(),
            &base64::engine::general_purpose::STANDARD,
        );
        std::io::copy(&mut reader, &mut std::io::sink())
            .map(drop)
            .map_err(|e| ContentError::InvalidBase64 {
                index,
                kind,
                field,
                reason: e.to_string(),
            })
    };
    let uri = |u: &str| {
        check_uri(u).map_err(|reason| ContentError::InvalidUri {
            index,
            kind,
            value: quote(u),
            reason,
        })
    };
    match b {
        ContentBlock::Text(_) => {}
        ContentBlock::Image(m) | ContentBlock::Audio(m) => {
            mime(&m.mime_type)?;
            b64("data", &m.data)?;
        }
        ContentBlock::ResourceLink(l) => {
            uri(&l.uri)?;
            if let Some(m) = &l.mime_type {
                mime(m)?;
            }
        }
        ContentBlock::Resource(r) => {
            uri(&r.resource.uri)?;
            if let Some(m) = &r.resource.mime_type {
                mime(m)?;
            }
            if let ResourceBody::Blob(data) = &r.resource.body {
                b64("blob", data)?;
            }
        }
    }
    if let Some(a) = b.annotations()
        && let Some(p) = a.priority
        && !(0.0..=1.0).contains(&p)
    {
        return Err(ContentError::InvalidAnnotation {
            index,
            kind,
            reason: format!("priority {p} is outside 0..=1"),
        });
    }
    Ok(())
}

/// Whether `s` is a MIME type: `type/subtype` (RFC 6838 tokens), optionally followed by
/// `;` parameters, printable ASCII only, at most [`MAX_MIME_TYPE_BYTES`].
pub fn is_mime_type(s: &str) -> bool {
    if s.len() > MAX_MIME_TYPE_BYTES || !s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return false;
    }
    let essence = s.split(';').next().unwrap_or_default().trim_end();
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match essence.split_once('/') {
        Some((ty, sub)) => token(ty) && token(sub) && s.parse::<mime::Mime>().is_ok(),
        None => false,
    }
}

/// Whether `u` is an absolute URI: it parses (the `url` crate, WHATWG rules) and holds
/// no control characters or whitespace (which the parser would silently drop).
fn check_uri(u: &str) -> Result<(), String> {
    if u.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("it contains control characters or whitespace".into());
    }
    url::Url::parse(u).map(drop).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_have_the_mcp_json_shape() {
        let blocks = vec![
            ContentBlock::text("hi"),
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::Resource(EmbeddedResource {
                resource: ResourceContents {
                    uri: "demo://r/1".into(),
                    mime_type: Some("text/plain".into()),
                    body: ResourceBody::Text("body".into()),
                },
                annotations: Some(ContentAnnotations {
                    audience: Some(vec![Audience::User]),
                    priority: Some(0.5),
                    last_modified: None,
                }),
            }),
        ];
        let v = serde_json::to_value(&blocks).unwrap();
        assert_eq!(
            v,
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "demo://r/1", "mimeType": "text/plain", "text": "body"},
                 "annotations": {"audience": ["user"], "priority": 0.5}}
            ])
        );
        let back: Vec<ContentBlock> = serde_json::from_value(v).unwrap();
        assert_eq!(back, blocks);
        assert_eq!(
            render_blocks(&blocks),
            "hi\n[image image/png (4 base64 bytes)]\nbody"
        );
    }

    #[test]
    fn checks_refuse_malformed_and_oversized_blocks() {
        let ok = vec![ContentBlock::image("aGk=", "image/png")];
        assert_eq!(check_content(&ok, ContentLimits::default()), Ok(()));
        let bad64 = vec![ContentBlock::image("not base64!", "image/png")];
        assert!(matches!(
            check_content(&bad64, ContentLimits::default()),
            Err(ContentError::InvalidBase64 { index: 0, .. })
        ));
        for m in ["image", "image/png\u{1b}[2J", "", "a/b/c", "image/ png"] {
            let e = check_content(&[ContentBlock::image("aGk=", m)], ContentLimits::default())
                .unwrap_err();
            assert!(
                matches!(&e, ContentError::InvalidMimeType { .. }),
                "{m:?}: {e}"
            );
            assert!(!e.to_string().contains('\u{1b}'), "{e}");
        }
        assert!(is_mime_type("text/plain; charset=utf-8"));
        let many = vec![ContentBlock::text("x"); 11];
        let small = ContentLimits {
            max_blocks: 10,
            max_bytes: 100,
        };
        assert!(matches!(
            check_content(&many, small),
            Err(ContentError::TooManyBlocks { count: 11, max: 10 })
        ));
        let big = vec![ContentBlock::text("x".repeat(101))];
        assert!(check_content(&big, small).unwrap_err().is_limit());
        let link = ContentBlock::ResourceLink(ResourceLink {
            uri: "no scheme".into(),
            name: "n".into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        });
        assert!(matches!(
            check_content(&[link], ContentLimits::default()),
            Err(ContentError::InvalidUri { .. })
        ));
    }
}
