//! [`BearerAuth`]: the bearer token that guards a protocol's routes, checked in one place
//! for every protocol; each says what its `401` looks like.

use std::fmt;
use std::sync::Arc;

use agentscope_core::redact::secrets_equal;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::Response;

/// A bearer token the routes of a router require, and the `401` answer of its protocol.
#[derive(Clone)]
pub struct BearerAuth {
    token: Arc<str>,
    unauthorized: fn() -> Response,
}

impl fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuth")
            .field("token", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl BearerAuth {
    /// Requires `Authorization: Bearer <token>`; a request without it, or with another
    /// token, gets `unauthorized()` (with `WWW-Authenticate: Bearer` added) and reaches no
    /// route.
    pub fn new(token: impl Into<Arc<str>>, unauthorized: fn() -> Response) -> Self {
        Self {
            token: token.into(),
            unauthorized,
        }
    }

    /// Whether `headers` carry the token. Compares in time independent of where a wrong
    /// token differs.
    pub fn accepts(&self, headers: &HeaderMap) -> bool {
        headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .is_some_and(|given| secrets_equal(given.as_bytes(), self.token.as_bytes()))
    }

    /// `router` with every route guarded (a route layer: unknown paths are not).
    pub fn guard<S: Clone + Send + Sync + 'static>(self, router: Router<S>) -> Router<S> {
        router.route_layer(middleware::from_fn_with_state(self, authenticate))
    }
}

async fn authenticate(State(auth): State<BearerAuth>, request: Request, next: Next) -> Response {
    if auth.accepts(request.headers()) {
        return next.run(request).await;
    }
    let mut response = (auth.unauthorized)();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}
