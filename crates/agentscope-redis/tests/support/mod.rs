//! What the tests share: real Redis servers of their own
//! (`agentscope_test::components::redis`: `redis-server` on a free port of 127.0.0.1 with a
//! temporary directory, no persistence, killed on drop; and a 3-node cluster), and stores
//! and raw connections on them ([`Connect`]).
//!
//! Without `redis-server` (or `redis-cli` for the cluster, `openssl` for TLS) the crate's
//! build script leaves `has_redis` (`has_redis_cli`, `has_openssl`) unset and the tests that
//! need it are ignored, with the reason, so `cargo test --workspace` passes with only the Rust
//! toolchain and counts them as ignored. Under CI (`AGENTSCOPE_CI=1`, set by `.ci/run`) they
//! always run and a missing component fails them; the fixtures check again at run time.
#![allow(
    dead_code,
    unreachable_pub,
    unused_imports,
    async_fn_in_trait,
    clippy::expect_used,
    clippy::unwrap_used
)]

pub use agentscope_test::components::free_port;
pub use agentscope_test::components::redis::{RedisCluster, RedisServer, redis_server};
pub use agentscope_test::components::tls::TlsFiles;

use agentscope_redis::RedisSessionStore;

/// A store and a raw connection on a test server.
pub trait Connect {
    /// A store on this server with the default settings.
    async fn store(&self) -> RedisSessionStore;

    /// A plain connection for raw commands.
    async fn raw(&self) -> redis::aio::MultiplexedConnection;
}

impl Connect for RedisServer {
    async fn store(&self) -> RedisSessionStore {
        RedisSessionStore::connect(self.url())
            .await
            .expect("the store connects")
    }

    async fn raw(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .expect("a raw connection")
    }
}
