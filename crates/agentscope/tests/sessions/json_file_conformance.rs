//! JsonFileSessionStore passes the shared SessionStore conformance suite: every check gets a
//! new directory (created by the store on its first save) in a temporary directory; and the
//! suite's lease checks that apply to a store whose lease is a lock.

use std::path::Path;
use std::time::Duration;

use agentscope::session::JsonFileSessionStore;
use agentscope_test::session_store::leases::{self, LeaseHarness};
use agentscope_test::session_store::{Check, SessionStoreConformance};

/// Whether `dir`'s file system folds case (macOS and Windows by default), where `Chat` and
/// `chat` name the same file, as the store's documentation warns.
fn folds_case(dir: &Path) -> bool {
    std::fs::write(dir.join("CaseProbe"), "").unwrap();
    dir.join("caseprobe").exists()
}

/// The suite for stores doing their file work on tokio's blocking pool, or, `inline`, on
/// the calling task.
async fn conformance(inline: bool) {
    let dir = tempfile::tempdir().unwrap();
    let case_folding = folds_case(dir.path());
    let mut stores = 0;
    let mut suite = SessionStoreConformance::new(|| {
        stores += 1;
        JsonFileSessionStore::new(dir.path().join(format!("sessions-{stores}"))).inline(inline)
    });
    if case_folding {
        suite = suite.skip(Check::CaseSensitiveIds);
    }
    suite.run_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn json_file_session_store_conformance() {
    conformance(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn json_file_session_store_conformance_with_inline_file_work() {
    conformance(true).await;
}

/// The lease checks of the shared suite that apply to the JSON file store, whose lease is a
/// kernel lock on the session's lock file (nothing to renew, so nothing to fail renewing):
/// another call takes the session over by replacing the lock file and locking the new one
/// (as a process would after a clean-up job removed it), and that lease expires when its
/// lock is released (its process ended). Handles are stores on one directory.
struct Harness {
    dir: tempfile::TempDir,
    /// The lock file of the call that took a session over.
    taken: std::sync::Mutex<Option<std::fs::File>>,
}

impl Harness {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            taken: std::sync::Mutex::default(),
        }
    }
}

impl LeaseHarness for Harness {
    type Store = JsonFileSessionStore;

    fn ttl(&self) -> Duration {
        Duration::from_millis(300)
    }

    async fn store(&self) -> JsonFileSessionStore {
        JsonFileSessionStore::new(self.dir.path())
    }

    async fn take_over(&self, session: &str) {
        let lock_file = self.dir.path().join(format!(".{session}.lock"));
        std::fs::remove_file(&lock_file).unwrap();
        let file = std::fs::File::create(&lock_file).unwrap();
        file.try_lock().unwrap();
        *self.taken.lock().unwrap() = Some(file);
    }

    async fn expire(&self, _session: &str) {
        drop(
            self.taken
                .lock()
                .unwrap()
                .take()
                .expect("a session was taken over"),
        );
    }

    async fn stall(&self, _duration: Duration) {
        panic!("the JSON file store renews no lease");
    }

    fn renews(&self) -> bool {
        false
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_file_lease_conformance() {
    leases::run_all(&Harness::new()).await;
}
