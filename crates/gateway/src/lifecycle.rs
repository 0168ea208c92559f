//! Which protocol revision a mounted server speaks.
//!
//! How a server is opened is its `lifecycle` (`config::Opening`): `discover` by default over
//! Streamable HTTP, `initialize` by default over stdio (a Python SDK 2.x server answers the
//! probe over stdio and then cannot ask the client mid-call).
//!
//! - Over Streamable HTTP, `discover` asks `server/discover` first (2026-07-28: no handshake;
//!   every request carries its own `_meta` and the `MCP-Protocol-Version`, `Mcp-Method`,
//!   `Mcp-Name` and `x-mcp-header` headers, all sent by rmcp once the revision is chosen),
//!   and falls back to the `initialize` handshake of 2025-11-25 when the server answers the
//!   probe with a JSON-RPC error. A server that rejects the probe some other way (an HTTP
//!   error before any JSON-RPC) is dialled again with `initialize` (see `Mount::connect`).
//! - Over stdio, `discover` sends the same probe on the server's pipes, bounded by [`Probe`]:
//!   an error answer falls back to `initialize` on the same process, as over HTTP; a probe
//!   unanswered within `GatewayLimits::discover_wait` does too (a server that ignores an
//!   unknown request before `initialize`); a server that exits or closes stdout on the probe,
//!   or refuses `initialize` after it, is started once more and opened with `initialize`
//!   (`mount/stdio.rs`). A 2026-07-28 stdio server then gets the request `_meta` (revision,
//!   client info and capabilities) on every request, which rmcp adds once the revision is
//!   chosen, as over HTTP.

mod probe;

pub(crate) use probe::{Probe, Probing};

use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};

/// How to open a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    /// `server/discover`, falling back to `initialize` on a JSON-RPC error.
    Discover,
    /// The `initialize` handshake only.
    Initialize,
}

impl Lifecycle {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Self::Discover => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
            Self::Initialize => ClientLifecycleMode::Initialize,
        }
    }
}

/// Connects `handler` over `transport` with `lifecycle`.
pub(crate) async fn negotiate<H, T, E, A>(
    handler: H,
    transport: T,
    lifecycle: Lifecycle,
) -> Result<RunningService<RoleClient, H>, ClientInitializeError>
where
    H: rmcp::Service<RoleClient>,
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match lifecycle {
        Lifecycle::Initialize => rmcp::ServiceExt::serve(handler, transport).await,
        Lifecycle::Discover => {
            handler
                .serve_with_lifecycle(transport, lifecycle.mode())
                .await
        }
    }
}
