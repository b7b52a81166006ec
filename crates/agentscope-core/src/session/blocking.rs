//! [`run_blocking`]: where a store's blocking work (files, an embedded database) runs.

use super::SessionError;

/// Runs blocking `work` (file I/O, a SQLite statement) of a store: on tokio's blocking thread
/// pool inside a tokio runtime, so the runtime's workers never wait for a disk; inline
/// otherwise (under `futures::executor`, say: the engine does not require tokio). The
/// work runs to its end even when the returned future is dropped meanwhile (move what it
/// must release, a lock guard, into it).
///
/// ```
/// use agentscope_core::session::{SessionError, run_blocking};
///
/// # futures::executor::block_on(async {
/// let read = run_blocking(Some("s1"), || std::fs::read_to_string("/no/such/file").is_err());
/// assert!(read.await?);
/// # Ok::<(), SessionError>(())
/// # }).unwrap();
/// ```
///
/// # Errors
///
/// [`SessionError::Backend`] about `session` (`None`: the store) when the work panicked or
/// the runtime shut down before it ran.
pub async fn run_blocking<T, F>(session: Option<&str>, work: F) -> Result<T, SessionError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(work).await.map_err(|error| {
            SessionError::backend(session, "running the store's blocking work", error)
        }),
        Err(_) => Ok(work()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_tokio_the_work_runs_on_the_blocking_pool() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let caller = std::thread::current().id();
        let ran_on = runtime
            .block_on(run_blocking(None, || std::thread::current().id()))
            .unwrap();
        assert_ne!(ran_on, caller);
        // Without a runtime: inline, on the caller's thread.
        let inline =
            futures::executor::block_on(run_blocking(None, || std::thread::current().id()));
        assert_eq!(inline.unwrap(), caller);
    }

    #[test]
    fn a_panic_is_a_backend_error_naming_the_session() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let error = runtime
            .block_on(run_blocking(Some("s1"), || -> u8 { panic!("boom") }))
            .unwrap_err();
        assert!(matches!(error, SessionError::Backend { .. }), "{error:?}");
        assert_eq!(error.session(), Some("s1"));
        assert!(
            error.to_string().starts_with(
                "session 's1': storage backend error: running the store's blocking work: "
            ),
            "{error}"
        );
    }
}
