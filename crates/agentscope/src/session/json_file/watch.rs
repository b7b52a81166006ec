//! The thread that watches the lock files of the leases of this process: every
//! [`CHECK_INTERVAL`] it checks that each lease's lock file is still the file it locked
//! ([`LockCheck::still_holds`]), which stops the call of a lease whose lock file was
//! removed or replaced. One thread for the process, running while a lease is held (the
//! next lease starts it again). It keeps only the checks, never the leases: a lease given
//! back unlocks at once, whatever the thread is doing.

use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::Duration;

use super::lock::LockCheck;
use crate::runtime::lock;

/// How often the leases of this process check their lock files.
pub(super) const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The checks of the leases held, and whether the thread runs; under one lock, so a lease
/// added while the thread ends starts a new one.
static WATCHED: Mutex<Watched> = Mutex::new(Watched {
    checks: Vec::new(),
    running: false,
});

struct Watched {
    /// A check lives as long as its lease.
    checks: Vec<Weak<LockCheck>>,
    running: bool,
}

/// Watches `check` while its lease lives, starting the thread if it does not run.
pub(super) fn add(check: &Arc<LockCheck>) {
    let mut watched = lock(&WATCHED);
    watched.checks.push(Arc::downgrade(check));
    if watched.running {
        return;
    }
    let spawned = thread::Builder::new()
        .name("agentscope-json-leases".to_owned())
        .spawn(watch);
    match spawned {
        Ok(_) => watched.running = true,
        // Fenced saves still check the lock file; only the early stop is missing.
        Err(error) => tracing::warn!(
            %error,
            "starting the thread that watches session lock files failed"
        ),
    }
}

fn watch() {
    loop {
        thread::sleep(CHECK_INTERVAL);
        let checks: Vec<Arc<LockCheck>> = {
            let mut watched = lock(&WATCHED);
            watched.checks.retain(|check| check.strong_count() > 0);
            if watched.checks.is_empty() {
                watched.running = false;
                return;
            }
            watched.checks.iter().filter_map(Weak::upgrade).collect()
        };
        for check in &checks {
            check.still_holds();
        }
    }
}
