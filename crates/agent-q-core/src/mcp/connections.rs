//! The server's accept loop: what keeps a flood of connections from taking Emacs's file
//! descriptors.
//!
//! The server lives in Emacs's process, whose descriptor limit is typically 1,024; every
//! connection holds one. Anyone on the machine can connect to 127.0.0.1 without the token, so:
//!
//! - A connection that has not yet sent an authorised request is *unproven*. At most
//!   [`MAX_UNPROVEN_CONNECTIONS`] of them are open at once: a new connection takes the place of
//!   the oldest unproven one that has had [`EVICTION_AGE`] to send its request, which is
//!   closed; when there is none, the new connection is closed at once. So connections without
//!   the token hold at most that many descriptors, cannot keep a client with the token out for
//!   long, and a burst of a real client's own connections does not push them out.
//! - At most [`MAX_CONNECTIONS`] connections are open at once, proven or not (each call waiting
//!   for the user holds one: HTTP/1.1 has one request per connection at a time). When they are
//!   all proven (only token holders can do that), a new connection is accepted and closed at
//!   once.
//! - A request's head must arrive within [`HEADER_READ_TIMEOUT`], and an idle keep-alive
//!   connection is closed after the same time (hyper's header read timer runs from the moment a
//!   connection waits for a request). A response being streamed (an SSE stream, a call waiting
//!   for the user) is not idle and is not cut.
//! - A refused request (no token, wrong Host or Origin) closes its connection (see
//!   [`super::security`]).
//! - Accepted sockets get `TCP_NODELAY`: responses are small and latency matters more than
//!   packet count.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_service::Service;

/// The most connections open at once, well below the usual limit of 1,024 descriptors of the
/// Emacs process the server lives in. Room for every call that may wait
/// ([`super::hub::MAX_PENDING_CALLS`]) and the clients' other requests and streams.
pub const MAX_CONNECTIONS: usize = 256;

/// The most connections open at once that have not sent an authorised request.
pub const MAX_UNPROVEN_CONNECTIONS: usize = 64;

/// How long a connection may take to send a request's head, and how long an idle keep-alive
/// connection stays open.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an unproven connection is left to send its request before a new connection may
/// take its place. A local client sends its request within a millisecond or two of connecting;
/// while every unproven connection is younger than this, a new one is closed at once, so a
/// flood can keep new clients out for at most this long after each burst.
pub const EVICTION_AGE: Duration = Duration::from_millis(50);

/// How long the loop pauses after a failed accept (out of descriptors, say) before it retries.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// One open connection, as the [`Gate`] tracks it.
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    opened: std::time::Instant,
    proven: AtomicBool,
    evict: CancellationToken,
}

impl Slot {
    /// Mark the connection as having sent an authorised request.
    pub(crate) fn prove(&self) {
        self.proven.store(true, Ordering::Relaxed);
    }
}

#[derive(Debug, Default)]
struct GateInner {
    next_id: u64,
    open: VecDeque<Arc<Slot>>,
}

/// Admits connections up to a limit, and unproven ones up to another, evicting the oldest
/// unproven connection to make room.
#[derive(Debug)]
pub(crate) struct Gate {
    limit: usize,
    unproven_limit: usize,
    eviction_age: Duration,
    inner: Mutex<GateInner>,
}

impl Gate {
    pub(crate) fn new(limit: usize, unproven_limit: usize, eviction_age: Duration) -> Arc<Gate> {
        Arc::new(Gate {
            limit,
            unproven_limit: unproven_limit.min(limit),
            eviction_age,
            inner: Mutex::new(GateInner::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, GateInner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A slot for a new connection, or `None` when it must be closed at once. When the gate is
    /// full, or holds as many unproven connections as it may, the oldest unproven connection is
    /// told to close and gives up its place.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admission> {
        let mut inner = self.lock();
        let unproven = inner
            .open
            .iter()
            .filter(|slot| !slot.proven.load(Ordering::Relaxed))
            .count();
        if inner.open.len() >= self.limit || unproven >= self.unproven_limit {
            let oldest = inner
                .open
                .iter()
                .position(|slot| !slot.proven.load(Ordering::Relaxed) && slot.opened.elapsed() >= self.eviction_age)?;
            if let Some(evicted) = inner.open.remove(oldest) {
                evicted.evict.cancel();
            }
        }
        inner.next_id += 1;
        let slot = Arc::new(Slot {
            id: inner.next_id,
            opened: std::time::Instant::now(),
            proven: AtomicBool::new(false),
            evict: CancellationToken::new(),
        });
        inner.open.push_back(slot.clone());
        Some(Admission {
            gate: self.clone(),
            slot,
        })
    }

    /// How many connections hold a place.
    pub(crate) fn open_count(&self) -> usize {
        self.lock().open.len()
    }

    fn release(&self, id: u64) {
        self.lock().open.retain(|slot| slot.id != id);
    }
}

/// A connection's place in the [`Gate`], given back when dropped.
#[derive(Debug)]
pub(crate) struct Admission {
    gate: Arc<Gate>,
    slot: Arc<Slot>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.gate.release(self.slot.id);
    }
}

/// The middleware, inside the security layer, that marks a connection proven: it only sees
/// requests the security layer let through.
pub(crate) async fn prove(request: Request, next: Next) -> Response {
    if let Some(slot) = request.extensions().get::<Arc<Slot>>() {
        slot.prove();
    }
    next.run(request).await
}

/// Accept connections on LISTENER and serve ROUTER on each, within GATE's limit, until STOP is
/// cancelled; then close the listener (dropping LISTENING, so that its receiver learns the port
/// is free), ask every connection to finish its response and close, and return when all have
/// closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    gate: Arc<Gate>,
    stop: CancellationToken,
    listening: Option<std::sync::mpsc::Sender<()>>,
) {
    let tracker = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors or a connection reset before it was accepted: wait a
                // little rather than spin.
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let Some(admission) = gate.admit() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        tracker.spawn(serve_connection(stream, router.clone(), admission, stop.clone()));
    }
    drop(listener);
    drop(listening);
    tracker.close();
    tracker.wait().await;
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    router: Router,
    admission: Admission,
    stop: CancellationToken,
) {
    let slot = admission.slot.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(slot.clone());
        let mut router = router.clone();
        async move {
            Ok::<_, Infallible>(
                router
                    .call(request.map(axum::body::Body::new))
                    .await
                    .unwrap_or_else(|never| match never {}),
            )
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = admission.slot.evict.cancelled() => {}
        _ = stop.cancelled() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
    drop(admission);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_young_unproven_connection_is_not_evicted() {
        let gate = Gate::new(5, 2, Duration::from_secs(3600));
        let _a = gate.admit().unwrap();
        let _b = gate.admit().unwrap();
        assert!(
            gate.admit().is_none(),
            "closed at once rather than push out a new connection"
        );
        assert!(!_a.slot.evict.is_cancelled());
    }

    #[test]
    fn unproven_connections_make_room_for_new_ones_up_to_their_own_limit() {
        let gate = Gate::new(5, 2, Duration::ZERO);
        let proven = gate.admit().unwrap();
        proven.slot.prove();
        let a = gate.admit().unwrap();
        let b = gate.admit().unwrap();
        assert_eq!(gate.open_count(), 3);
        let c = gate.admit().expect("evicts the oldest unproven");
        assert!(a.slot.evict.is_cancelled());
        assert!(!b.slot.evict.is_cancelled() && !c.slot.evict.is_cancelled());
        assert!(!proven.slot.evict.is_cancelled());
        assert_eq!(gate.open_count(), 3, "never more than 2 unproven");
    }

    #[test]
    fn the_gate_evicts_the_oldest_unproven_connection_and_keeps_proven_ones() {
        let gate = Gate::new(3, 3, Duration::ZERO);
        let first = gate.admit().unwrap();
        let second = gate.admit().unwrap();
        let third = gate.admit().unwrap();
        first.slot.prove();
        assert_eq!(gate.open_count(), 3);
        let fourth = gate.admit().expect("an unproven connection makes room");
        assert!(!first.slot.evict.is_cancelled(), "a proven connection stays");
        assert!(second.slot.evict.is_cancelled(), "the oldest unproven one goes");
        assert!(!third.slot.evict.is_cancelled());
        assert_eq!(gate.open_count(), 3);
        third.slot.prove();
        fourth.slot.prove();
        assert!(gate.admit().is_none(), "all proven: the new connection is refused");
        drop(second);
        assert_eq!(gate.open_count(), 3, "an evicted slot was already given back");
        drop(first);
        assert_eq!(gate.open_count(), 2);
        assert!(gate.admit().is_some());
    }
}
