//! The asking half of multi-round-trip requests (MCP 2026-07-28, `input_required`).
//!
//! A client of the 2026-07-28 revision cannot be sent requests: where toolhost needs it
//! (an approval, a wrapped server's elicitation, sampling or roots request), the call's
//! [`crate::DownstreamClient`] holds an [`Asker`] instead of a session. An ask goes to
//! the server's round driver (`server/rounds.rs`), which answers the client's request
//! with an `input_required` result and hands the client's answer back when it retries.
//!
//! Two kinds of ask (docs/mcp.md, "Multi-round-trip requests"):
//! - **restartable** (toolhost's own approvals): asked before anything ran, so the call
//!   is dropped and run again from the start on the retry, with the answer given up front
//!   ([`Asker::preset`]). Nothing is kept: any replica with the same key can continue it.
//! - **suspended** (a wrapped server's requests): the wrapped server waits mid-call in a
//!   process of this replica, so the call is parked here until the retry answers.
//!
//! A client may also answer a wrapped 2026-07-28 server's question before it is asked
//! (`inputResponses` on a first request, without a `requestState`, under the key the
//! server uses): such an answer ([`Asker::new`]'s `upfront`) is given, once, to the
//! question the server then asks under that key, so the call completes without a round.
//! Only a wrapped server's own keys ([`usable_key`]) are taken up front; toolhost's own
//! questions (approvals) are answered only through a sealed state.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{ClientCapabilities, InputRequest};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

/// The key of toolhost's own approval question among a round's `inputRequests`.
pub const APPROVAL_INPUT_KEY: &str = "toolhost_approval";

/// The longest key a wrapped server may give its question and keep.
pub const MAX_KEY_BYTES: usize = 64;

tokio::task_local! {
    /// The key a wrapped 2026-07-28 server gave the question being passed on
    /// (`client/rounds.rs` sets it around each question it forwards).
    pub(crate) static INPUT_KEY: String;
}

/// Whether a wrapped server's key for its question may be shown to the client as it is:
/// short, plain (letters, digits, `_`, `-`, `.`) and not one of toolhost's own.
pub(crate) fn usable_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_BYTES
        && !key.starts_with("toolhost")
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// One question for the client.
#[derive(Debug)]
pub(crate) struct Ask {
    /// What is asked.
    pub request: InputRequest,
    /// `Some(key)` for a restartable ask (the call is dropped and run again with the
    /// answer under `key`); `None` for a suspended one.
    pub restartable: Option<String>,
    /// The key the wrapped server gave the question, if any ([`usable_key`] decides
    /// whether the client sees it).
    pub key: Option<String>,
    /// Where the answer goes (suspended asks only; a restartable ask's is never used).
    pub reply: oneshot::Sender<Result<Value, ErrorData>>,
}

/// The capabilities a request needed and its client had not declared (`sampling`,
/// `elicitation`): when such a request fails, the client is told it lacks them
/// (JSON-RPC -32021) rather than given the failure.
#[derive(Clone, Debug, Default)]
pub(crate) struct Missing(Arc<Mutex<Vec<&'static str>>>);

impl Missing {
    /// Notes that `capability` was needed.
    pub fn note(&self, capability: &'static str) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !m.contains(&capability) {
            m.push(capability);
        }
    }

    /// The capabilities noted, as `{"sampling": {}, ...}` (empty: none).
    pub fn as_object(&self) -> serde_json::Map<String, Value> {
        let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        m.iter()
            .map(|c| ((*c).to_string(), Value::Object(Default::default())))
            .collect()
    }
}

/// How a call of a 2026-07-28 client asks it. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Asker {
    asks: mpsc::Sender<Ask>,
    capabilities: ClientCapabilities,
    preset: Arc<BTreeMap<String, Value>>,
    upfront: Arc<Mutex<BTreeMap<String, Value>>>,
    missing: Missing,
    parked: Parked,
}

/// Whether a call's questions are out with its client, the call parked until it
/// retries: such a call is not the one asking when its wrapped server asks again
/// (see [`crate::downstream::one_downstream`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Parked(Arc<AtomicBool>);

impl Parked {
    /// Marks the call parked (`true`) or running again.
    pub fn set(&self, parked: bool) {
        self.0.store(parked, Ordering::SeqCst);
    }

    /// Whether the call is parked.
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl Asker {
    /// An asker sending to `asks`, for a client that declared `capabilities` in the
    /// request's `_meta`, with the answers to restartable asks it already gave (`preset`)
    /// and those it gave up front to questions a wrapped server may ask (`upfront`, by
    /// the server's key; each used once).
    pub fn new(
        asks: mpsc::Sender<Ask>,
        capabilities: ClientCapabilities,
        preset: BTreeMap<String, Value>,
        upfront: BTreeMap<String, Value>,
        missing: Missing,
        parked: Parked,
    ) -> Self {
        Self {
            asks,
            capabilities,
            preset: Arc::new(preset),
            upfront: Arc::new(Mutex::new(upfront)),
            missing,
            parked,
        }
    }

    /// Whether the call is parked, its questions out with the client.
    pub fn is_parked(&self) -> bool {
        self.parked.get()
    }

    /// Notes that the call needed `capability`, which the client did not declare.
    pub fn note_missing(&self, capability: &'static str) {
        self.missing.note(capability);
    }

    /// What the client declared it can answer.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// The answer the client already gave to the restartable ask `key`.
    pub fn preset(&self, key: &str) -> Option<&Value> {
        self.preset.get(key)
    }

    /// The answer given up front to a wrapped server's question `key`, taken (a second
    /// question under the same key is asked).
    fn take_upfront(&self, key: &str) -> Option<Value> {
        if !usable_key(key) {
            return None;
        }
        self.upfront
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
    }

    /// Asks `request` and waits for the client's answer, at most `timeout`; a wrapped
    /// server's question answered up front is not asked.
    pub async fn ask(
        &self,
        request: InputRequest,
        what: &str,
        timeout: Duration,
    ) -> Result<Value, ErrorData> {
        let key = INPUT_KEY.try_with(Clone::clone).ok();
        if let Some(given) = key.as_deref().and_then(|k| self.take_upfront(k)) {
            return Ok(given);
        }
        let (reply, answer) = oneshot::channel();
        let ask = Ask {
            request,
            restartable: None,
            key,
            reply,
        };
        if self.asks.send(ask).await.is_err() {
            return Err(gone(what));
        }
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(gone(what)),
            Err(_) => Err(ErrorData::internal_error(
                format!(
                    "{what}: the client connected to toolhost did not answer within {} s",
                    timeout.as_secs()
                ),
                None,
            )),
        }
    }

    /// Asks `request` as a restartable ask under `key`. The call this belongs to is
    /// dropped by the driver and run again when the client answers, so this never
    /// returns unless the driver is gone (then the call is refused).
    pub async fn ask_restartable(&self, key: &str, request: InputRequest, what: &str) -> ErrorData {
        let (reply, _never) = oneshot::channel();
        let ask = Ask {
            request,
            restartable: Some(key.to_string()),
            key: None,
            reply,
        };
        if self.asks.send(ask).await.is_err() {
            return gone(what);
        }
        // The driver aborts this call's task when it sees the ask.
        std::future::pending::<()>().await;
        gone(what)
    }
}

fn gone(what: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("{what}: the request this call belongs to has ended"),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_servers_key_is_kept_only_when_plain_and_not_toolhosts() {
        for ok in ["user_name", "step-2", "a.b", "X9"] {
            assert!(usable_key(ok), "{ok}");
        }
        let long = "k".repeat(MAX_KEY_BYTES + 1);
        for bad in [
            "",
            APPROVAL_INPUT_KEY,
            "toolhost_anything",
            "has space",
            "new\nline",
            "\u{1b}[2J",
            "ключ",
            long.as_str(),
        ] {
            assert!(!usable_key(bad), "{bad:?}");
        }
    }
}
