//! OpenTelemetry traces: when the standard environment asks for them
//! (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`, and
//! `OTEL_TRACES_EXPORTER` not `none`), toolhost's spans go to that OTLP endpoint over
//! HTTP (protobuf), batched: a span per MCP request served (`tools/call NAME`, continuing
//! the client's `_meta.traceparent`), a span per tool call (`execute_tool NAME`, with its
//! outcome), and the trace context passed on to wrapped MCP servers. The service name is
//! `OTEL_SERVICE_NAME`, else `toolhost`. docs/deploy.md has the set-up.
//!
//! Only toolhost's own spans are exported (its crates' targets, level info and up), not
//! every dependency's, and never log lines: a log event inside a span becomes a span event
//! only when the log filter lets it through.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

/// Why traces could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (a malformed endpoint, say).
    #[error("cannot export traces to the OTLP endpoint: {0}")]
    Exporter(String),
}

/// The default service name.
pub const SERVICE_NAME: &str = "toolhost";

/// Whether the environment asks for traces.
pub fn requested() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
    let off = std::env::var("OTEL_TRACES_EXPORTER").is_ok_and(|v| v.trim() == "none");
    !off && (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT"))
}

/// The trace pipeline: hand [`Traces::layer`] to the subscriber, call
/// [`Traces::shutdown`] before the process exits (it sends what is still batched).
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// The pipeline the environment asks for, if it asks (see [`requested`]).
    pub fn from_env() -> Result<Option<Self>, TelemetryError> {
        if !requested() {
            return Ok(None);
        }
        // Endpoint, headers, timeout and protocol come from the standard variables.
        let exporter = SpanExporter::builder()
            .with_http()
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        let service = std::env::var("OTEL_SERVICE_NAME")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| SERVICE_NAME.to_string());
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(service).build())
            .build();
        // `_meta.traceparent` of requests in, and of requests to wrapped servers out.
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Some(Self { provider }))
    }

    /// The `tracing` layer that turns toolhost's spans into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let targets = Targets::new()
            .with_target("toolhost", tracing::Level::INFO)
            .with_target("toolhost_core", tracing::Level::INFO)
            .with_target("toolhost_mcp", tracing::Level::INFO)
            .with_target("toolhost_wasm", tracing::Level::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("toolhost"))
            .with_filter(targets)
    }

    /// Sends the spans still batched and stops the exporter.
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("toolhost: traces: {e}");
        }
    }
}
