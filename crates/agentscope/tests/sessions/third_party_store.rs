//! A store written as a third-party author writes one, following `docs/sessions.md`,
//! "Writing a store": in memory, built only on the public `agentscope_core::session` items
//! (`AsyncSessionStore`, the lease defaults, `RenewalDeadline` and `keep_renewed`, the
//! `SessionError` constructors), and passing the same conformance suite as the built-in
//! stores, lease checks included.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use agentscope_core::CancellationToken;
use agentscope_core::session::{
    AgentState, AsyncSessionStore, DEFAULT_LEASE_TTL, LeaseHandle, RenewalDeadline, Renewed,
    SessionError, SessionLease, StateChange, clamp_lease_ttl, keep_renewed, renewal_runtime,
    validate_session_id,
};
use agentscope_test::session_store::leases::{self, LeaseHarness};
use futures::future::BoxFuture;

/// What the "server" holds: the sessions, and a lease per session.
#[derive(Default)]
struct Backend {
    sessions: BTreeMap<String, AgentState>,
    leases: BTreeMap<String, Lease>,
    /// Until when writes go unanswered (a stalled server).
    stalled_until: Option<Instant>,
}

struct Lease {
    token: String,
    expires: Instant,
    interrupted: bool,
}

/// The in-memory store: a handle on a shared backend (`Clone` is another instance).
#[derive(Clone)]
struct MemoryStore {
    backend: Arc<Mutex<Backend>>,
    ttl: Duration,
    /// The calls of this instance holding leases, by session, for interrupts.
    holders: Arc<Mutex<BTreeMap<String, CancellationToken>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemoryStore {
    fn new(backend: Arc<Mutex<Backend>>, ttl: Duration) -> Self {
        Self {
            backend,
            ttl: clamp_lease_ttl(ttl),
            holders: Arc::default(),
        }
    }

    /// The backend for a write, once no stall holds writes back.
    async fn write(&self) -> MutexGuard<'_, Backend> {
        loop {
            let until = lock(&self.backend).stalled_until;
            match until {
                Some(until) if Instant::now() < until => {
                    tokio::time::sleep_until(until.into()).await
                }
                _ => return lock(&self.backend),
            }
        }
    }

    /// Renews `token`'s lease on `session` once.
    async fn renew_once(&self, session: &str, token: &str) -> Result<Renewed, SessionError> {
        let mut backend = self.write().await;
        let ttl = self.ttl;
        match backend.leases.get_mut(session) {
            Some(lease) if lease.token == token => {
                lease.expires = Instant::now() + ttl;
                Ok(match lease.interrupted {
                    true => Renewed::Interrupted,
                    false => Renewed::Held,
                })
            }
            _ => Ok(Renewed::Lost),
        }
    }
}

impl AsyncSessionStore for MemoryStore {
    async fn save(&self, session: &str, change: &StateChange) -> Result<u64, SessionError> {
        validate_session_id(session)?;
        let mut backend = self.write().await;
        if let Some(fence) = &change.fence {
            match backend.leases.get(session) {
                Some(lease) if &lease.token == fence => {}
                _ => return Err(SessionError::lease_lost(session)),
            }
        }
        let state = change.apply(session, backend.sessions.get(session).cloned())?;
        let revision = state.revision;
        backend.sessions.insert(session.to_owned(), state);
        Ok(revision)
    }

    async fn load(&self, session: &str) -> Result<Option<AgentState>, SessionError> {
        validate_session_id(session)?;
        Ok(lock(&self.backend).sessions.get(session).cloned())
    }

    async fn delete(&self, session: &str) -> Result<bool, SessionError> {
        validate_session_id(session)?;
        Ok(self.write().await.sessions.remove(session).is_some())
    }

    async fn list(&self) -> Result<Vec<String>, SessionError> {
        Ok(lock(&self.backend).sessions.keys().cloned().collect())
    }

    async fn lease(
        &self,
        session: &str,
        interrupt: &CancellationToken,
    ) -> Result<Option<SessionLease>, SessionError> {
        validate_session_id(session)?;
        let runtime = renewal_runtime("memory", session)?;
        let token = uuid::Uuid::new_v4().to_string();
        let sent = Instant::now();
        {
            let mut backend = self.write().await;
            if backend
                .leases
                .get(session)
                .is_some_and(|lease| lease.expires > sent)
            {
                return Err(SessionError::busy(session));
            }
            let lease = Lease {
                token: token.clone(),
                expires: sent + self.ttl,
                interrupted: false,
            };
            backend.leases.insert(session.to_owned(), lease);
        }
        lock(&self.holders).insert(session.to_owned(), interrupt.clone());
        // The one renewal loop: this store writes only how to renew once.
        let renewal = {
            let (store, session, token) = (self.clone(), session.to_owned(), token.clone());
            let interrupt = interrupt.clone();
            let deadline = RenewalDeadline::new(self.ttl, sent);
            runtime.spawn(async move {
                let renew = || store.renew_once(&session, &token);
                keep_renewed("memory_store", &session, deadline, &interrupt, renew).await;
            })
        };
        let handle = MemoryLease {
            store: self.clone(),
            session: session.to_owned(),
            token: token.clone(),
            renewal,
        };
        Ok(Some(SessionLease::new(token, handle)))
    }

    async fn interrupt(&self, session: &str) -> Result<bool, SessionError> {
        validate_session_id(session)?;
        let live = {
            let mut backend = self.write().await;
            match backend.leases.get_mut(session) {
                Some(lease) if lease.expires > Instant::now() => {
                    lease.interrupted = true;
                    true
                }
                _ => false,
            }
        };
        if let Some(holder) = lock(&self.holders).get(session) {
            holder.cancel();
        }
        Ok(live)
    }
}

/// Gives a lease back: stops renewing it and deletes it if it is still this one.
struct MemoryLease {
    store: MemoryStore,
    session: String,
    token: String,
    renewal: tokio::task::JoinHandle<()>,
}

impl LeaseHandle for MemoryLease {
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
        self.renewal.abort();
        Box::pin(async move {
            lock(&self.store.holders).remove(&self.session);
            let mut backend = self.store.write().await;
            if backend
                .leases
                .get(&self.session)
                .is_some_and(|lease| lease.token == self.token)
            {
                backend.leases.remove(&self.session);
            }
            Ok(())
        })
    }
}

impl Drop for MemoryLease {
    fn drop(&mut self) {
        // A dropped call: stop renewing; the lease expires.
        self.renewal.abort();
    }
}

/// A new, empty backend with a store on it.
fn new_store() -> MemoryStore {
    MemoryStore::new(Arc::default(), DEFAULT_LEASE_TTL)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_third_party_store_passes_the_conformance_suite() {
    agentscope_test::session_store::conformance(new_store).await;
}

/// The lease checks' handles and faults, on one backend.
struct Harness {
    backend: Arc<Mutex<Backend>>,
}

impl Harness {
    fn new() -> Self {
        Self {
            backend: Arc::default(),
        }
    }
}

impl LeaseHarness for Harness {
    type Store = MemoryStore;

    fn ttl(&self) -> Duration {
        Duration::from_millis(600)
    }

    async fn store(&self) -> MemoryStore {
        MemoryStore::new(Arc::clone(&self.backend), self.ttl())
    }

    async fn take_over(&self, session: &str) {
        let mut backend = lock(&self.backend);
        let lease = backend.leases.get_mut(session).expect("a lease is held");
        lease.token = "newer-holder".to_owned();
        lease.expires = Instant::now() + Duration::from_secs(3600);
    }

    async fn expire(&self, session: &str) {
        let mut backend = lock(&self.backend);
        let lease = backend.leases.get_mut(session).expect("a lease is held");
        lease.expires = Instant::now();
    }

    async fn stall(&self, duration: Duration) {
        lock(&self.backend).stalled_until = Some(Instant::now() + duration);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_third_party_store_passes_the_lease_checks() {
    leases::run_all(&Harness::new()).await;
}
