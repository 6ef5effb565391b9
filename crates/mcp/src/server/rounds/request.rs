//! What a multi-round request is bound to and what its answers may be: the binding its
//! `requestState` is sealed over (who sent it, the method, the name and the arguments,
//! canonically), the error of a state that fails verification, and the checks on the
//! answers a client gives (`inputResponses`).

use std::collections::BTreeMap;

use rmcp::ErrorData;
use rmcp::model::{InputResponses, RequestStateError};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::MAX_ASKS_PER_ROUND;

/// What a request is bound to: SHA-256 of who sent it (`principal`: the bearer token it
/// carried, by position, or nobody), its method, name and arguments (object keys sorted,
/// so the same arguments in another order are the same request).
pub(crate) fn binding(principal: &str, method: &str, name: &str, args: &Value) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"toolhost requestState v1\0");
    h.update(principal.as_bytes());
    h.update(b"\0");
    h.update(method.as_bytes());
    h.update(b"\0");
    h.update(name.as_bytes());
    h.update(b"\0");
    h.update(canonical(args).to_string().as_bytes());
    h.finalize().into()
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

pub(super) fn bad_state(e: RequestStateError) -> ErrorData {
    let why = match e {
        RequestStateError::Expired => "it has expired; call again without requestState".to_string(),
        other => format!(
            "it failed verification ({other}): it was not issued by this server for this request"
        ),
    };
    ErrorData::invalid_params(format!("requestState refused: {why}"), None)
}

/// The answers a first request (no `requestState`) gives up front, to questions a wrapped
/// 2026-07-28 server may ask under these keys: those under a wrapped server's kind of key
/// ([`crate::rounds::usable_key`]; others, toolhost's own among them, are ignored), at
/// most [`MAX_ASKS_PER_ROUND`] of them. Each must be an object, as an answer asked for.
pub(super) fn upfront(
    responses: Option<&InputResponses>,
) -> Result<BTreeMap<String, Value>, ErrorData> {
    let mut taken = BTreeMap::new();
    for (key, v) in responses.into_iter().flatten() {
        if !crate::rounds::usable_key(key) || taken.len() == MAX_ASKS_PER_ROUND {
            continue;
        }
        if !v.is_object() {
            return Err(not_an_object(key, v));
        }
        taken.insert(key.clone(), v.clone());
    }
    Ok(taken)
}

pub(super) fn not_an_object(key: &str, v: &Value) -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "inputResponses[{}] must be an object (the result of the request asked), not {}",
            Value::String(key.to_string()),
            toolhost_core::tools::json_kind(v)
        ),
        None,
    )
}
