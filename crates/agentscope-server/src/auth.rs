//! The bearer token that guards the `/agents` routes.

use agentscope_core::plumbing::redact::secrets_equal;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Lets a request through when it carries `Authorization: Bearer <token>`; answers `401`
/// otherwise. Compares in time independent of where a wrong token differs.
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
            let mut response = ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid bearer token is required (Authorization: Bearer <token>)",
            )
            .into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            response
        }
    }
}
