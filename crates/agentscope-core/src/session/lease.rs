//! [`SessionLease`]: one call's claim on a session, across every instance sharing a store.

use std::fmt;

use futures::future::BoxFuture;

use super::SessionError;

/// A claim on one session for the length of one call, taken from a store that coordinates
/// instances ([`SessionStore::lease`](super::SessionStore::lease)).
///
/// While an agent holds the lease, every other instance asking for it gets
/// [`SessionError::Busy`] (an agent call: [`AgentError::Busy`](crate::AgentError::Busy)), and
/// the agent's saves carry the lease's [`fence`](Self::fence) token
/// ([`StateChange::fence`](super::StateChange::fence)), so a store can refuse the saves of a
/// holder whose lease expired and was taken by another instance
/// ([`SessionError::LeaseLost`]).
///
/// The agent [`release`](Self::release)s the lease when its call ends. A lease dropped
/// without being released (a dropped call) is given back by the store's handle as best it
/// can (the Redis and SQLite stores give it back in the background); a lease whose holder
/// died expires on its own.
///
/// ```
/// use agentscope_core::session::{LeaseHandle, SessionError, SessionLease};
/// use futures::future::BoxFuture;
///
/// /// Gives a lease back by printing (a real store deletes its lease key).
/// struct PrintOnRelease;
///
/// impl LeaseHandle for PrintOnRelease {
///     fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>> {
///         Box::pin(async {
///             println!("released");
///             Ok(())
///         })
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let lease = SessionLease::new("token-7f3a", PrintOnRelease);
/// assert_eq!(lease.fence(), "token-7f3a");
/// lease.release().await?;
/// # Ok::<(), SessionError>(())
/// # }).unwrap();
/// ```
pub struct SessionLease {
    fence: String,
    handle: Box<dyn LeaseHandle>,
}

/// How a store gives a [`SessionLease`] back; implemented by stores that coordinate
/// instances.
///
/// Dropping the handle without calling [`release`](Self::release) means the call holding
/// the lease was dropped: stop renewing it, and give it back if that can be done without
/// waiting (or let it expire).
pub trait LeaseHandle: Send + Sync + 'static {
    /// Gives the lease back, so another instance can take the session at once. Giving back a
    /// lease that expired (and that another instance may hold now) must not touch the other
    /// holder's lease.
    ///
    /// # Errors
    ///
    /// The store could not be reached; the lease then expires on its own.
    fn release(self: Box<Self>) -> BoxFuture<'static, Result<(), SessionError>>;
}

impl SessionLease {
    /// A lease fenced by `fence` (a token unique to this lease), given back through
    /// `handle`.
    pub fn new(fence: impl Into<String>, handle: impl LeaseHandle) -> Self {
        Self {
            fence: fence.into(),
            handle: Box::new(handle),
        }
    }

    /// The token that identifies this lease; saves made under it carry it.
    pub fn fence(&self) -> &str {
        &self.fence
    }

    /// Gives the lease back.
    ///
    /// # Errors
    ///
    /// As [`LeaseHandle::release`].
    pub async fn release(self) -> Result<(), SessionError> {
        self.handle.release().await
    }
}

impl fmt::Debug for SessionLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The fence token is not a secret, but it lets whoever reads it write under the
        // lease: keep it out of logs.
        f.debug_struct("SessionLease").finish_non_exhaustive()
    }
}
