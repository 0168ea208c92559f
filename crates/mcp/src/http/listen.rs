//! The accept loop of `serve --http` and its budgets against connections that hold a socket
//! without sending a request (slowloris): a deadline for each request head, a cap on the
//! connections waiting for one (past it the longest-waiting is closed), and the open-file
//! limit raised to its hard limit, since every connection is a file.
//!
//! `axum::serve` sets no header deadline, so connections are served here with hyper's HTTP/1
//! connection directly, as `axum::serve` does otherwise (upgrades, graceful shutdown).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Budgets of the HTTP listener against connections that send no request.
#[derive(Debug, Clone)]
pub struct ListenerLimits {
    /// Longest a connection may take to send a request head, counted from when it connects
    /// or its last response ended (so an idle keep-alive connection closes after it too).
    pub header_timeout: Duration,
    /// Most connections waiting for a request head at once; past it the one waiting longest
    /// is closed for the newcomer, so a flood of silent connections cannot lock out a client
    /// that sends its request as soon as it connects.
    pub max_waiting: usize,
}

impl Default for ListenerLimits {
    fn default() -> Self {
        Self {
            // hyper's own default once a timer is set: a client sends its head in one packet,
            // and a pooled connection idle this long is cheap to open again.
            header_timeout: Duration::from_secs(30),
            // A quarter of the usual soft limit of 1,024 files, should raising it fail, so
            // sessions, mounted servers and files keep the rest; a flood would have to open
            // this many connections within a client's round trip to push the client out.
            max_waiting: 256,
        }
    }
}

/// Pause after an accept error other than a dropped connection (the process is out of
/// files, say), so the loop does not spin while the oldest waiting connection closes.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Raises the soft open-file limit to the hard one: the usual soft limit of 1,024 is what a
/// flood of idle connections exhausted, and unprivileged processes may raise it that far.
pub(crate) fn raise_open_files() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current == limit.maximum {
        return;
    }
    let raised = Rlimit {
        current: limit.maximum,
        maximum: limit.maximum,
    };
    if let Err(e) = setrlimit(Resource::Nofile, raised) {
        // macOS refuses an unlimited soft limit; the cap on waiting connections still holds.
        tracing::debug!(%e, ?limit, "could not raise the open-file limit");
    }
}

/// Serves `router` on `listener` until `shutdown`, then waits for open connections to end.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: &ListenerLimits,
    shutdown: CancellationToken,
) {
    let waiting = Arc::new(Waiting {
        max: limits.max_waiting.max(1),
        queue: Mutex::default(),
    });
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // Each connection holds a sender; `recv` ends when the last one is gone.
    let (open, mut all_closed) = tokio::sync::mpsc::channel::<()>(1);
    loop {
        let (stream, remote) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    if !is_connection_error(&e) {
                        tracing::warn!(%e, "cannot accept a connection; closing the longest-waiting one");
                        waiting.close_oldest();
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                    continue;
                }
            },
        };
        // Responses are small SSE events written in pieces: without TCP_NODELAY, Nagle and
        // the client's delayed ACK add ~40 ms to every call.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%e, "could not set TCP_NODELAY");
        }
        let conn = Arc::new(Connection {
            waiting: Arc::clone(&waiting),
            close: CancellationToken::new(),
            ticket: Mutex::new(None),
        });
        conn.wait();
        let close = conn.close.clone();
        let tower = TowerToHyperService::new(router.clone());
        let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
            conn.head_arrived();
            // For extractors that want the client's address (`ConnectInfo<SocketAddr>`).
            req.extensions_mut().insert(ConnectInfo(remote));
            let response = hyper::service::Service::call(&tower, req);
            let conn = Arc::clone(&conn);
            async move {
                let response = response.await?;
                Ok::<_, Infallible>(response.map(|body| Tracked { body, conn }))
            }
        });
        let connection = http1
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        let (shutdown, open) = (shutdown.clone(), open.clone());
        tokio::spawn(async move {
            let _open = open;
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::trace!(%e, %remote, "connection ended");
                    }
                }
                // Pushed out by newer waiting connections: dropping it closes the socket.
                () = close.cancelled() => {}
                () = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(open);
    let _ = all_closed.recv().await;
}

/// Errors of one connection that went away before it was accepted: nothing to back off from.
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    )
}

/// Connections waiting for a request head, by ticket (oldest first), with what closes each.
struct Waiting {
    max: usize,
    queue: Mutex<(u64, BTreeMap<u64, CancellationToken>)>,
}

impl Waiting {
    /// Enters `close` as the newest waiting connection, closing the oldest when full.
    fn enter(&self, close: &CancellationToken) -> u64 {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let (last, tickets) = &mut *queue;
        if tickets.len() >= self.max
            && let Some((_, oldest)) = tickets.pop_first()
        {
            oldest.cancel();
        }
        *last += 1;
        tickets.insert(*last, close.clone());
        *last
    }

    fn leave(&self, ticket: u64) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.1.remove(&ticket);
    }

    fn close_oldest(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, oldest)) = queue.1.pop_first() {
            oldest.cancel();
        }
    }
}

/// One connection's place among the waiting ones: it waits from when it connects until its
/// request head arrives, and again from when its response ends.
struct Connection {
    waiting: Arc<Waiting>,
    close: CancellationToken,
    ticket: Mutex<Option<u64>>,
}

impl Connection {
    fn wait(&self) {
        let ticket = self.waiting.enter(&self.close);
        let old = self
            .ticket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(ticket);
        if let Some(old) = old {
            self.waiting.leave(old);
        }
    }

    fn head_arrived(&self) {
        let ticket = self
            .ticket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(ticket) = ticket {
            self.waiting.leave(ticket);
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.head_arrived();
    }
}

/// A response body that puts its connection back among the waiting ones when it ends:
/// hyper drops a body once it is written (or the connection is gone).
struct Tracked {
    body: Body,
    conn: Arc<Connection>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.conn.wait();
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_soft_open_file_limit_is_raised_to_the_hard_one() {
        use rustix::process::{Resource, getrlimit};
        raise_open_files();
        let limit = getrlimit(Resource::Nofile);
        assert_eq!(limit.current, limit.maximum);
    }

    #[test]
    fn a_full_queue_closes_its_oldest_connection_for_a_new_one() {
        let waiting = Waiting {
            max: 2,
            queue: Mutex::default(),
        };
        let closers: Vec<CancellationToken> = (0..3).map(|_| CancellationToken::new()).collect();
        let first = waiting.enter(&closers[0]);
        waiting.enter(&closers[1]);
        waiting.leave(first);
        waiting.enter(&closers[2]);
        assert!(
            closers.iter().all(|c| !c.is_cancelled()),
            "room after a leave"
        );
        waiting.enter(&CancellationToken::new());
        assert!(
            closers[1].is_cancelled(),
            "the oldest waiting one is closed"
        );
        assert!(!closers[2].is_cancelled());
    }
}
