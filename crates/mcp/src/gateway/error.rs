//! [`GatewayError`]: why a request the gateway passes on failed, and the JSON-RPC error a
//! client gets for it (the wrapped server's own code when it refused; never its `data`,
//! which is unbounded; an unknown resource's URI as `data.uri`).

use rmcp::ErrorData;

use crate::client::UpstreamError;

/// Why a gateway request failed.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The wrapped server failed or refused.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// No wrapped server offers this resource.
    #[error("no wrapped MCP server offers the resource {0:?}")]
    UnknownResource(String),
    /// No wrapped server offers this prompt.
    #[error("no wrapped MCP server offers the prompt {0:?}")]
    UnknownPrompt(String),
    /// The server that offers it does not support the request.
    #[error("MCP server '{server}' does not support {what}")]
    Unsupported {
        /// The configured server name.
        server: String,
        /// The request.
        what: String,
    },
}

impl From<GatewayError> for ErrorData {
    fn from(e: GatewayError) -> Self {
        match e {
            // The server's own error code goes on (its data does not: unbounded).
            GatewayError::Upstream(UpstreamError::Rejected { server, error, .. }) => {
                ErrorData::new(
                    error.code,
                    format!("MCP server '{server}': {}", error.message),
                    None,
                )
            }
            GatewayError::Upstream(other) => ErrorData::internal_error(other.to_string(), None),
            // The URI is the client's own: `data.uri` names it back (SEP-2164).
            GatewayError::UnknownResource(uri) => {
                let message = format!("no wrapped MCP server offers the resource {uri:?}");
                ErrorData::resource_not_found(message, Some(serde_json::json!({ "uri": uri })))
            }
            e @ GatewayError::UnknownPrompt(_) => ErrorData::invalid_params(e.to_string(), None),
            e @ GatewayError::Unsupported { .. } => ErrorData::invalid_request(e.to_string(), None),
        }
    }
}
