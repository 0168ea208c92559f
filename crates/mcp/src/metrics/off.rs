//! A build without Prometheus metrics: no [`Metrics`] value exists.

use std::time::Duration;

use toolgate_core::ToolOutput;

use super::{HealthSource, NoMetrics};

/// The metrics of one `serve --http`: left out of this build (the `prometheus` feature,
/// part of `team`).
#[derive(Debug)]
pub enum Metrics {}

impl Metrics {
    /// Always `Err`: this build has no metrics.
    pub fn new(_health: Option<HealthSource>) -> Result<Self, NoMetrics> {
        Err(NoMetrics)
    }

    /// Unreachable: no value exists.
    pub fn record_call(&self, _tool: &str, _server: &str, _output: &ToolOutput, _took: Duration) {
        match *self {}
    }

    /// Unreachable: no value exists.
    pub fn session_opened(&self) {
        match *self {}
    }

    /// Unreachable: no value exists.
    pub fn session_closed(&self) {
        match *self {}
    }

    /// Unreachable: no value exists.
    pub fn encode(&self) -> String {
        match *self {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn metrics_are_refused_with_the_feature_that_has_them() {
        let refused = super::Metrics::new(None).unwrap_err().to_string();
        assert!(refused.contains("--features team"), "{refused}");
    }
}
