//! The bearer token that guards the A2A methods (the agent card stays public, so clients
//! can learn that a token is needed).

use agentscope_core::plumbing::redact::secrets_equal;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The card's name for the scheme.
pub(crate) const SCHEME: &str = "bearer";

/// Lets a request through when it carries `Authorization: Bearer <token>`; answers `401`
/// otherwise, without saying what was given. Compares in time independent of where a
/// wrong token differs.
pub(crate) async fn authenticate(
    State(token): State<Arc<str>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    match given {
        Some(given) if secrets_equal(given.as_bytes(), token.as_bytes()) => next.run(request).await,
        _ => {
            let body = json!({
                "code": "unauthorized",
                "message": "a valid bearer token is required (Authorization: Bearer <token>)",
            });
            let mut response = (StatusCode::UNAUTHORIZED, Json(body)).into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}
