//! `[telemetry]`: the OpenTelemetry layer of the log subscriber, exporting the spans of
//! [`toolgate_core::trace::TARGET`] over OTLP/HTTP (protobuf) in batches from a thread of
//! its own.

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

/// Where spans go: nowhere under `OTEL_SDK_DISABLED=true`, else the config's endpoint,
/// else the standard variables, else nowhere.
fn endpoint(config: &TelemetryConfig) -> Option<Option<String>> {
    if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    if let Some(url) = config
        .otlp_endpoint
        .as_deref()
        .filter(|u| !u.trim().is_empty())
    {
        return Some(Some(traces_url(url.trim())));
    }
    let set = |var: &str| std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
    // The exporter reads these variables itself.
    (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .then_some(None)
}

/// `url` as a traces endpoint: a bare collector address gets the standard `/v1/traces`.
fn traces_url(url: &str) -> String {
    let path = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split_once('/')
        .map_or("", |(_, path)| path);
    if path.is_empty() {
        format!("{}/v1/traces", url.trim_end_matches('/'))
    } else {
        url.to_owned()
    }
}

/// An OTLP exporter that cannot be built: the setting to fix.
#[derive(Debug, thiserror::Error)]
#[error(
    "telemetry: cannot export to {endpoint}: {source}; fix `[telemetry] otlp_endpoint` (an http(s) URL such as http://127.0.0.1:4318/v1/traces)"
)]
pub(crate) struct TelemetryError {
    /// The endpoint, or where the standard variables point.
    endpoint: String,
    /// Why the exporter refused it.
    #[source]
    source: opentelemetry_otlp::ExporterBuildError,
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
    let exporter = builder.build().map_err(|source| TelemetryError {
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

#[cfg(test)]
mod tests {
    use super::traces_url;

    #[test]
    fn a_bare_collector_address_gets_the_traces_path_and_a_full_url_is_kept() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://otel.example.com/custom/traces"),
            "https://otel.example.com/custom/traces"
        );
    }
}
