//! The connection commands run on: to one server (redis-rs's `ConnectionManager`) or to a
//! cluster, with the URLs it was made from, so that a failure says where it happened without
//! a password (see the crate docs, "Connections and failures").

use std::sync::Arc;

use agentscope_core::session::SessionError;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::endpoint::{self, Endpoint};
use crate::error::{self, RedisFailure};
use crate::keys;

/// A cheap `Clone` handle: clones share the connection.
#[derive(Clone)]
pub(crate) struct Connection {
    link: Link,
    /// The URLs connected to (one, or the cluster's seeds).
    endpoints: Arc<[Endpoint]>,
}

#[derive(Clone)]
enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Connection {
    /// A connection to the one server at `endpoints[0]`.
    pub(crate) fn single(connection: ConnectionManager, endpoints: Arc<[Endpoint]>) -> Self {
        Self {
            link: Link::Single(connection),
            endpoints,
        }
    }

    /// A connection to the cluster whose seeds are `endpoints`.
    pub(crate) fn cluster(connection: ClusterConnection, endpoints: Arc<[Endpoint]>) -> Self {
        Self {
            link: Link::Cluster(connection),
            endpoints,
        }
    }

    /// The cluster connection, for commands routed to one node; `None` for one server.
    pub(crate) fn as_cluster(&self) -> Option<&ClusterConnection> {
        match &self.link {
            Link::Single(_) => None,
            Link::Cluster(connection) => Some(connection),
        }
    }

    pub(crate) fn is_cluster(&self) -> bool {
        self.as_cluster().is_some()
    }

    /// The URLs connected to, passwords hidden in their `Debug` form.
    pub(crate) fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
    }

    /// A backend error about `session` (of a store with key prefix `prefix`) saying `what`
    /// failed, and where; a key of the session holding another type than the store writes
    /// (`WRONGTYPE`) is [`SessionError::Corrupt`].
    pub(crate) fn backend(
        &self,
        prefix: &str,
        session: Option<&str>,
        what: &str,
        error: &redis::RedisError,
    ) -> SessionError {
        let endpoints = self.endpoints();
        let place = match self.is_cluster() {
            true => "the Redis Cluster".to_owned(),
            false => endpoints
                .first()
                .map(Endpoint::shown)
                .unwrap_or_default()
                .to_owned(),
        };
        let failure = error::backend(session, format_args!("{what} ({place})"), error, endpoints);
        let wrong_type = std::error::Error::source(&failure)
            .and_then(|source| source.downcast_ref::<RedisFailure>())
            .is_some_and(|failure| failure.code() == Some("WRONGTYPE"));
        match session {
            Some(session) if wrong_type => SessionError::corrupt(
                session,
                format_args!(
                    "{what}: a key of the session holds another type than this store writes \
                     (a hash {} and a list {}): {}",
                    keys::state_key(prefix, session),
                    keys::messages_key(prefix, session),
                    endpoint::scrub(&error.to_string(), endpoints)
                ),
            ),
            _ => failure,
        }
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.link {
            Link::Single(connection) => connection.req_packed_command(cmd),
            Link::Cluster(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.link {
            Link::Single(connection) => connection.req_packed_commands(pipeline, offset, count),
            Link::Cluster(connection) => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(connection) => connection.get_db(),
            Link::Cluster(connection) => connection.get_db(),
        }
    }
}
