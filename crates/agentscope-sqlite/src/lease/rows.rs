//! The lease rows (`agentscope_session_leases`, see the crate docs, "Leases and
//! interrupts"): taking, renewing and giving back a session's lease, marking it
//! interrupted, and the fence check of a save, on one connection (blocking; the store and
//! its renewal thread run them).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentscope_core::session::{Renewed, SessionError};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

const SELECT_EXPIRY: &str =
    "SELECT expires_at FROM agentscope_session_leases WHERE session_id = ?1";

const UPSERT_LEASE: &str = "INSERT INTO agentscope_session_leases
        (session_id, token, holder, expires_at, interrupted)
    VALUES (?1, ?2, ?3, ?4, 0)
    ON CONFLICT (session_id) DO UPDATE SET
        token = excluded.token,
        holder = excluded.holder,
        expires_at = excluded.expires_at,
        interrupted = 0";

const RENEW: &str = "UPDATE agentscope_session_leases SET expires_at = ?3
    WHERE session_id = ?1 AND token = ?2 RETURNING interrupted";

const RELEASE: &str = "DELETE FROM agentscope_session_leases WHERE session_id = ?1 AND token = ?2";

const INTERRUPT: &str = "UPDATE agentscope_session_leases SET interrupted = 1
    WHERE session_id = ?1 AND expires_at > ?2";

const SELECT_INTERRUPTED: &str =
    "SELECT token FROM agentscope_session_leases WHERE interrupted = 1";

const SELECT_TOKEN: &str = "SELECT token FROM agentscope_session_leases WHERE session_id = ?1";

/// Milliseconds since the Unix epoch: lease expiries are wall-clock times, which every
/// process on the host (WAL needs them on one host) reads alike.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Runs `write` with its commits not synced to disk (`synchronous = NORMAL`: in WAL mode a
/// commit still survives a crash of the process, not a power loss), then puts back the
/// `FULL` every save needs. Only lease rows are written this way: a lease matters while its
/// holder runs, and a power loss that loses one ends its holder too (a lost release leaves
/// a lease that expires; a lost take or renewal, one no process holds any more). The next
/// synced commit, a save, syncs them with it. Saves two syncs per leased call (take and
/// give back), each as long as a save's on a real disk.
fn unsynced<T, E: From<rusqlite::Error>>(
    connection: &mut Connection,
    write: impl FnOnce(&mut Connection) -> Result<T, E>,
) -> Result<T, E> {
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    let written = write(connection);
    // Saves must never run unsynced: when `FULL` cannot be put back, the write fails too.
    connection.pragma_update(None, "synchronous", "FULL")?;
    written
}

/// What this process writes as a lease's holder (informational, for whoever inspects the
/// table).
pub(crate) fn holder() -> String {
    format!("pid {}", std::process::id())
}

/// Takes session `session`'s lease for `token`, living `ttl`, in one `BEGIN IMMEDIATE`
/// transaction: only when no lease holds it or the one there expired (replacing it).
/// The leases `dropped` (of this store's dropped calls, not given back yet) are deleted
/// first. Returns whether it was taken.
pub(crate) fn take(
    connection: &mut Connection,
    session: &str,
    token: &str,
    holder: &str,
    ttl: Duration,
    dropped: &[String],
) -> Result<bool, SessionError> {
    let run = |connection: &mut Connection| -> Result<bool, rusqlite::Error> {
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for dropped in dropped {
            tx.prepare_cached(RELEASE)?.execute([session, dropped])?;
        }
        let now = now_ms();
        let expires: Option<i64> = tx
            .prepare_cached(SELECT_EXPIRY)?
            .query_row([session], |row| row.get(0))
            .optional()?;
        if expires.is_some_and(|expires| expires > now) {
            return Ok(false);
        }
        tx.prepare_cached(UPSERT_LEASE)?.execute(rusqlite::params![
            session,
            token,
            holder,
            now.saturating_add(ms(ttl))
        ])?;
        tx.commit()?;
        Ok(true)
    };
    unsynced(connection, run)
        .map_err(|error| SessionError::backend(Some(session), "taking the session's lease", error))
}

/// Gives session `session`'s lease back if `token` still holds it (a lease another call
/// took meanwhile is left alone).
pub(crate) fn release(
    connection: &mut Connection,
    session: &str,
    token: &str,
) -> Result<(), SessionError> {
    unsynced(connection, |connection| {
        connection
            .prepare_cached(RELEASE)?
            .execute([session, token])
            .map(drop)
    })
    .map_err(|error| SessionError::backend(Some(session), "giving back the session's lease", error))
}

/// Renews the leases `held` (session id, token) for `ttl` each, in one `BEGIN IMMEDIATE`
/// transaction; one answer per lease, in order.
pub(crate) fn renew(
    connection: &mut Connection,
    held: &[(String, String)],
    ttl: Duration,
) -> Result<Vec<Renewed>, rusqlite::Error> {
    unsynced(connection, |connection| {
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let expires = now_ms().saturating_add(ms(ttl));
        let mut renewed = Vec::with_capacity(held.len());
        {
            let mut statement = tx.prepare_cached(RENEW)?;
            for (session, token) in held {
                let interrupted: Option<bool> = statement
                    .query_row(rusqlite::params![session, token, expires], |row| row.get(0))
                    .optional()?;
                renewed.push(match interrupted {
                    Some(true) => Renewed::Interrupted,
                    Some(false) => Renewed::Held,
                    None => Renewed::Lost,
                });
            }
        }
        tx.commit()?;
        Ok(renewed)
    })
}

/// The tokens of the leases an interrupt marked.
pub(crate) fn interrupted(connection: &mut Connection) -> Result<Vec<String>, rusqlite::Error> {
    let mut statement = connection.prepare_cached(SELECT_INTERRUPTED)?;
    let tokens = statement.query_map([], |row| row.get(0))?;
    tokens.collect()
}

/// Marks the live lease on session `session` interrupted; returns whether there is one.
pub(crate) fn interrupt(connection: &mut Connection, session: &str) -> Result<bool, SessionError> {
    unsynced(connection, |connection| {
        connection
            .prepare_cached(INTERRUPT)?
            .execute(rusqlite::params![session, now_ms()])
            .map(|marked| marked > 0)
    })
    .map_err(|error| SessionError::backend(Some(session), "interrupting", error))
}

/// Refuses a save fenced by `fence` unless that lease holds session `session`
/// ([`SessionError::LeaseLost`]); runs in the save's transaction.
pub(crate) fn check_fence(
    tx: &Transaction<'_>,
    session: &str,
    fence: &str,
) -> Result<(), SessionError> {
    let holder: Option<String> = tx
        .prepare_cached(SELECT_TOKEN)
        .and_then(|mut statement| statement.query_row([session], |row| row.get(0)).optional())
        .map_err(|error| SessionError::backend(Some(session), "saving", error))?;
    match holder {
        Some(token) if token == fence => Ok(()),
        _ => Err(SessionError::lease_lost(session)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db;

    /// `PRAGMA synchronous`: 2 is `FULL`, 1 `NORMAL`.
    fn synchronous(connection: &Connection) -> i64 {
        connection
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn lease_writes_are_unsynced_and_leave_the_connection_syncing_every_save() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("leases.db");
        let mut connection = db::connect(&path, Duration::from_secs(1), false).unwrap();
        assert!(matches!(
            db::init(&mut connection, Duration::from_secs(1)).unwrap(),
            db::Opened::Ready { .. }
        ));
        assert_eq!(synchronous(&connection), 2);

        // Inside, the write runs with `NORMAL`.
        let inside = unsynced(&mut connection, |connection| {
            Ok::<_, rusqlite::Error>(synchronous(connection))
        })
        .unwrap();
        assert_eq!(inside, 1);
        assert_eq!(synchronous(&connection), 2);

        let ttl = Duration::from_secs(30);
        assert!(take(&mut connection, "s", "t1", "me", ttl, &[]).unwrap());
        assert_eq!(synchronous(&connection), 2);
        let held = [("s".to_owned(), "t1".to_owned())];
        assert_eq!(renew(&mut connection, &held, ttl).unwrap(), [Renewed::Held]);
        assert_eq!(synchronous(&connection), 2);
        assert!(interrupt(&mut connection, "s").unwrap());
        assert_eq!(synchronous(&connection), 2);
        release(&mut connection, "s", "t1").unwrap();
        assert_eq!(synchronous(&connection), 2);
        // Also when the write fails.
        let failed = unsynced(&mut connection, |connection| {
            connection.execute("INSERT INTO no_such_table VALUES (1)", [])
        });
        assert!(failed.is_err());
        assert_eq!(synchronous(&connection), 2);
        // And the lease is gone: another token takes it at once.
        assert!(take(&mut connection, "s", "t2", "me", ttl, &[]).unwrap());
    }
}
