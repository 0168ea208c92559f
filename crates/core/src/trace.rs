//! Trace context across MCP (`[telemetry]`): the W3C `traceparent` / `tracestate` a request
//! carries in its `_meta` (SEP-414) or its HTTP headers becomes the parent of the spans
//! toolgate opens for it, and a request toolgate sends on (a mounted server's tool) carries
//! its own span's context the same way.
//!
//! The spans are `tracing` spans of target [`TARGET`]; only the OpenTelemetry layer the
//! binary installs when telemetry is on listens to that target, so with telemetry off they
//! are disabled at their call site and cost a branch. Without an installed propagator, or in
//! a build without the `otel` feature, the functions here read and write nothing.

use serde_json::{Map, Value};
use tracing::Span;

/// The `tracing` target of every span meant for export (and of nothing else).
pub const TARGET: &str = "toolgate_trace";

/// Makes the trace context in `meta` (else in the headers `header` looks up) the parent of
/// `span`. Malformed values are ignored: the span starts a trace of its own.
pub fn adopt_parent(
    span: &Span,
    meta: &Map<String, Value>,
    header: impl Fn(&str) -> Option<String>,
) {
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        otel::adopt_parent(span, meta, header);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, meta, header);
}

/// Writes `span`'s trace context into `meta` (`traceparent`, `tracestate`), for a request
/// sent on to another server. Writes nothing when the span is not exported.
pub fn inject(span: &Span, meta: &mut Map<String, Value>) {
    #[cfg(feature = "otel")]
    if !span.is_disabled() {
        otel::inject(span, meta);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, meta);
}

/// Records how a span's work ended: its outcome, and an error status when it failed.
pub fn record_outcome(span: &Span, outcome: &str, failed: bool) {
    span.record("toolgate.outcome", outcome);
    if failed {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", outcome);
    }
}

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::propagation::{Extractor, Injector};
    use serde_json::{Map, Value};
    use tracing::Span;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// `_meta` keys of the W3C trace context (SEP-414).
    const KEYS: [&str; 2] = ["traceparent", "tracestate"];

    /// [`super::adopt_parent`] for a span that is exported.
    pub(super) fn adopt_parent(
        span: &Span,
        meta: &Map<String, Value>,
        header: impl Fn(&str) -> Option<String>,
    ) {
        let from_meta = meta.get("traceparent").and_then(Value::as_str).is_some();
        let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
            if from_meta {
                propagator.extract(&MetaFields(meta))
            } else {
                let found: Vec<(&str, String)> = KEYS
                    .iter()
                    .filter_map(|key| header(key).map(|value| (*key, value)))
                    .collect();
                propagator.extract(&Found(found))
            }
        });
        use opentelemetry::trace::TraceContextExt;
        if parent.span().span_context().is_valid() {
            // Fails only when the span is already started elsewhere; it is new here.
            let _ = span.set_parent(parent);
        }
    }

    /// [`super::inject`] for a span that is exported.
    pub(super) fn inject(span: &Span, meta: &mut Map<String, Value>) {
        let context = span.context();
        opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.inject_context(&context, &mut MetaFields(&mut *meta));
        });
    }

    struct MetaFields<M>(M);

    impl Extractor for MetaFields<&Map<String, Value>> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(Value::as_str)
        }

        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    impl Injector for MetaFields<&mut Map<String, Value>> {
        fn set(&mut self, key: &str, value: String) {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }

    /// Header values looked up ahead, for the propagator.
    struct Found<'a>(Vec<(&'a str, String)>);

    impl Extractor for Found<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
        }

        fn keys(&self) -> Vec<&str> {
            self.0.iter().map(|(k, _)| *k).collect()
        }
    }
}
