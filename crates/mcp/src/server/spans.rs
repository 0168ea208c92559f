//! Each MCP request's trace span, whose parent comes from the request's `_meta` or its HTTP
//! headers, and the outcome recorded on it.

use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use toolgate_core::trace;
use tracing::Instrument;

use super::ToolgateServer;

impl ToolgateServer {
    /// The span of one MCP request (OpenTelemetry's MCP conventions), exported when
    /// `[telemetry]` is on: its parent is the trace context the request carries in `_meta`,
    /// else in its HTTP headers.
    pub(super) fn request_span(
        &self,
        method: &'static str,
        target: Option<&str>,
        context: &RequestContext<RoleServer>,
    ) -> tracing::Span {
        let headers = context
            .extensions
            .get::<axum::http::request::Parts>()
            .map(|parts| &parts.headers);
        let span = tracing::info_span!(
            target: trace::TARGET,
            "mcp.request",
            otel.name = target.map_or_else(|| method.to_owned(), |t| format!("{method} {t}")),
            otel.kind = "server",
            mcp.method.name = method,
            gen_ai.tool.name = tracing::field::Empty,
            gen_ai.prompt.name = tracing::field::Empty,
            mcp.resource.uri = tracing::field::Empty,
            jsonrpc.request.id = %context.id,
            mcp.session.id = %self.session.id(),
            mcp.protocol.version = tracing::field::Empty,
            network.transport = if headers.is_some() { "tcp" } else { "pipe" },
            toolgate.outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        if span.is_disabled() {
            return span;
        }
        if let Some(target) = target {
            let field = match method {
                "tools/call" => "gen_ai.tool.name",
                "prompts/get" => "gen_ai.prompt.name",
                _ => "mcp.resource.uri",
            };
            span.record(field, target);
        }
        if let Some(version) = context.meta.protocol_version() {
            span.record("mcp.protocol.version", version.to_string());
        }
        trace::adopt_parent(&span, &context.meta.0.0, |key| {
            headers
                .and_then(|h| h.get(key))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        });
        span
    }
}

/// Runs a request's work inside its span and records how it ended.
pub(super) async fn traced<T>(
    span: tracing::Span,
    work: impl Future<Output = Result<T, McpError>>,
) -> Result<T, McpError> {
    let result = work.instrument(span.clone()).await;
    if let Err(e) = &result {
        trace::record_outcome(&span, &e.code.0.to_string(), true);
    }
    result
}
