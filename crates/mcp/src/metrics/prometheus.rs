//! The Prometheus registry of `serve --http`.

use std::fmt::Write as _;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use toolgate_core::ToolOutput;

use super::{HealthSource, NoMetrics};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

/// The metrics of one `serve --http`. Cheap to update from any task.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    duration: Family<ServerLabel, Histogram>,
    result_chars: Family<ServerLabel, Counter>,
    spilled_results: Family<ServerLabel, Counter>,
    spilled_bytes: Family<ServerLabel, Counter>,
    sessions_opened: Counter,
    sessions_live: Gauge<i64, AtomicI64>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Fresh metrics; `health` (when mounted servers exist) is read at each scrape. `Err`
    /// only in a build without the `prometheus` feature.
    pub fn new(health: Option<HealthSource>) -> Result<Self, NoMetrics> {
        let mut registry = Registry::with_prefix("toolgate");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "Tool calls answered, by server, tool and outcome (ok or error)",
            calls.clone(),
        );
        // 1 ms to ~33 s: a `read_file` to a long build.
        let duration = Family::<ServerLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 16))
        });
        registry.register_with_unit(
            "tool_call_duration",
            "Time from a tools/call's arrival to its result, by server",
            Unit::Seconds,
            duration.clone(),
        );
        let result_chars = Family::<ServerLabel, Counter>::default();
        registry.register(
            "result_chars",
            "Characters of tool results sent to clients, by server",
            result_chars.clone(),
        );
        let spilled_results = Family::<ServerLabel, Counter>::default();
        registry.register(
            "spilled_results",
            "Results the output budget cut, their whole text kept in a spill file, by server",
            spilled_results.clone(),
        );
        let spilled_bytes = Family::<ServerLabel, Counter>::default();
        registry.register_with_unit(
            "spilled",
            "Bytes written to spill files instead of the conversation, by server",
            Unit::Bytes,
            spilled_bytes.clone(),
        );
        let sessions_opened = Counter::default();
        registry.register(
            "sessions_opened",
            "MCP sessions opened",
            sessions_opened.clone(),
        );
        let sessions_live = Gauge::<i64, AtomicI64>::default();
        registry.register(
            "sessions_live",
            "MCP sessions open now",
            sessions_live.clone(),
        );
        registry.register_collector(Box::new(Build));
        if let Some(health) = health {
            registry.register_collector(Box::new(Mounted(health)));
        }
        Ok(Self {
            registry,
            calls,
            duration,
            result_chars,
            spilled_results,
            spilled_bytes,
            sessions_opened,
            sessions_live,
        })
    }

    /// Counts one answered `tools/call` of `tool` that took `took`.
    pub fn record_call(&self, tool: &str, server: &str, output: &ToolOutput, took: Duration) {
        let server = server.to_owned();
        self.calls
            .get_or_create(&CallLabels {
                server: server.clone(),
                tool: tool.to_owned(),
                outcome: if output.is_error { "error" } else { "ok" },
            })
            .inc();
        let label = ServerLabel { server };
        self.duration
            .get_or_create(&label)
            .observe(took.as_secs_f64());
        let chars = u64::try_from(output.text.chars().count()).unwrap_or(u64::MAX);
        self.result_chars.get_or_create(&label).inc_by(chars);
        if !output.spills.is_empty() {
            self.spilled_results.get_or_create(&label).inc();
            let bytes = output.spills.iter().map(|s| s.bytes).sum();
            self.spilled_bytes.get_or_create(&label).inc_by(bytes);
        }
    }

    /// Counts a session opened; [`Metrics::session_closed`] when it ends.
    pub fn session_opened(&self) {
        self.sessions_opened.inc();
        self.sessions_live.inc();
    }

    /// Counts a session ended.
    pub fn session_closed(&self) {
        self.sessions_live.dec();
    }

    /// The OpenMetrics text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            // Writing to a String cannot fail; a collector that did is reported in place.
            let _ = writeln!(text, "# toolgate: a metric could not be encoded\n# EOF");
        }
        text
    }
}

/// `toolgate_build_info{version="…"} 1`.
#[derive(Debug)]
struct Build;

impl Collector for Build {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let gauge = ConstGauge::new(1_i64);
        let mut metric = encoder.encode_descriptor(
            "build_info",
            "The running toolgate's version",
            None,
            gauge.metric_type(),
        )?;
        let labels = [("version", env!("CARGO_PKG_VERSION"))];
        gauge.encode(metric.encode_family(&labels)?)
    }
}

/// The mounted servers, read at each scrape.
struct Mounted(HealthSource);

impl std::fmt::Debug for Mounted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mounted")
    }
}

impl Collector for Mounted {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let servers = (self.0)();
        {
            let up = ConstGauge::new(0_i64);
            let mut metric = encoder.encode_descriptor(
                "mounted_server_up",
                "1 when the mounted server is ready to answer calls, else 0; `state` says where it is",
                None,
                up.metric_type(),
            )?;
            for server in &servers {
                let labels = [("server", server.name.as_str()), ("state", server.state)];
                ConstGauge::new(i64::from(server.state == "ready"))
                    .encode(metric.encode_family(&labels)?)?;
            }
        }
        let tools = ConstGauge::new(0_i64);
        let mut metric = encoder.encode_descriptor(
            "mounted_server_tools",
            "Tools mounted from the server",
            None,
            tools.metric_type(),
        )?;
        for server in &servers {
            let labels = [("server", server.name.as_str())];
            ConstGauge::new(i64::try_from(server.tools).unwrap_or(i64::MAX))
                .encode(metric.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ServerHealth;

    #[test]
    fn calls_are_counted_by_server_tool_and_outcome() {
        let health: HealthSource = Arc::new(|| {
            vec![ServerHealth {
                name: "github".to_owned(),
                state: "ready",
                tools: 3,
            }]
        });
        let metrics = Metrics::new(Some(health)).unwrap();
        metrics.record_call(
            "read_file",
            "toolgate",
            &ToolOutput::text("héllo"),
            Duration::from_millis(3),
        );
        // A server with `prefix = "never"`: its tools keep their own names.
        metrics.record_call(
            "search",
            "github",
            &ToolOutput::error("boom"),
            Duration::from_millis(40),
        );
        metrics.session_opened();
        let text = metrics.encode();
        for line in [
            "toolgate_tool_calls_total{server=\"toolgate\",tool=\"read_file\",outcome=\"ok\"} 1",
            "toolgate_tool_calls_total{server=\"github\",tool=\"search\",outcome=\"error\"} 1",
            "toolgate_result_chars_total{server=\"toolgate\"} 5",
            "toolgate_tool_call_duration_seconds_count{server=\"github\"} 1",
            "toolgate_sessions_live 1",
            "toolgate_mounted_server_up{server=\"github\",state=\"ready\"} 1",
            "toolgate_mounted_server_tools{server=\"github\"} 3",
            "toolgate_build_info{version=\"",
        ] {
            assert!(text.contains(line), "missing `{line}` in:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
