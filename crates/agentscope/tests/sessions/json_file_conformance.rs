//! JsonFileSessionStore passes the shared SessionStore conformance suite: every check gets a
//! new directory (created by the store on its first save) in a temporary directory.

use std::path::Path;

use agentscope::session::JsonFileSessionStore;
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
