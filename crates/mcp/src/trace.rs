//! W3C trace context across MCP (`_meta.traceparent` and `tracestate`, SEP-414): a
//! request that carries one is continued by `serve`'s span for it, and the requests
//! toolhost sends to wrapped servers carry the context of the call they belong to, so one
//! trace runs from the client through toolhost into the wrapped server.
//!
//! The values come from clients (untrusted): the propagator parses them strictly and
//! ignores what is malformed (the request starts a trace of its own); a value longer than
//! [`MAX_VALUE_BYTES`] (the W3C limit of `tracestate`) is ignored whole. Without an
//! OpenTelemetry exporter configured (`toolhost serve` without `OTEL_EXPORTER_OTLP_*`) the
//! global propagator does nothing.

use opentelemetry::propagation::{Extractor, Injector};
use rmcp::model::MetaObject;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The longest `traceparent` or `tracestate` value taken from a request.
pub const MAX_VALUE_BYTES: usize = 512;

const KEYS: [&str; 2] = ["traceparent", "tracestate"];

struct Reading<'a>(&'a MetaObject);

impl Extractor for Reading<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        if !KEYS.contains(&key) {
            return None;
        }
        self.0
            .0
            .get(key)
            .and_then(|v| v.as_str())
            .filter(|v| v.len() <= MAX_VALUE_BYTES)
    }

    fn keys(&self) -> Vec<&str> {
        KEYS.iter()
            .copied()
            .filter(|k| self.0.0.contains_key(*k))
            .collect()
    }
}

struct Writing<'a>(&'a mut MetaObject);

impl Injector for Writing<'_> {
    fn set(&mut self, key: &str, value: String) {
        if KEYS.contains(&key) {
            self.0.0.insert(key.to_string(), value.into());
        }
    }
}

/// Makes `span` continue the trace `meta` names, if it names a valid one.
pub(crate) fn continue_from(span: &tracing::Span, meta: &MetaObject) {
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Reading(meta)));
    // An invalid or absent context leaves the span the root of a trace of its own.
    let _ = span.set_parent(parent);
}

/// Writes the current span's trace context into `meta` (a request to a wrapped server).
pub(crate) fn inject_current(meta: &mut MetaObject) {
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut Writing(meta)));
}
