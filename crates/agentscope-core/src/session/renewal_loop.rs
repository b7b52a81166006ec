//! [`keep_renewed`]: the one renewal loop of a lease held by a call, for a store that renews
//! each lease in a task of its own; the store supplies only how to renew once.

use std::future::Future;
use std::time::Instant;

use crate::CancellationToken;

use super::{RenewalDeadline, SessionError};

/// What renewing a lease once found (the answer of the store's "renew once" operation given
/// to [`keep_renewed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewed {
    /// The lease is still held, and lives another time to live from the renewal.
    Held,
    /// The lease is still held, renewed, and an [`interrupt`](super::SessionStore::interrupt)
    /// marked it: the holder's call is interrupted.
    Interrupted,
    /// Another call holds the session (the lease expired and was taken), or none does: the
    /// lease is lost, and the holder's call is stopped.
    Lost,
}

/// Keeps a lease renewed until it is lost, following [`RenewalDeadline`]: run it in a task
/// of its own when the lease is taken, and abort the task when the lease is given back.
///
/// - Every third of the time to live (from the last renewal sent), it calls `renew_once`,
///   which renews the lease once in the store (a conditional write: only while this lease's
///   token holds the session).
/// - [`Renewed::Interrupted`] cancels `interrupt`: the call ends as a local interrupt
///   ends it.
/// - [`Renewed::Lost`] cancels `interrupt`, logs it, and ends the loop.
/// - A renewal that fails (`Err`), or is not answered before the call must stop
///   ([`RenewalDeadline::stop_at`]: no renewal is waited for beyond it), is logged and tried
///   again at the next round. Once the call must stop, `interrupt` is cancelled and it is
///   logged, once. Renewing goes on afterwards, quietly: if the store answers again and no
///   other call took the session, the stopped call's last save and its release go through.
///
/// `store` names the store in the log (a crate name, `agentscope_redis`); events are logged
/// at WARN under the target `agentscope_core::session`, with fields `store` and `session`.
/// The loop runs on tokio (its timers): call it inside a tokio runtime.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::time::{Duration, Instant};
/// use agentscope_core::CancellationToken;
/// use agentscope_core::session::{RenewalDeadline, Renewed, keep_renewed};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// let call = CancellationToken::new();
/// let renewals = AtomicU32::new(0);
/// let lease = RenewalDeadline::new(Duration::from_millis(30), Instant::now());
/// // The store's "renew once": held twice, then another call took the session.
/// keep_renewed("my_store", "s1", lease, &call, || async {
///     match renewals.fetch_add(1, Ordering::SeqCst) {
///         0 | 1 => Ok(Renewed::Held),
///         _ => Ok(Renewed::Lost),
///     }
/// })
/// .await;
/// assert_eq!(renewals.load(Ordering::SeqCst), 3);
/// assert!(call.is_cancelled());
/// # Ok::<(), std::io::Error>(())
/// # })?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub async fn keep_renewed<F, Fut>(
    store: &'static str,
    session: &str,
    mut lease: RenewalDeadline,
    interrupt: &CancellationToken,
    mut renew_once: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Renewed, SessionError>>,
{
    let ttl = lease.ttl();
    let period = ttl / 3;
    let expired = |lease: &mut RenewalDeadline| {
        if lease.stop_if_expired(Instant::now(), interrupt) {
            tracing::warn!(
                target: "agentscope_core::session",
                store,
                session = %session,
                ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
                "the session's lease could not be renewed before it would have expired; \
                 stopping this call (another call may take the session, and this call's \
                 saves are refused once one does)"
            );
        }
    };
    loop {
        // Woken when the call must stop at the latest.
        let mut wake = lease.next_renewal(Instant::now());
        if !lease.is_stopped() {
            wake = wake.min(lease.stop_at());
        }
        tokio::time::sleep_until(wake.into()).await;
        expired(&mut lease);
        let sent = Instant::now();
        // Not waited for beyond the moment the call must stop.
        let wait = match lease.is_stopped() {
            true => period,
            false => lease.stop_at().saturating_duration_since(sent),
        };
        let renewed = match tokio::time::timeout(wait, renew_once()).await {
            Ok(renewed) => renewed,
            Err(_) => Err(SessionError::backend_message(
                Some(session),
                format_args!("renewing the session's lease: no answer within {wait:?}"),
            )),
        };
        match renewed {
            Ok(Renewed::Held) => lease.renewed(sent),
            Ok(Renewed::Interrupted) => {
                lease.renewed(sent);
                interrupt.cancel();
            }
            Ok(Renewed::Lost) => {
                tracing::warn!(
                    target: "agentscope_core::session",
                    store,
                    session = %session,
                    "the session's lease expired and another call took it; stopping this call \
                     (its saves are refused)"
                );
                interrupt.cancel();
                return;
            }
            Err(error) if !lease.is_stopped() => {
                tracing::warn!(
                    target: "agentscope_core::session",
                    store,
                    session = %session,
                    %error,
                    "renewing a session lease failed; trying again"
                );
            }
            // After the call was stopped: retried at the next round.
            Err(_) => {}
        }
        expired(&mut lease);
    }
}

/// The tokio runtime the caller runs in, where a store that takes a lease spawns its
/// [`keep_renewed`] task: check it before taking the lease, so that a lease is never taken
/// without a loop to renew it.
///
/// ```
/// use agentscope_core::session::renewal_runtime;
///
/// let error = renewal_runtime("My", "s1").unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "session 's1': storage backend error: taking the session's lease: the My store runs \
///      on a tokio runtime, and none is running"
/// );
/// ```
///
/// # Errors
///
/// [`SessionError::Backend`] about `session` when no tokio runtime is running, naming the
/// `store` ("Redis", "PostgreSQL").
pub fn renewal_runtime(store: &str, session: &str) -> Result<tokio::runtime::Handle, SessionError> {
    tokio::runtime::Handle::try_current().map_err(|_| {
        SessionError::backend_message(
            Some(session),
            format_args!(
                "taking the session's lease: the {store} store runs on a tokio runtime, and \
                 none is running"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    #[test]
    fn an_interrupt_mark_cancels_the_call_and_renewing_goes_on() {
        runtime().block_on(async {
            let call = CancellationToken::new();
            let renewals = AtomicU32::new(0);
            let lease = RenewalDeadline::new(Duration::from_millis(30), Instant::now());
            keep_renewed("test", "s", lease, &call, || async {
                match renewals.fetch_add(1, Ordering::SeqCst) {
                    0 => Ok(Renewed::Interrupted),
                    1 => Ok(Renewed::Held),
                    _ => Ok(Renewed::Lost),
                }
            })
            .await;
            assert_eq!(renewals.load(Ordering::SeqCst), 3);
            assert!(call.is_cancelled());
        });
    }

    #[test]
    fn failing_renewals_stop_the_call_at_the_deadline_and_go_on() {
        runtime().block_on(async {
            let call = CancellationToken::new();
            let renewals = AtomicU32::new(0);
            let taken = Instant::now();
            let ttl = Duration::from_millis(600);
            let lease = RenewalDeadline::new(ttl, taken);
            let renewal = keep_renewed("test", "s", lease, &call, || async {
                // Fails until the call was stopped, then the session is found taken.
                match call.is_cancelled() {
                    false => {
                        renewals.fetch_add(1, Ordering::SeqCst);
                        Err(SessionError::backend_message(Some("s"), "unreachable"))
                    }
                    true => Ok(Renewed::Lost),
                }
            });
            tokio::time::timeout(Duration::from_secs(5), renewal)
                .await
                .unwrap();
            assert!(call.is_cancelled());
            assert!(taken.elapsed() >= ttl, "stopped before the deadline");
            // Renewed at 200 and 400 ms, failing; stopped at 600 ms.
            assert_eq!(renewals.load(Ordering::SeqCst), 2);
        });
    }

    #[test]
    fn a_renewal_not_answered_is_not_waited_for_beyond_the_stop() {
        runtime().block_on(async {
            let call = CancellationToken::new();
            let taken = Instant::now();
            let ttl = Duration::from_millis(90);
            let lease =
                RenewalDeadline::new(ttl, taken).with_stop_margin(Duration::from_millis(30));
            let renewal = keep_renewed("test", "s", lease, &call, || async {
                match call.is_cancelled() {
                    // Never answers.
                    false => std::future::pending().await,
                    true => Ok(Renewed::Lost),
                }
            });
            tokio::time::timeout(Duration::from_secs(5), renewal)
                .await
                .unwrap();
            // Stopped at the margin (60 ms), not after a renewal that never came.
            assert!(taken.elapsed() >= Duration::from_millis(60));
            assert!(taken.elapsed() < Duration::from_secs(2));
            assert!(call.is_cancelled());
        });
    }
}
