//! Connecting: [`RedisSessionStoreBuilder`] (the settings, with their defaults) and
//! [`RedisSessionStore::connect`], [`RedisSessionStore::builder`] and
//! [`RedisSessionStore::cluster_builder`], which start from it. `connect` checks the server
//! at once, makes the connection (and, with leases, the one interrupts arrive on), and loads
//! the scripts.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentscope_core::session::SessionError;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::DEFAULT_LEASE_TTL;
use crate::connection::Connection;
use crate::endpoint::Endpoint;
use crate::error::{self, config_error};
use crate::keys::{DEFAULT_KEY_PREFIX, check_prefix};
use crate::lease::{Holders, Leases};
use crate::store::RedisSessionStore;

/// How long connecting waits for the server, by default.
pub const DEFAULT_CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a command waits for its answer, by default.
pub const DEFAULT_RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects a [`RedisSessionStore`] with settings other than the defaults; see
/// [`RedisSessionStore::builder`] and [`RedisSessionStore::cluster_builder`].
#[derive(Clone)]
#[must_use]
pub struct RedisSessionStoreBuilder {
    endpoints: Vec<Endpoint>,
    cluster: bool,
    prefix: String,
    ttl: Option<Duration>,
    connection_timeout: Duration,
    response_timeout: Duration,
    root_certificate: Option<Vec<u8>>,
    lease_ttl: Option<Duration>,
}

impl fmt::Debug for RedisSessionStoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisSessionStoreBuilder")
            .field("urls", &self.endpoints)
            .field("cluster", &self.cluster)
            .field("key_prefix", &self.prefix)
            .field("ttl", &self.ttl)
            .field("connection_timeout", &self.connection_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("tls_root_certificate", &self.root_certificate.is_some())
            .field("lease_ttl", &self.lease_ttl)
            .finish()
    }
}

impl RedisSessionStoreBuilder {
    fn new(endpoints: Vec<Endpoint>, cluster: bool) -> Self {
        Self {
            endpoints,
            cluster,
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            ttl: None,
            connection_timeout: DEFAULT_CONNECTION_TIMEOUT,
            response_timeout: DEFAULT_RESPONSE_TIMEOUT,
            root_certificate: None,
            lease_ttl: Some(DEFAULT_LEASE_TTL),
        }
    }

    /// The prefix of every key of the store (default [`DEFAULT_KEY_PREFIX`],
    /// `agentscope:`): stores with different prefixes on one Redis never see each other's
    /// sessions (one per tenant, application or environment). Must not hold `{` or `}`.
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sessions expire this long after their last save (default: never). Every save sets
    /// the expiry anew. Rounded to milliseconds (at least 1 ms).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// How long connecting to a server waits (default [`DEFAULT_CONNECTION_TIMEOUT`], 5 s).
    pub fn connection_timeout(mut self, timeout: Duration) -> Self {
        self.connection_timeout = timeout;
        self
    }

    /// How long a command waits for its answer (default [`DEFAULT_RESPONSE_TIMEOUT`],
    /// 10 s). A save that times out may have been applied (see the [crate docs](crate)).
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// For `rediss://`: trust the certificate authority in `pem` (PEM-encoded) instead of
    /// the system's root certificates (a private CA, a self-signed server certificate).
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificate = Some(pem.into());
        self
    }

    /// How long a session's lease lives without being renewed (default
    /// [`DEFAULT_LEASE_TTL`], 30 s; rounded down to milliseconds, at least 3 ms, at most a year:
    /// [`clamp_lease_ttl`](agentscope_core::session::clamp_lease_ttl)). The holder renews it
    /// every third of that while its call runs, so this is how long a session stays busy
    /// after its holder died (a killed process, a lost network), and how long a holder may
    /// stall before another instance may take the session over. See the
    /// [crate docs](crate), "Leases and interrupts".
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(agentscope_core::session::clamp_lease_ttl(ttl));
        self
    }

    /// Takes no leases: agents on this store are then checked for concurrent calls only
    /// within their own process, as with a file store, and concurrent writers from several
    /// instances are caught by the saves' compare-and-swap alone
    /// ([`SessionError::Conflict`]). Interrupting a session through this store still reaches
    /// holders that other (leasing) stores run. Also spares the connection that receives
    /// interrupts.
    pub fn without_leases(mut self) -> Self {
        self.lease_ttl = None;
        self
    }

    /// Connects (and, with a password, authenticates) and returns the store.
    ///
    /// # Errors
    ///
    /// [`SessionError::Backend`] (naming the URL without its password) for an invalid URL or
    /// key prefix, no cluster seed, an unreachable server or cluster, a refused password or
    /// a TLS failure.
    pub async fn connect(self) -> Result<RedisSessionStore, SessionError> {
        let Self {
            endpoints,
            cluster,
            prefix,
            ttl,
            connection_timeout,
            response_timeout,
            root_certificate,
            lease_ttl,
        } = self;
        check_prefix(&prefix)?;
        let endpoints: Arc<[Endpoint]> = endpoints.into();
        let Some(first) = endpoints.first() else {
            return Err(config_error(
                "connecting to a Redis Cluster: no seed URL given",
            ));
        };
        let target = match cluster {
            true => format!(
                "connecting to the Redis Cluster at {}",
                endpoints
                    .iter()
                    .map(Endpoint::shown)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            false => format!("connecting to {}", first.shown()),
        };
        let fail = |error: redis::RedisError| error::backend(None, &target, &error, &endpoints);
        if endpoints.iter().any(Endpoint::is_tls) {
            install_crypto_provider();
        }
        let certificates = root_certificate.map(|pem| redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        });
        // Reconnects: 6 attempts, 100 ms apart at first, doubling up to 1 s (the default
        // doubles up to 6.4 s, long after a restarted server is back).
        let manager_config = ConnectionManagerConfig::new()
            .set_max_delay(Duration::from_secs(1))
            .set_connection_timeout(Some(connection_timeout))
            .set_response_timeout(Some(response_timeout));
        let holders = Arc::new(Holders::default());
        // Interrupts arrive on a RESP3 connection of their own (to the first seed in a
        // cluster, whose nodes forward every message), resubscribed after reconnects.
        let subscriber = match lease_ttl {
            None => None,
            Some(_) => {
                let info =
                    redis::IntoConnectionInfo::into_connection_info(first.url()).map_err(fail)?;
                let settings = info
                    .redis_settings()
                    .clone()
                    .set_protocol(redis::ProtocolVersion::RESP3);
                let info = info.set_redis_settings(settings);
                let client = match certificates.clone() {
                    Some(certificates) => redis::Client::build_with_tls(info, certificates),
                    None => redis::Client::open(info),
                }
                .map_err(fail)?;
                let receiver = Arc::clone(&holders);
                let config = manager_config
                    .clone()
                    .set_push_sender(move |push| {
                        receiver.on_push(push);
                        Ok::<(), ()>(())
                    })
                    .set_automatic_resubscription();
                Some(
                    ConnectionManager::new_with_config(client, config)
                        .await
                        .map_err(fail)?,
                )
            }
        };
        let connection = if cluster {
            let mut builder =
                redis::cluster::ClusterClientBuilder::new(endpoints.iter().map(Endpoint::url))
                    .connection_timeout(connection_timeout)
                    .response_timeout(response_timeout);
            if let Some(certificates) = certificates {
                builder = builder.certs(certificates);
            }
            let client = builder.build().map_err(fail)?;
            let connection = client.get_async_connection().await.map_err(fail)?;
            Connection::cluster(connection, Arc::clone(&endpoints))
        } else {
            let client = match certificates {
                Some(certificates) => redis::Client::build_with_tls(first.url(), certificates),
                None => redis::Client::open(first.url()),
            }
            .map_err(fail)?;
            // One plain attempt first: a wrong password, an untrusted certificate or a
            // closed port fails at once (the manager would retry them with backoff).
            let probe = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(connection_timeout))
                .set_response_timeout(Some(response_timeout));
            drop(
                client
                    .get_multiplexed_async_connection_with_config(&probe)
                    .await
                    .map_err(fail)?,
            );
            let connection = ConnectionManager::new_with_config(client, manager_config)
                .await
                .map_err(fail)?;
            Connection::single(connection, Arc::clone(&endpoints))
        };
        let leases = Leases::new(lease_ttl, holders, subscriber);
        let store = RedisSessionStore::new(connection, leases, prefix, ttl).await?;
        tracing::debug!(
            target: "agentscope_redis",
            urls = ?endpoints,
            cluster,
            prefix = %store.key_prefix(),
            "connected the Redis session store"
        );
        Ok(store)
    }
}

impl RedisSessionStore {
    /// Connects to the Redis at `url` (`redis://[user][:password@]host[:port][/db]`,
    /// `rediss://` for TLS) with the default settings.
    ///
    /// ```no_run
    /// use agentscope::session::SessionStore;
    /// use agentscope_redis::RedisSessionStore;
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let store = RedisSessionStore::connect("redis://127.0.0.1:6379").await?;
    /// println!("{:?}", store.list().await?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`RedisSessionStoreBuilder::connect`].
    pub async fn connect(url: impl Into<String>) -> Result<Self, SessionError> {
        Self::builder(url).connect().await
    }

    /// A builder to connect to the Redis at `url` with other settings than
    /// [`connect`](Self::connect)'s defaults.
    pub fn builder(url: impl Into<String>) -> RedisSessionStoreBuilder {
        RedisSessionStoreBuilder::new(vec![Endpoint::new(url)], false)
    }

    /// A builder to connect to a Redis Cluster through `seeds`, URLs of some of its nodes
    /// (the client discovers the others).
    ///
    /// ```no_run
    /// use agentscope_redis::RedisSessionStore;
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let store = RedisSessionStore::cluster_builder([
    ///     "redis://:password@10.0.0.1:7000",
    ///     "redis://:password@10.0.0.2:7000",
    /// ])
    /// .key_prefix("tenant-7:")
    /// .connect()
    /// .await?;
    /// # drop(store);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cluster_builder<I>(seeds: I) -> RedisSessionStoreBuilder
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        RedisSessionStoreBuilder::new(seeds.into_iter().map(Endpoint::new).collect(), true)
    }
}

/// Installs aws-lc-rs as the process's default rustls crypto provider, unless one is.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may install one in between: then that one stays, which is fine.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_debug_hides_passwords() {
        let builder = RedisSessionStore::builder("redis://:hunter2hunter2@127.0.0.1:6379")
            .tls_root_certificate(b"pem".to_vec());
        let shown = format!("{builder:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(
            shown.contains("redis://:<redacted>@127.0.0.1:6379"),
            "{shown}"
        );
        let cluster = RedisSessionStore::cluster_builder(["redis://u:pw-secret@a:7000"]);
        assert!(!format!("{cluster:?}").contains("pw-secret"));
    }
}
