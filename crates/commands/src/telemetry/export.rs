//! The OTLP exporter of `[telemetry]` (the `otlp` feature, part of `team`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use toolgate_config::TelemetryConfig;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use super::{TelemetryError, endpoint};

/// The exporting side, kept to flush the last spans at exit.
pub(crate) struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Exports what is still buffered (at most a few seconds when the collector is gone).
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("telemetry: the last spans were not exported: {e}");
        }
    }
}

/// The layer that exports toolgate's spans, when telemetry is configured; an error says
/// which setting is wrong.
pub(crate) fn layer<S>(
    config: &TelemetryConfig,
) -> Result<Option<(impl Layer<S> + use<S>, Telemetry)>, TelemetryError>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    let Some(endpoint) = endpoint(config) else {
        return Ok(None);
    };
    // An https collector needs the TLS provider the rest of toolgate uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(url) = &endpoint {
        builder = builder.with_endpoint(url.clone());
    }
    if !config.headers.is_empty() {
        let headers: HashMap<String, String> = config.headers.clone().into_iter().collect();
        builder = builder.with_headers(headers);
    }
    let exporter = builder.build().map_err(|source| TelemetryError::Exporter {
        endpoint: endpoint
            .as_deref()
            .unwrap_or("the OTEL_EXPORTER_OTLP_* endpoint")
            .to_owned(),
        source,
    })?;
    let shown = endpoint.unwrap_or_else(|| "the OTEL_EXPORTER_OTLP_* endpoint".to_owned());
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(config.service_name.clone());
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(Warned {
            inner: exporter,
            endpoint: shown,
            warned: AtomicBool::new(false),
        })
        .with_resource(resource.build())
        .build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let tracer = provider.tracer("toolgate");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(
            Targets::new().with_target(toolgate_core::trace::TARGET, tracing::Level::INFO),
        );
    Ok(Some((layer, Telemetry { provider })))
}

/// The exporter, saying once on stderr when the collector cannot be reached (the SDK
/// itself stays silent) and once more when it can again.
#[derive(Debug)]
struct Warned<E> {
    inner: E,
    endpoint: String,
    warned: AtomicBool,
}

impl<E: SpanExporter> SpanExporter for Warned<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        match &result {
            Err(e) if !self.warned.swap(true, Ordering::Relaxed) => tracing::warn!(
                "telemetry: {spans} span(s) could not be exported to {}: {e}; check that the OTLP collector is running (later failures are not logged until an export succeeds)",
                self.endpoint
            ),
            Ok(()) if self.warned.swap(false, Ordering::Relaxed) => {
                tracing::warn!("telemetry: exporting to {} again", self.endpoint);
            }
            _ => {}
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
