//! The gateway's side of one connection: what it tells a server about itself, and what it
//! does with the server's notifications — `tools/list_changed` wakes a refetch, progress
//! goes to the call that asked for it, log messages go to toolgate's log.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

#[allow(deprecated)]
use rmcp::model::LoggingMessageNotificationParam;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;
use toolgate_core::{Progress, ProgressSink};

/// Progress sinks of the calls in flight, by the progress token of their request.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    sinks: Mutex<HashMap<ProgressToken, ProgressSink>>,
}

impl ProgressRoutes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, ProgressSink>> {
        self.sinks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends progress for `token` to `sink` until the returned guard is dropped.
    pub(crate) fn route(self: &Arc<Self>, token: ProgressToken, sink: ProgressSink) -> RouteGuard {
        self.lock().insert(token.clone(), sink);
        RouteGuard {
            routes: Arc::clone(self),
            token,
        }
    }

    fn deliver(&self, params: ProgressNotificationParam) {
        let sink = self.lock().get(&params.progress_token).cloned();
        if let Some(sink) = sink {
            sink(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}

/// Unroutes a call's progress when the call ends.
pub(crate) struct RouteGuard {
    routes: Arc<ProgressRoutes>,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

/// The rmcp client handler of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) server: String,
    pub(crate) list_changed: Arc<Notify>,
    pub(crate) progress: Arc<ProgressRoutes>,
}

impl Handler {
    pub(crate) fn new(server: &str) -> Self {
        Self {
            server: server.to_owned(),
            list_changed: Arc::new(Notify::new()),
            progress: Arc::new(ProgressRoutes::default()),
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // No sampling, roots or elicitation: toolgate has no model or user of its own here.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.server, "tools/list_changed");
        // A stored permit: a change announced during a refetch causes one more refetch.
        self.list_changed.notify_one();
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.deliver(params);
    }

    // Logging is deprecated by SEP-2577 but 2025 servers still send it.
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.server, level = ?params.level, data = %params.data, "server log");
    }
}
