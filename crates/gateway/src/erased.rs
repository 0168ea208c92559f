//! One transport type for every connection.
//!
//! rmcp's client loop is generic over its transport, so each kind of connection (stdio,
//! stdio behind the `server/discover` probe, Streamable HTTP with and without a login)
//! compiled the whole loop again, with every task it spawns (about 4 % of this crate's
//! build, 100 s → 96 s). [`Erased`] puts the transport behind a box, so the loop is compiled
//! once; a message pays one small allocation, next to its JSON encoding.

use std::borrow::Cow;

use futures::future::BoxFuture;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// A transport of any kind behind a box.
pub(crate) struct Erased(Box<dyn ErasedTransport>);

impl Erased {
    pub(crate) fn new<T: Transport<RoleClient> + 'static>(transport: T) -> Self {
        Self(Box::new(transport))
    }
}

/// The transport's error, its own error as the source (rmcp finds a login challenge in the
/// chain of sources).
#[derive(Debug)]
pub(crate) struct ErasedError(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for ErasedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ErasedError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// [`Transport`] with boxed futures, so it can be a trait object.
trait ErasedTransport: Send {
    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> BoxFuture<'static, Result<(), ErasedError>>;
    fn receive(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<RoleClient>>>;
    fn close(&mut self) -> BoxFuture<'_, Result<(), ErasedError>>;
}

impl<T: Transport<RoleClient> + 'static> ErasedTransport for T {
    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> BoxFuture<'static, Result<(), ErasedError>> {
        let sent = Transport::send(self, item);
        Box::pin(async move { sent.await.map_err(|e| ErasedError(Box::new(e))) })
    }

    fn receive(&mut self) -> BoxFuture<'_, Option<RxJsonRpcMessage<RoleClient>>> {
        Box::pin(Transport::receive(self))
    }

    fn close(&mut self) -> BoxFuture<'_, Result<(), ErasedError>> {
        Box::pin(async move {
            Transport::close(self)
                .await
                .map_err(|e| ErasedError(Box::new(e)))
        })
    }
}

impl Transport<RoleClient> for Erased {
    type Error = ErasedError;

    // Errors read "Transport [transport] error: …" (`mount::call::tidy` drops the prefix).
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("transport")
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.0.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.0.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}
