//! [`McpServerConfig`] (how to reach one server) and [`ReconnectPolicy`]; the secrets of a
//! configuration, for the core's [`Redactor`] to scrub.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use agentscope_core::redact::{REDACTED, Redactor, url_for_display, url_secrets};
use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};

use crate::error::McpError;

/// How to reach one MCP server, and how the client treats it. Build one with
/// [`McpServerConfig::stdio`] or [`McpServerConfig::http`], then
/// [`McpClient::connect`](crate::McpClient::connect) to it.
///
/// Setters that do not apply to the transport (`arg` on an HTTP server, `header` on a stdio
/// one) or get an invalid value are remembered, and `connect` returns the first such
/// problem ([`McpError::InvalidConfig`]).
///
/// `Debug` shows the command and its arguments, or the URL without its query values and
/// password; never header values, the bearer token or environment values (only their
/// names). Pass secrets as environment variables or headers, not as arguments.
///
/// ```
/// use std::time::Duration;
/// use agentscope_mcp::{McpServerConfig, ReconnectPolicy};
///
/// let files = McpServerConfig::stdio("npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"])
///     .env("LOG_LEVEL", "warn")
///     .name("files")
///     .prefix("files_");
/// assert_eq!(files.server_name(), "files");
///
/// let remote = McpServerConfig::http("https://mcp.example.com/mcp")
///     .bearer_token("s3cr3t-token")
///     .header("x-tenant", "acme")
///     .reconnect(ReconnectPolicy::attempts(5).backoff(Duration::from_millis(100), Duration::from_secs(2)));
/// assert_eq!(remote.server_name(), "mcp.example.com");
/// assert!(!format!("{remote:?}").contains("s3cr3t-token"));
/// ```
#[derive(Clone)]
#[must_use]
pub struct McpServerConfig {
    pub(crate) name: Option<String>,
    pub(crate) transport: TransportConfig,
    pub(crate) prefix: String,
    pub(crate) reconnect: ReconnectPolicy,
    pub(crate) connect_timeout: Duration,
    pub(crate) error: Option<McpError>,
}

#[derive(Clone)]
pub(crate) enum TransportConfig {
    Stdio(StdioConfig),
    Http(HttpConfig),
}

/// A server started as a child process.
#[derive(Clone)]
pub(crate) struct StdioConfig {
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) current_dir: Option<PathBuf>,
}

/// A server reached over streamable HTTP.
#[derive(Clone)]
pub(crate) struct HttpConfig {
    pub(crate) url: String,
    pub(crate) headers: Vec<(HeaderName, HeaderValue)>,
    pub(crate) bearer_token: Option<String>,
}

/// How long connecting (starting the process and the protocol handshake) may take by
/// default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

impl McpServerConfig {
    /// A server the client starts as a child process and talks to over its standard input
    /// and output. The process inherits the environment (add to it with
    /// [`env`](Self::env)); its standard error goes to `tracing` at debug level (target
    /// `agentscope_mcp::stderr`). It is stopped when the client is closed or its last
    /// handle dropped.
    pub fn stdio(command: impl Into<String>) -> Self {
        Self::new(TransportConfig::Stdio(StdioConfig {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }))
    }

    /// A server reached over MCP's streamable HTTP transport at `url` (the endpoint itself,
    /// for example `http://127.0.0.1:3001/mcp`).
    pub fn http(url: impl Into<String>) -> Self {
        Self::new(TransportConfig::Http(HttpConfig {
            url: url.into(),
            headers: Vec::new(),
            bearer_token: None,
        }))
    }

    fn new(transport: TransportConfig) -> Self {
        Self {
            name: None,
            transport,
            prefix: String::new(),
            reconnect: ReconnectPolicy::default(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            error: None,
        }
    }

    fn fail(&mut self, message: String) {
        self.error
            .get_or_insert(McpError::InvalidConfig { message });
    }

    /// Applies `set` to a stdio server's settings; on an HTTP server, remembers that
    /// `setter` does not apply.
    fn on_stdio(mut self, setter: &str, set: impl FnOnce(&mut StdioConfig)) -> Self {
        match &mut self.transport {
            TransportConfig::Stdio(stdio) => set(stdio),
            TransportConfig::Http(_) => self.fail(format!("{setter}() applies to stdio servers")),
        }
        self
    }

    /// Applies `set` to an HTTP server's settings, remembering the problem it reports; on a
    /// stdio server, remembers that `setter` does not apply.
    fn on_http(
        mut self,
        setter: &str,
        set: impl FnOnce(&mut HttpConfig) -> Result<(), String>,
    ) -> Self {
        let outcome = match &mut self.transport {
            TransportConfig::Http(http) => set(http),
            TransportConfig::Stdio(_) => Err(format!("{setter}() applies to HTTP servers")),
        };
        if let Err(message) = outcome {
            self.fail(message);
        }
        self
    }

    /// The server's name in messages and errors. Default: the command's file name (stdio)
    /// or the URL's host (HTTP).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Prepended to every tool name the server declares (`"files_"` turns `read_file` into
    /// `files_read_file`), so two servers' tools cannot clash in one toolkit. The server
    /// is still called with its own name. Default: none.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// When and how often to reconnect after the connection was lost (see
    /// [`ReconnectPolicy`]).
    pub fn reconnect(mut self, policy: ReconnectPolicy) -> Self {
        self.reconnect = policy;
        self
    }

    /// How long one connection attempt (start and handshake) may take. Default:
    /// [`DEFAULT_CONNECT_TIMEOUT`].
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Adds an argument to the command (stdio servers only).
    pub fn arg(self, arg: impl Into<String>) -> Self {
        self.on_stdio("arg", |stdio| stdio.args.push(arg.into()))
    }

    /// Adds arguments to the command (stdio servers only).
    pub fn args<I, S>(self, new: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.on_stdio("args", |stdio| {
            stdio.args.extend(new.into_iter().map(Into::into));
        })
    }

    /// Sets an environment variable of the process (stdio servers only). The value is
    /// treated as a secret: never shown, and scrubbed from errors and logs.
    pub fn env(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.on_stdio("env", |stdio| stdio.env.push((key.into(), value.into())))
    }

    /// The process's working directory (stdio servers only). Default: this process's.
    pub fn current_dir(self, dir: impl Into<PathBuf>) -> Self {
        self.on_stdio("current_dir", |stdio| stdio.current_dir = Some(dir.into()))
    }

    /// Sends a header with every request (HTTP servers only), for example an API key. The
    /// value is treated as a secret: never shown, and scrubbed from errors and logs.
    pub fn header(self, name: impl AsRef<str>, value: impl AsRef<str>) -> Self {
        let name = name.as_ref();
        let value = value.as_ref();
        self.on_http("header", |http| {
            let Ok(parsed_name) = HeaderName::from_bytes(name.as_bytes()) else {
                return Err(format!("'{name}' is not a valid header name"));
            };
            let Ok(mut parsed_value) = HeaderValue::from_str(value) else {
                // The value is a secret: say where it is wrong, not what it is.
                return Err(format!(
                    "the value of header '{name}' is not a valid header value"
                ));
            };
            parsed_value.set_sensitive(true);
            http.headers.push((parsed_name, parsed_value));
            Ok(())
        })
    }

    /// Sends `Authorization: Bearer <token>` with every request (HTTP servers only). The
    /// token is treated as a secret: never shown, and scrubbed from errors and logs.
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        self.on_http("bearer_token", |http| {
            http.bearer_token = Some(token.into());
            Ok(())
        })
    }

    /// The name used in messages: [`name`](Self::name), or the command's file name, or the
    /// URL's host.
    pub fn server_name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match &self.transport {
            TransportConfig::Stdio(StdioConfig { command, .. }) => std::path::Path::new(command)
                .file_name()
                .map_or_else(|| command.clone(), |n| n.to_string_lossy().into_owned()),
            TransportConfig::Http(HttpConfig { url, .. }) => Url::parse(url)
                .ok()
                .and_then(|url| url.host_str().map(str::to_owned))
                .unwrap_or_else(|| "http".to_owned()),
        }
    }

    /// The configured secrets (environment values, header values, the bearer token, the
    /// URL's query and password), for scrubbing.
    pub(crate) fn redactor(&self) -> Redactor {
        let mut secrets: Vec<String> = Vec::new();
        match &self.transport {
            TransportConfig::Stdio(StdioConfig { env, .. }) => {
                secrets.extend(env.iter().map(|(_, value)| value.clone()));
            }
            TransportConfig::Http(HttpConfig {
                url,
                headers,
                bearer_token,
            }) => {
                secrets.extend(
                    headers
                        .iter()
                        .filter_map(|(_, value)| value.to_str().ok().map(str::to_owned)),
                );
                secrets.extend(bearer_token.iter().cloned());
                secrets.extend(url_secrets(url));
                if let Ok(parsed) = Url::parse(url) {
                    secrets.extend(parsed.password().map(str::to_owned));
                    secrets.extend(parsed.query().map(str::to_owned));
                    // The URL as typed, whole, goes before its parts.
                    if parsed.password().is_some() || parsed.query().is_some() {
                        secrets.push(url.clone());
                        secrets.push(parsed.to_string());
                    }
                }
            }
        }
        Redactor::new(secrets)
    }
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("McpServerConfig");
        s.field("name", &self.server_name());
        match &self.transport {
            TransportConfig::Stdio(stdio) => {
                let keys: Vec<&str> = stdio.env.iter().map(|(key, _)| key.as_str()).collect();
                s.field("command", &stdio.command)
                    .field("args", &stdio.args)
                    .field("env", &keys)
                    .field("current_dir", &stdio.current_dir);
            }
            TransportConfig::Http(http) => {
                let names: Vec<&str> = http.headers.iter().map(|(name, _)| name.as_str()).collect();
                s.field("url", &url_for_display(&http.url))
                    .field("headers", &names)
                    .field(
                        "bearer_token",
                        &http.bearer_token.as_ref().map(|_| REDACTED),
                    );
            }
        }
        s.field("prefix", &self.prefix)
            .field("reconnect", &self.reconnect)
            .field("connect_timeout", &self.connect_timeout)
            .field("error", &self.error)
            .finish()
    }
}

/// When the client reconnects after the connection was lost: the process of a stdio server
/// exited, or an HTTP server stopped answering.
///
/// Reconnecting is lazy: the call that finds the connection lost reconnects (a stdio server
/// is started again; an HTTP client opens a new session), up to
/// [`max_attempts`](Self::max_attempts) tries with a doubling pause between them, and then
/// runs. A call in flight when the connection is lost is never re-sent (the server may
/// have run it): it fails with an error result. When every attempt fails, the call fails
/// with [`McpError::Disconnected`]; the next call tries again.
///
/// Default: 3 attempts, pauses from 250 ms doubling up to 4 s.
///
/// ```
/// use std::time::Duration;
/// use agentscope_mcp::ReconnectPolicy;
///
/// let policy = ReconnectPolicy::attempts(4).backoff(Duration::from_millis(100), Duration::from_millis(300));
/// assert_eq!(policy.max_attempts(), 4);
/// assert_eq!(policy.pause_before(1), Duration::ZERO);
/// assert_eq!(policy.pause_before(2), Duration::from_millis(100));
/// assert_eq!(policy.pause_before(3), Duration::from_millis(200));
/// assert_eq!(policy.pause_before(4), Duration::from_millis(300));
/// assert_eq!(ReconnectPolicy::never().max_attempts(), 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(4),
        }
    }
}

impl ReconnectPolicy {
    /// Never reconnect: once the connection is lost, every call fails with
    /// [`McpError::Disconnected`].
    pub fn never() -> Self {
        Self {
            max_attempts: 0,
            ..Self::default()
        }
    }

    /// Up to `max_attempts` connection attempts each time the connection is found lost,
    /// with the default pauses.
    pub fn attempts(max_attempts: u32) -> Self {
        Self {
            max_attempts,
            ..Self::default()
        }
    }

    /// The pause after the first failed attempt (`initial`), doubling after each further
    /// one up to `max`.
    #[must_use]
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max.max(initial);
        self
    }

    /// How many attempts are made each time the connection is found lost.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The pause before attempt `attempt` (1-based): none before the first.
    pub fn pause_before(&self, attempt: u32) -> Duration {
        if attempt <= 1 {
            return Duration::ZERO;
        }
        let doublings = (attempt - 2).min(31);
        self.initial_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.max_backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_for_the_other_transport_are_reported() {
        let config = McpServerConfig::http("http://localhost/mcp")
            .arg("x")
            .env("K", "V");
        assert_eq!(
            config.error,
            Some(McpError::InvalidConfig {
                message: "arg() applies to stdio servers".into()
            })
        );
        let config = McpServerConfig::stdio("node").bearer_token("t");
        assert_eq!(
            config.error.map(|e| e.to_string()),
            Some("invalid MCP server configuration: bearer_token() applies to HTTP servers".into())
        );
    }

    #[test]
    fn a_bad_header_value_is_reported_without_the_value() {
        let config = McpServerConfig::http("http://localhost/mcp").header("x-key", "bad\nsecret");
        let message = config.error.map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            message,
            "invalid MCP server configuration: the value of header 'x-key' is not a valid header value"
        );
        let config = McpServerConfig::http("http://localhost/mcp").header("bad name", "v");
        assert_eq!(
            config.error.map(|e| e.to_string()).as_deref(),
            Some("invalid MCP server configuration: 'bad name' is not a valid header name")
        );
    }

    #[test]
    fn debug_never_shows_secrets() {
        let http =
            McpServerConfig::http("https://user:pa55word@mcp.example.com/mcp?key=qu3ry-secret")
                .bearer_token("bearer-secret")
                .header("x-api-key", "header-secret");
        let shown = format!("{http:?}");
        for secret in ["pa55word", "qu3ry-secret", "bearer-secret", "header-secret"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("x-api-key"), "{shown}");
        assert!(
            shown.contains("https://user:<redacted>@mcp.example.com/mcp?key=<redacted>"),
            "{shown}"
        );
        let stdio = McpServerConfig::stdio("/usr/bin/node").env("TOKEN", "env-secret");
        let shown = format!("{stdio:?}");
        assert!(!shown.contains("env-secret"), "{shown}");
        assert!(shown.contains("TOKEN"), "{shown}");
    }

    #[test]
    fn the_redactor_scrubs_every_configured_secret() {
        let config = McpServerConfig::http("https://user:pa55word@h.example/mcp?key=qu3ry")
            .bearer_token("bearer-secret")
            .header("x-api-key", "header-secret");
        let redactor = config.redactor();
        assert_eq!(
            redactor.scrub(
                "GET https://user:pa55word@h.example/mcp?key=qu3ry failed: bearer-secret header-secret"
            ),
            "GET <redacted> failed: <redacted> <redacted>"
        );
        // A query value quoted alone is scrubbed too.
        assert_eq!(redactor.scrub("bad key qu3ry"), "bad key <redacted>");
        let stdio = McpServerConfig::stdio("node")
            .env("A", "1")
            .env("TOKEN", "env-secret");
        assert_eq!(
            stdio.redactor().scrub("token env-secret, count 1"),
            "token <redacted>, count 1"
        );
    }

    #[test]
    fn default_names() {
        assert_eq!(
            McpServerConfig::stdio("/usr/bin/node").server_name(),
            "node"
        );
        assert_eq!(
            McpServerConfig::http("http://127.0.0.1:3001/mcp").server_name(),
            "127.0.0.1"
        );
        assert_eq!(McpServerConfig::stdio("node").name("x").server_name(), "x");
    }
}
