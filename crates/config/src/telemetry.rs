//! `[telemetry]`: OpenTelemetry traces exported over OTLP.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// OpenTelemetry traces (see operations.md): one span per MCP request and per tool call,
/// downstream MCP calls as child spans, exported over OTLP/HTTP (protobuf). Off until an
/// endpoint is set here or in `OTEL_EXPORTER_OTLP_ENDPOINT` /
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`. User layers only: a project file may not choose
/// where toolgate sends what it does.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP traces endpoint, e.g. a collector's `http://127.0.0.1:4318/v1/traces`;
    /// a URL without a path gets `/v1/traces`. Unset = the standard `OTEL_EXPORTER_OTLP_*`
    /// variables, else no export.
    #[schemars(example = &"http://127.0.0.1:4318/v1/traces")]
    pub otlp_endpoint: Option<String>,
    /// Headers sent with each export, e.g. a collector's API key; `config show` masks their
    /// values.
    #[schemars(example = &BTreeMap::from([("x-api-key".to_owned(), "…".to_owned())]))]
    pub headers: BTreeMap<String, String>,
    /// The `service.name` resource attribute the spans carry; `OTEL_SERVICE_NAME` wins.
    pub service_name: String,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp_endpoint: None,
            headers: BTreeMap::new(),
            service_name: "toolgate".to_owned(),
        }
    }
}
