//! The two versions of the plugin world a component may implement, behind one
//! [`WorldPre`]: `toolhost:tool@0.1.0` (`wit/tool.wit`) and `toolhost:tool@0.2.0`
//! (`wit/v0.2/tool.wit`, whose `tool-output` adds content blocks). Linking tries 0.2.0
//! first and falls back to 0.1.0, so existing components load unchanged. The 0.2.0 types
//! are converted to the 0.1.0 ones (identical but for the output) and the content blocks
//! to `toolhost-core`'s, with binary data base64-encoded; the registry checks and bounds
//! them like any tool's (pipeline stage 5).

use base64::Engine as _;
use toolhost_core::tools::content::{
    Audience, ContentAnnotations, ContentBlock, EmbeddedResource, MediaContent, ResourceBody,
    ResourceContents, ResourceLink, TextContent,
};
use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::bindings::toolhost::tool::types as v1;
use crate::bindings_v2::toolhost::tool::types as v2;
use crate::sandbox::HostState;

/// A component linked against the world version it implements.
pub(crate) enum WorldPre {
    /// `toolhost:tool@0.1.0`.
    V1(crate::bindings::ToolPre<HostState>),
    /// `toolhost:tool@0.2.0`.
    V2(crate::bindings_v2::ToolPre<HostState>),
    /// Not the `tool` world: a plain WIT component, each exported function a tool
    /// ([`crate::plain`]).
    Plain(crate::plain::PlainPre),
}

/// What a call returned: the output, its content blocks, or the guest's error.
pub(crate) type CallResult = Result<(v1::ToolOutput, Vec<ContentBlock>), v1::ToolError>;

impl WorldPre {
    /// Checks the component's exports against 0.2.0, then 0.1.0; the error is 0.1.0's
    /// (the world most components implement).
    pub(crate) fn new(pre: InstancePre<HostState>) -> wasmtime::Result<Self> {
        match crate::bindings_v2::ToolPre::new(pre.clone()) {
            Ok(p) => Ok(WorldPre::V2(p)),
            Err(_) => crate::bindings::ToolPre::new(pre).map(WorldPre::V1),
        }
    }

    /// `0.1.0` or `0.2.0`.
    pub(crate) fn version(&self) -> &'static str {
        match self {
            WorldPre::V1(_) => "0.1.0",
            WorldPre::V2(_) => "0.2.0",
            WorldPre::Plain(_) => "plain WIT",
        }
    }

    /// Instantiates the component and runs `describe()`.
    pub(crate) async fn describe(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Vec<v1::ToolInfo>> {
        match self {
            WorldPre::V1(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.call_describe(&mut *store).await
            }
            WorldPre::V2(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                let infos = inst.call_describe(&mut *store).await?;
                Ok(infos.into_iter().map(info_v1).collect())
            }
            // Its tools are derived from its type at load (`crate::plain::derive`).
            WorldPre::Plain(_) => Err(wasmtime::Error::msg(
                "a plain WIT component has no describe()",
            )),
        }
    }

    /// Instantiates the component in `store` (for a call; a plain WIT component's
    /// arguments are checked before, see [`WorldPre::call`]).
    pub(crate) async fn instantiate(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Instantiated> {
        Ok(match self {
            WorldPre::V1(pre) => Instantiated::V1(pre.instantiate_async(&mut *store).await?),
            WorldPre::V2(pre) => Instantiated::V2(pre.instantiate_async(&mut *store).await?),
            WorldPre::Plain(pre) => {
                Instantiated::Plain(pre.pre.instantiate_async(&mut *store).await?)
            }
        })
    }

    /// Runs `call(name, arguments, ctx)` in `instance` (instantiated from this component
    /// in `store`, see [`WorldPre::instantiate`], and never called); for a plain WIT
    /// component, calls the exported function `name` ([`crate::plain::call`]).
    pub(crate) async fn call(
        &self,
        store: &mut Store<HostState>,
        instance: Instantiated,
        name: &str,
        arguments: &str,
        ctx: &v1::CallContext,
    ) -> wasmtime::Result<CallResult> {
        match (self, instance) {
            (WorldPre::Plain(pre), Instantiated::Plain(i)) => {
                crate::plain::call(pre, store, i, name, arguments).await
            }
            // An instance is always made from the `WorldPre` it is called through
            // (`crate::spare` compares the code), so this cannot be reached.
            (_, Instantiated::Plain(_)) => Err(wasmtime::Error::msg(
                "a plain WIT instance called through a tool-world component",
            )),
            (_, Instantiated::V1(inst)) => {
                let r = inst.call_call(&mut *store, name, arguments, ctx).await?;
                Ok(r.map(|out| (out, Vec::new())))
            }
            (_, Instantiated::V2(inst)) => {
                let ctx = v2::CallContext {
                    session_id: ctx.session_id.clone(),
                    trace_id: ctx.trace_id.clone(),
                    call_id: ctx.call_id.clone(),
                };
                let r = inst.call_call(&mut *store, name, arguments, &ctx).await?;
                Ok(match r {
                    Ok(out) => Ok((
                        v1::ToolOutput {
                            canonical: out.canonical,
                            render: out.render,
                        },
                        out.content.into_iter().map(block).collect(),
                    )),
                    Err(e) => Err(match e {
                        v2::ToolError::InvalidArguments(m) => v1::ToolError::InvalidArguments(m),
                        v2::ToolError::ExecutionFailed(m) => v1::ToolError::ExecutionFailed(m),
                        v2::ToolError::Denied(m) => v1::ToolError::Denied(m),
                    }),
                })
            }
        }
    }
}

/// A component instantiated in a store and not yet called: what a spare sandbox holds.
pub(crate) enum Instantiated {
    /// `toolhost:tool@0.1.0`.
    V1(crate::bindings::Tool),
    /// `toolhost:tool@0.2.0`.
    V2(crate::bindings_v2::Tool),
    /// A plain WIT component.
    Plain(wasmtime::component::Instance),
}

fn info_v1(i: v2::ToolInfo) -> v1::ToolInfo {
    v1::ToolInfo {
        name: i.name,
        description: i.description,
        parameters: i.parameters,
        permissions: i
            .permissions
            .into_iter()
            .map(|p| match p {
                v2::Permission::Read => v1::Permission::Read,
                v2::Permission::Write => v1::Permission::Write,
                v2::Permission::Delete => v1::Permission::Delete,
                v2::Permission::Network => v1::Permission::Network,
                v2::Permission::Shell => v1::Permission::Shell,
                v2::Permission::FileSystem => v1::Permission::FileSystem,
                v2::Permission::Custom(c) => v1::Permission::Custom(c),
            })
            .collect(),
        tags: i.tags,
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn block(b: v2::ContentBlock) -> ContentBlock {
    let annotations = b.annotations.map(|a| ContentAnnotations {
        audience: (!a.audience.is_empty()).then(|| {
            a.audience
                .into_iter()
                .map(|r| match r {
                    v2::Role::User => Audience::User,
                    v2::Role::Assistant => Audience::Assistant,
                })
                .collect()
        }),
        priority: a.priority,
        last_modified: a.last_modified,
    });
    match b.content {
        v2::Content::Text(text) => ContentBlock::Text(TextContent { text, annotations }),
        v2::Content::Image(m) => ContentBlock::Image(MediaContent {
            data: b64(&m.data),
            mime_type: m.mime_type,
            annotations,
        }),
        v2::Content::Audio(m) => ContentBlock::Audio(MediaContent {
            data: b64(&m.data),
            mime_type: m.mime_type,
            annotations,
        }),
        v2::Content::ResourceLink(l) => ContentBlock::ResourceLink(ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
            annotations,
        }),
        v2::Content::Resource(r) => ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents {
                uri: r.uri,
                mime_type: r.mime_type,
                body: match r.body {
                    v2::ResourceBody::Text(t) => ResourceBody::Text(t),
                    v2::ResourceBody::Blob(b) => ResourceBody::Blob(b64(&b)),
                },
            },
            annotations,
        }),
    }
}
