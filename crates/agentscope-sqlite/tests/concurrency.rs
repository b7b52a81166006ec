//! Many agents and processes on one SQLite file: processes opening a new file at once all
//! open it; 50 concurrent agents (each its own session, several calls
//! each, through two separately opened stores as two processes would) lose no update; two
//! agents alternating on one session each load what the other saved.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use agentscope_sqlite::SqliteSessionStore;
use agentscope_test::session_store::agents;
use tempfile::TempDir;

/// Three handles on a new database file, opened separately (three connection pools, as in
/// three processes): two for the agents, one to read back what they stored.
fn three_handles() -> (TempDir, [SqliteSessionStore; 2], SqliteSessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let open = || SqliteSessionStore::open(&path).unwrap();
    let stores = [open(), open()];
    let reader = open();
    (dir, stores, reader)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_agents_lose_no_update() {
    let (_dir, stores, reader) = three_handles();
    agents::concurrent_agents(stores, reader, 50, 4).await;
}

/// Two agents (two instances, two store handles) alternating on one session: every call
/// loads what the other saved, and no message is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_alternating_on_one_session() {
    let (_dir, stores, reader) = three_handles();
    agents::alternating_agents(stores, reader, 10).await;
}

/// Processes that open the same new database file at the same moment all open it: the one
/// that switches the file to WAL mode holds a lock the others wait out (within the busy
/// timeout) instead of failing at once with "database is locked".
#[test]
fn processes_opening_a_new_file_at_once_all_open_it() {
    use agentscope_test::process::SelfProcess;
    const PROCESSES: usize = 6;
    const ROUNDS: usize = 8;
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let mut workers: Vec<SelfProcess> = (0..PROCESSES)
            .map(|_| {
                SelfProcess::spawn(
                    "worker_open_on_go",
                    "AGENTSCOPE_SQLITE_OPEN_WORKER",
                    path.to_str().unwrap(),
                )
            })
            .collect();
        for worker in &mut workers {
            worker.expect("READY");
        }
        for worker in &mut workers {
            worker.send_line("go");
        }
        let outcomes: Vec<String> = workers
            .iter_mut()
            .map(|worker| worker.expect("OUTCOME "))
            .collect();
        assert_eq!(
            outcomes,
            vec!["opened".to_owned(); PROCESSES],
            "round {round}: every process opens the new file"
        );
        for mut worker in workers {
            worker.wait_success();
        }
    }
}

/// The worker of [`processes_opening_a_new_file_at_once_all_open_it`]: waits for `go`, opens
/// the store and prints what happened.
#[test]
#[ignore = "a worker process of processes_opening_a_new_file_at_once_all_open_it"]
fn worker_open_on_go() {
    let path = std::env::var("AGENTSCOPE_SQLITE_OPEN_WORKER").unwrap();
    println!("READY");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    match SqliteSessionStore::open(&path) {
        Ok(_) => println!("OUTCOME opened"),
        Err(error) => println!("OUTCOME {error}"),
    }
}
