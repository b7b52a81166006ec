//! The secret checks every model client runs: no secret of the base URL in the `Debug` of
//! the builder or the model, nor in the error of a connection that fails. Each client says
//! how it is built; the scenarios and what they assert are here, once.
//!
//! ```no_run
//! use agentscope_test::model_conformance::secrets::{self, SECRETS};
//! # use agentscope_test::ScriptedModel;
//! # fn build(base_url: &str) -> ScriptedModel { unimplemented!() }
//!
//! // In a client crate, with its builder (1 retry, SECRETS[0] as the key, SECRETS[1] as a
//! // header's value):
//! # async fn run() {
//! secrets::check_connection_error_hides_url_secrets(build, "v1/messages").await;
//! # }
//! ```

use agentscope_core::{Model, ModelError};

use super::{error_texts, given_up_after, hello};

/// Five distinct secrets, so a leak names which one: an API key, a header's value, a key
/// in the base URL's query, a password in its user info, a key read from the environment.
pub const SECRETS: [&str; 5] = [
    "sk-key-secret-1",
    "header-secret-2",
    "query-secret-3",
    "password-secret-4",
    "env-secret-5",
];

/// Checks that `text` (what `what` shows) holds none of [`SECRETS`].
///
/// # Panics
///
/// At the first secret found, naming it.
pub fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} prints {secret}: {text}");
    }
}

/// Checks that a key in the base URL's query and a password in its user info appear in
/// neither the builder's nor the model's `Debug`, and that the model's still names the
/// server. `debug` builds the client for a base URL on `127.0.0.1:9` and returns the
/// builder's `Debug` and the model's.
///
/// # Panics
///
/// When a `Debug` shows a secret, or the model's does not name the server.
pub fn check_base_url_secrets_hidden(debug: impl Fn(&str) -> (String, String)) {
    for base_url in [
        // Some gateways take the key in the URL (`?api-key=...`, `?key=...`).
        format!("http://127.0.0.1:9/v1?api-key={}", SECRETS[2]),
        format!("http://user:{}@127.0.0.1:9/v1", SECRETS[3]),
    ] {
        let (builder_debug, model_debug) = debug(&base_url);
        assert_no_secret(&format!("builder for {base_url}"), &builder_debug);
        assert_no_secret(&format!("model for {base_url}"), &model_debug);
        assert!(model_debug.contains("127.0.0.1:9"), "{model_debug}");
    }
}

/// Checks that a connection that fails quotes no secret of the URL, in any text of its
/// error (`Display`, `Debug`, the source chain), and names the endpoint with its secrets
/// hidden. `model` builds the client for a base URL on `127.0.0.1:9` (where nothing
/// listens) with 1 retry; `path` is the endpoint's path after `/v1/`.
///
/// # Panics
///
/// When the call does not fail as a refused connection tried twice, or an error text shows
/// a secret.
#[allow(clippy::panic)]
pub async fn check_connection_error_hides_url_secrets<M: Model>(
    model: impl Fn(&str) -> M,
    path: &str,
) {
    // Port 9 (discard) on loopback: nothing listens, the connection is refused.
    let url = format!(
        "http://user:{}@127.0.0.1:9/v1?key={}&api-version=2024-06-01",
        SECRETS[3], SECRETS[2]
    );
    let Err(error) = model(&url).stream(hello()).await else {
        panic!("nothing listens on port 9");
    };
    let last = given_up_after(&error, 2);
    assert!(matches!(last, ModelError::Connection { .. }), "{error:?}");
    assert_no_secret("connection error", &error_texts(&error));
    // The endpoint is named, with its secrets hidden.
    let named = format!(
        "gave up after 2 attempts: connection error: sending the request to \
         http://user:<redacted>@127.0.0.1:9/v1/{path}?key=<redacted>&api-version=<redacted>: "
    );
    assert!(error.to_string().starts_with(&named), "{error}");
}
