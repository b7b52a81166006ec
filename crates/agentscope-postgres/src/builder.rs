//! Connecting: [`PostgresSessionStoreBuilder`] (the settings, with their defaults) and
//! [`PostgresSessionStore::connect`] and [`PostgresSessionStore::builder`], which start from
//! it. `connect` checks the server at once (one connection of the pool, its encoding), then
//! applies the migrations the schema lacks.

use std::fmt;
use std::time::Duration;

use agentscope_core::session::SessionError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;
use tokio_postgres::config::SslMode;

use crate::DEFAULT_LEASE_TTL;
use crate::db::{Db, Tls};
use crate::endpoint::{self, Endpoint};
use crate::error::{self, backend, config_error};
use crate::lease::Leases;
use crate::schema::{self, DEFAULT_SCHEMA};
use crate::sql::Statements;
use crate::store::PostgresSessionStore;
use crate::tls;

/// How many connections a store's pool holds at most, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// How long opening a connection may take, by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an operation waits for a free connection of the pool, by default.
pub const DEFAULT_POOL_TIMEOUT: Duration = Duration::from_secs(30);

/// Connects a [`PostgresSessionStore`] with settings other than the defaults; see
/// [`PostgresSessionStore::builder`].
#[derive(Clone)]
#[must_use]
pub struct PostgresSessionStoreBuilder {
    connection: String,
    password: Option<String>,
    schema: String,
    max_connections: usize,
    connect_timeout: Duration,
    pool_timeout: Duration,
    lease_ttl: Option<Duration>,
    require_tls: bool,
    root_certificate: Option<Vec<u8>>,
}

impl fmt::Debug for PostgresSessionStoreBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresSessionStoreBuilder")
            .field("server", &endpoint::shown(&self.connection))
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
            .field("pool_timeout", &self.pool_timeout)
            .field("lease_ttl", &self.lease_ttl)
            .field("require_tls", &self.require_tls)
            .field("tls_root_certificate", &self.root_certificate.is_some())
            .finish()
    }
}

impl PostgresSessionStoreBuilder {
    fn new(connection: String) -> Self {
        Self {
            connection,
            password: None,
            schema: DEFAULT_SCHEMA.to_owned(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            pool_timeout: DEFAULT_POOL_TIMEOUT,
            lease_ttl: Some(DEFAULT_LEASE_TTL),
            require_tls: false,
            root_certificate: None,
        }
    }

    /// The password, instead of one in the connection string (from a secret store or an
    /// environment variable, say). Never shown.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(password.into());
        self
    }

    /// The PostgreSQL schema holding the store's tables (default [`DEFAULT_SCHEMA`],
    /// `public`); created when missing. Stores on different schemas of one database never
    /// see each other's sessions (one per tenant, application or environment). 1 to 63
    /// lowercase ASCII letters, digits and `_`, not starting with a digit.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// How many connections the pool holds at most (default [`DEFAULT_MAX_CONNECTIONS`],
    /// 16; `0` counts as 1). Operations beyond that wait for a free connection. Leases take
    /// a connection only while they are taken, renewed or released; a store with leases has
    /// one more connection, outside the pool, receiving interrupts.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// How long opening a connection may take (default [`DEFAULT_CONNECT_TIMEOUT`], 5 s);
    /// a `connect_timeout` in the connection string is replaced.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long an operation waits for a free connection of the pool before failing
    /// (default [`DEFAULT_POOL_TIMEOUT`], 30 s).
    pub fn pool_timeout(mut self, timeout: Duration) -> Self {
        self.pool_timeout = timeout;
        self
    }

    /// How long a session's lease lives without being renewed (default
    /// [`DEFAULT_LEASE_TTL`], 30 s; rounded down to milliseconds, at least 3 ms, at most a year:
    /// [`clamp_lease_ttl`](agentscope_core::session::clamp_lease_ttl)). The holder renews it every third of that
    /// while its call runs, so this is how long a session stays busy after its holder died,
    /// and how long a holder may be cut off from the server before it stops its call and
    /// another instance may take the session over. See the [crate docs](crate), "Leases and
    /// interrupts".
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(agentscope_core::session::clamp_lease_ttl(ttl));
        self
    }

    /// Takes no leases: agents on this store are then checked for concurrent calls only
    /// within their own process, and concurrent writers from several instances are caught by
    /// the saves' compare-and-swap alone ([`SessionError::Conflict`]). Interrupting a session
    /// through this store still reaches holders that other (leasing) stores run. Also spares
    /// the connection that receives interrupts.
    pub fn without_leases(mut self) -> Self {
        self.lease_ttl = None;
        self
    }

    /// Connects with TLS, whatever the connection string's `sslmode` says (as
    /// `sslmode=require` does). The server's certificate is verified against the system's
    /// root certificates (or [`tls_root_certificate`](Self::tls_root_certificate)) and must
    /// name the host.
    pub fn require_tls(mut self) -> Self {
        self.require_tls = true;
        self
    }

    /// Trusts the certificate authority in `pem` (PEM-encoded) instead of the system's root
    /// certificates (a private CA, a self-signed server certificate); implies
    /// [`require_tls`](Self::require_tls).
    pub fn tls_root_certificate(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificate = Some(pem.into());
        self.require_tls = true;
        self
    }

    /// Connects, checks the server, applies the migrations the schema lacks and returns the
    /// store.
    ///
    /// # Errors
    ///
    /// [`SessionError::Backend`] (naming the server without its password) for an invalid
    /// connection string or schema name, an unreachable server, refused credentials, a TLS
    /// failure, a database whose encoding is not UTF-8, or a migration that failed (for
    /// instance without the right to create tables).
    pub async fn connect(self) -> Result<PostgresSessionStore, SessionError> {
        let Self {
            connection,
            password,
            schema,
            max_connections,
            connect_timeout,
            pool_timeout,
            lease_ttl,
            require_tls,
            root_certificate,
        } = self;
        schema::check_schema(&schema)?;
        let mut endpoint = Endpoint::parse(&connection, password.as_deref())?;
        let config = endpoint.config_mut();
        config.connect_timeout(connect_timeout);
        if config.get_application_name().is_none() {
            config.application_name("agentscope");
        }
        let tls = match require_tls || config.get_ssl_mode() == SslMode::Require {
            true => {
                config.ssl_mode(SslMode::Require);
                Tls::On(tls::connector(root_certificate.as_deref())?)
            }
            // Plain, also for libpq's default `prefer`, which would take any certificate.
            false => {
                config.ssl_mode(SslMode::Disable);
                Tls::Off
            }
        };
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &tls {
            Tls::Off => Manager::from_config(endpoint.config().clone(), NoTls, manager_config),
            Tls::On(connector) => {
                Manager::from_config(endpoint.config().clone(), connector.clone(), manager_config)
            }
        };
        let pool = Pool::builder(manager)
            .max_size(max_connections)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(pool_timeout))
            .create_timeout(Some(connect_timeout))
            .recycle_timeout(Some(connect_timeout))
            .build()
            .map_err(|error| {
                config_error(format!(
                    "connecting to {}: building the connection pool: {error}",
                    endpoint.shown()
                ))
            })?;
        let target = format!("connecting to {}", endpoint.shown());
        let mut client = pool
            .get()
            .await
            .map_err(|error| error::pool(None, "connecting", &error, &endpoint))?;
        let encoding: String = client
            .query_one("SHOW server_encoding", &[])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|error| backend(None, "connecting", &error, &endpoint))?;
        if !encoding.eq_ignore_ascii_case("UTF8") {
            return Err(config_error(format!(
                "{target}: the database's encoding is {encoding}, not UTF8: sessions hold any \
                 Unicode text (create the database with ENCODING 'UTF8')"
            )));
        }
        schema::migrate(&mut client, &schema, &endpoint).await?;
        // Part of migration 2: the rows saved before it (or since, by an instance of an
        // earlier version) get their recency key.
        schema::key_unkeyed(&client, &schema, &endpoint).await?;
        drop(client);
        tracing::debug!(
            target: "agentscope_postgres",
            server = %endpoint.shown(),
            schema = %schema,
            "connected the PostgreSQL session store"
        );
        let sql = Statements::new(&schema);
        let db = Db {
            pool,
            endpoint,
            tls,
            sql,
            schema,
        };
        Ok(PostgresSessionStore::new(db, Leases::new(lease_ttl)))
    }
}

impl PostgresSessionStore {
    /// Connects to the PostgreSQL server at `connection` (a URL,
    /// `postgresql://user:password@host:5432/database?sslmode=require`, or libpq's
    /// `host=... user=... password=... dbname=...`) with the default settings, and applies
    /// the migrations the `public` schema lacks.
    ///
    /// ```no_run
    /// use agentscope::session::SessionStore;
    /// use agentscope_postgres::PostgresSessionStore;
    ///
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let store = PostgresSessionStore::connect("postgresql://app@127.0.0.1:5432/app").await?;
    /// println!("{:?}", store.list().await?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`PostgresSessionStoreBuilder::connect`].
    pub async fn connect(connection: impl Into<String>) -> Result<Self, SessionError> {
        Self::builder(connection).connect().await
    }

    /// A builder to connect to the PostgreSQL server at `connection` (as
    /// [`connect`](Self::connect) takes it) with other settings than the defaults.
    pub fn builder(connection: impl Into<String>) -> PostgresSessionStoreBuilder {
        PostgresSessionStoreBuilder::new(connection.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_debug_hides_passwords() {
        let builder = PostgresSessionStore::builder("postgresql://app:hunter2hunter2@db:5432/x")
            .password("other-secret")
            .tls_root_certificate(b"pem".to_vec());
        let shown = format!("{builder:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("other-secret"), "{shown}");
        assert!(
            shown.contains("postgresql://app:<redacted>@db:5432/x"),
            "{shown}"
        );
        assert!(shown.contains("password: Some(\"<redacted>\")"), "{shown}");
        assert!(shown.contains("require_tls: true"), "{shown}");
    }
}
