//! [`Endpoint`]: the server a store connects to, as given (a connection string, to connect
//! with, never shown), as shown (no password), and the secrets it holds (scrubbed from error
//! messages), by the workspace's one redaction rule (`agentscope_core::redact`).
//!
//! A connection string is a URL (`postgresql://user:password@host:5432/db?sslmode=require`)
//! or libpq's `key=value` form (`host=db user=app password=secret`); both are parsed by
//! tokio-postgres. A URL is shown as [`url_for_display`] shows URLs; a `key=value` string is
//! shown rebuilt from what was parsed, its password replaced by [`REDACTED`].

use std::fmt;
use std::str::FromStr;

use agentscope_core::redact::{REDACTED, Redactor, url_for_display, url_secrets};
use agentscope_core::session::SessionError;
use tokio_postgres::Config;
use tokio_postgres::config::Host;

/// A connection string, parsed, with how it is shown and what must never be.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// The parsed settings, password included: only for connecting.
    config: Config,
    shown: String,
    redactor: Redactor,
}

impl Endpoint {
    /// Parses `text`; `password` (when given) replaces the string's password.
    pub(crate) fn parse(text: &str, password: Option<&str>) -> Result<Self, SessionError> {
        let shown = shown(text);
        let mut secrets = url_secrets(text);
        secrets.extend(password.map(str::to_owned));
        let config = match Config::from_str(text) {
            Ok(config) => config,
            Err(error) => {
                let redactor = Redactor::new(&secrets);
                return Err(SessionError::backend_message(
                    None,
                    format_args!(
                        "invalid PostgreSQL connection string {shown}: {}",
                        redactor.scrub(error.to_string())
                    ),
                ));
            }
        };
        let mut config = config;
        if let Some(password) = password {
            config.password(password);
        }
        if let Some(password) = config.get_password() {
            secrets.push(String::from_utf8_lossy(password).into_owned());
        }
        Ok(Self {
            config,
            shown,
            redactor: Redactor::new(secrets),
        })
    }

    /// The settings to connect with (password included).
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The settings to connect with, to change before connecting.
    pub(crate) fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// The connection string without its password.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// `text` with every secret of the endpoint redacted (a second line of defence: no
    /// message of tokio-postgres quotes a password).
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.redactor.scrub(text)
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.shown, f)
    }
}

/// How a connection string is shown: a URL without its password (and query values); a
/// `key=value` string rebuilt from its settings with the password redacted; a string that
/// does not parse, not at all.
pub(crate) fn shown(text: &str) -> String {
    if text.contains("://") {
        return url_for_display(text);
    }
    match Config::from_str(text) {
        Ok(config) => describe(&config),
        Err(_) => format!("{REDACTED} (a connection string that does not parse)"),
    }
}

/// `host=... port=... user=... dbname=... [password=<redacted>]` from `config`.
fn describe(config: &Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    let mut parts = Vec::new();
    if !hosts.is_empty() {
        parts.push(format!("host={}", hosts.join(",")));
    }
    if !ports.is_empty() {
        parts.push(format!("port={}", ports.join(",")));
    }
    if let Some(user) = config.get_user() {
        parts.push(format!("user={user}"));
    }
    if let Some(dbname) = config.get_dbname() {
        parts.push(format!("dbname={dbname}"));
    }
    if config.get_password().is_some() {
        parts.push(format!("password={REDACTED}"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_never_shown() {
        let cases = [
            (
                "postgresql://app:s3cret-pw@127.0.0.1:5432/sessions",
                "postgresql://app:<redacted>@127.0.0.1:5432/sessions",
            ),
            // The workspace's rule: user information without `:` may be a password.
            (
                "postgres://app@db.internal/sessions?sslmode=require",
                "postgres://<redacted>@db.internal/sessions?sslmode=<redacted>",
            ),
            (
                "host=db.internal port=6432 user=app password='s3cret pw' dbname=sessions",
                "host=db.internal port=6432 user=app dbname=sessions password=<redacted>",
            ),
            (
                "host=/run/postgresql user=app",
                "host=/run/postgresql user=app",
            ),
            (
                "host=db password='unterminated",
                "<redacted> (a connection string that does not parse)",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(shown(text), expected, "{text}");
        }
    }

    #[test]
    fn the_secrets_are_scrubbed_in_every_form() {
        let endpoint = Endpoint::parse(
            "host=db user=app password='s3cret pw'",
            Some("given-separately"),
        )
        .unwrap();
        assert_eq!(
            endpoint.config().get_password(),
            Some(&b"given-separately"[..])
        );
        assert_eq!(
            endpoint.scrub("auth given-separately failed"),
            "auth <redacted> failed"
        );
        let url = Endpoint::parse("postgresql://app:p%40ss-word@db/x", None).unwrap();
        assert_eq!(url.config().get_password(), Some(&b"p@ss-word"[..]));
        assert_eq!(
            url.scrub("p@ss-word and p%40ss-word"),
            "<redacted> and <redacted>"
        );
        assert_eq!(format!("{url:?}"), "\"postgresql://app:<redacted>@db/x\"");
    }

    #[test]
    fn an_invalid_string_is_reported_without_its_password() {
        let error = Endpoint::parse("postgresql://app:hunter22@db/x?sslmode=maybe", None)
            .err()
            .unwrap();
        let text = format!("{error} {error:?}");
        assert!(!text.contains("hunter22"), "{text}");
        assert!(
            text.contains("invalid PostgreSQL connection string postgresql://app:<redacted>@db/x"),
            "{text}"
        );
    }
}
