//! Interrupts arriving from other instances: one connection per store, outside the pool,
//! `LISTEN`ing on [`INTERRUPT_CHANNEL`]; started by the store's first lease, reconnected in
//! the background when it drops. A notification `<schema>/<session>` for this store's schema
//! cancels the calls of this process holding that session's lease ([`Holders`]).
//!
//! A holder whose listener was reconnecting when an interrupt was sent still stops: the
//! interrupt also marks the lease row, and the holder's renewal reads the mark.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agentscope_core::CancellationToken;
use agentscope_core::session::SessionError;
use futures::StreamExt;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_postgres::tls::{MakeTlsConnect, NoTls, TlsConnect};
use tokio_postgres::{AsyncMessage, Client, Socket};

use crate::db::{Db, Tls};
use crate::error::backend;
use crate::sql::INTERRUPT_CHANNEL;

/// The calls of this process holding leases: session id to (lease token, the call's
/// interrupt token).
#[derive(Default)]
pub(crate) struct Holders(Mutex<HashMap<String, Vec<(String, CancellationToken)>>>);

impl Holders {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<(String, CancellationToken)>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn add(&self, session: &str, token: &str, interrupt: &CancellationToken) {
        self.lock()
            .entry(session.to_owned())
            .or_default()
            .push((token.to_owned(), interrupt.clone()));
    }

    pub(crate) fn remove(&self, session: &str, token: &str) {
        let mut holders = self.lock();
        if let Some(entries) = holders.get_mut(session) {
            entries.retain(|(held, _)| held != token);
            if entries.is_empty() {
                holders.remove(session);
            }
        }
    }

    /// Cancels the calls of this process holding `session`'s lease.
    fn interrupt(&self, session: &str) {
        if let Some(entries) = self.lock().get(session) {
            for (_, interrupt) in entries {
                interrupt.cancel();
            }
        }
    }
}

/// The listening connection of one store, started on demand.
pub(crate) struct Listener {
    holders: Arc<Holders>,
    /// The task keeping the connection (and reconnecting it), once started.
    task: tokio::sync::Mutex<Option<AbortHandle>>,
}

/// A connection that listens: its client (dropping it closes the connection) and the task
/// reading its notifications.
struct Listening {
    _client: Client,
    reader: JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Listener {
    pub(crate) fn new(holders: Arc<Holders>) -> Self {
        Self {
            holders,
            task: tokio::sync::Mutex::new(None),
        }
    }

    /// Starts listening, unless started: the first connection is made now, so a server
    /// that cannot be reached fails the caller (and the next caller tries again).
    pub(crate) async fn ensure_started(&self, db: &Arc<Db>) -> Result<(), SessionError> {
        let mut task = self.task.lock().await;
        if task.is_some() {
            return Ok(());
        }
        let listening = listen(db, &self.holders).await.map_err(|error| {
            backend(
                None,
                "listening for session interrupts",
                &error,
                &db.endpoint,
            )
        })?;
        let handle = tokio::spawn(keep(listening, Arc::clone(db), Arc::clone(&self.holders)));
        *task = Some(handle.abort_handle());
        Ok(())
    }
}

impl Drop for Listener {
    /// The store is gone: stop listening.
    fn drop(&mut self) {
        if let Some(task) = self.task.get_mut().take() {
            task.abort();
        }
    }
}

/// Keeps a listening connection: when it ends, connects again (100 ms apart at first,
/// doubling up to 1 s) until the store is dropped.
async fn keep(mut listening: Listening, db: Arc<Db>, holders: Arc<Holders>) {
    loop {
        let _ = (&mut listening.reader).await;
        drop(listening);
        tracing::warn!(
            target: "agentscope_postgres",
            server = %db.endpoint.shown(),
            "the connection receiving session interrupts was lost; reconnecting (leases held \
             meanwhile see interrupts when they renew)"
        );
        let mut delay = Duration::from_millis(100);
        listening = loop {
            tokio::time::sleep(delay).await;
            match listen(&db, &holders).await {
                Ok(listening) => break listening,
                Err(error) => {
                    tracing::debug!(
                        target: "agentscope_postgres",
                        error = %db.endpoint.scrub(&error.to_string()),
                        "reconnecting the interrupt listener failed; trying again"
                    );
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
            }
        };
    }
}

async fn listen(db: &Db, holders: &Arc<Holders>) -> Result<Listening, tokio_postgres::Error> {
    match &db.tls {
        Tls::Off => listen_with(db, NoTls, holders).await,
        Tls::On(tls) => listen_with(db, tls.clone(), holders).await,
    }
}

/// Connects with `tls`, starts reading notifications, and `LISTEN`s.
async fn listen_with<T>(
    db: &Db,
    tls: T,
    holders: &Arc<Holders>,
) -> Result<Listening, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
    T::TlsConnect: Send,
    <T::TlsConnect as TlsConnect<Socket>>::Future: Send,
{
    let (client, mut connection) = db.endpoint.config().connect(tls).await?;
    let holders = Arc::clone(holders);
    let prefix = format!("{}/", db.schema);
    let reader = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    if let Some(session) = notification.payload().strip_prefix(&prefix) {
                        holders.interrupt(session);
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(
                        target: "agentscope_postgres",
                        %error,
                        "the interrupt listener's connection failed"
                    );
                    return;
                }
            }
        }
    });
    let listening = Listening {
        _client: client,
        reader,
    };
    listening
        ._client
        .batch_execute(&format!("LISTEN {INTERRUPT_CHANNEL}"))
        .await?;
    Ok(listening)
}
