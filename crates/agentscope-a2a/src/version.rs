//! The `A2A-Version` header on the HTTP+JSON binding. The SDK checks it on JSON-RPC only;
//! its REST router served any version, or none.

use a2a::{A2AError, error_code, error_reason};
use axum::Json;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// The major version served.
const MAJOR: &str = "1";

/// Lets a request through when its `A2A-Version` names version 1 (`1`, `1.0`, `1.1`);
/// answers `400` with `VersionNotSupportedError` otherwise. A request without the header
/// asks for 0.3 (the specification's rule, as the SDK applies it on JSON-RPC).
pub(crate) async fn require_version(request: Request, next: Next) -> Response {
    let asked = request
        .headers()
        .get("a2a-version")
        .map(|value| value.to_str().unwrap_or("?").trim().to_owned())
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| "0.3".to_owned());
    if asked.split('.').next() == Some(MAJOR) {
        return next.run(request).await;
    }
    // The SDK's REST error (AIP-193 with an ErrorInfo), as its other errors are sent.
    let error = A2AError::version_not_supported(&asked);
    let status = StatusCode::from_u16(error.http_status_code()).unwrap_or(StatusCode::BAD_REQUEST);
    let body = json!({"error": {
        "code": status.as_u16(),
        "status": "FAILED_PRECONDITION",
        "message": error.message,
        "details": [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": error_reason(error_code::VERSION_NOT_SUPPORTED),
            "domain": "a2a-protocol.org",
        }],
    }});
    let mut response = (status, Json(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    response
}
