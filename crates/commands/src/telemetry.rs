//! `[telemetry]`: the OpenTelemetry layer of the log subscriber, exporting the spans of
//! [`toolgate_core::trace::TARGET`] over OTLP/HTTP (protobuf) in batches from a thread of
//! its own. The exporter is in builds with the `otlp` feature (part of `team`); a build
//! without it refuses an `[telemetry] otlp_endpoint` and says how to get one that exports.

use toolgate_config::TelemetryConfig;

#[cfg(feature = "otlp")]
mod export;
#[cfg(feature = "otlp")]
pub(crate) use export::{Telemetry, layer};

/// Nothing to flush: this build exports no spans.
#[cfg(not(feature = "otlp"))]
pub(crate) struct Telemetry;

#[cfg(not(feature = "otlp"))]
impl Telemetry {
    /// Nothing to do.
    pub(crate) fn shutdown(self) {}
}

/// No exporter in this build: an endpoint in the config is refused; the standard
/// `OTEL_EXPORTER_OTLP_*` variables, which other programs share, are left alone.
#[cfg(not(feature = "otlp"))]
pub(crate) fn layer(
    config: &TelemetryConfig,
) -> Result<Option<(tracing_subscriber::layer::Identity, Telemetry)>, TelemetryError> {
    match endpoint(config) {
        Some(Some(url)) if config.otlp_endpoint.is_some() => Err(TelemetryError::NoExporter(url)),
        _ => Ok(None),
    }
}

/// Telemetry that cannot start: the setting to fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TelemetryError {
    /// The OTLP exporter refused the endpoint.
    #[cfg(feature = "otlp")]
    #[error(
        "telemetry: cannot export to {endpoint}: {source}; fix `[telemetry] otlp_endpoint` (an http(s) URL such as http://127.0.0.1:4318/v1/traces)"
    )]
    Exporter {
        /// The endpoint, or where the standard variables point.
        endpoint: String,
        /// Why the exporter refused it.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// An endpoint is set, and this build has no exporter.
    #[cfg(not(feature = "otlp"))]
    #[error(
        "telemetry: `[telemetry] otlp_endpoint = \"{0}\"`, but this build of toolgate has no OTLP exporter; install one that has (`cargo install toolgate --features team`) or remove the setting"
    )]
    NoExporter(String),
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

    #[cfg(not(feature = "otlp"))]
    #[test]
    fn an_endpoint_is_refused_with_the_feature_that_exports() {
        let config = toolgate_config::TelemetryConfig {
            otlp_endpoint: Some("http://127.0.0.1:4318".to_owned()),
            ..Default::default()
        };
        let Err(refused) = super::layer(&config) else {
            panic!("an endpoint without an exporter was accepted");
        };
        assert!(refused.to_string().contains("--features team"), "{refused}");
    }
}
