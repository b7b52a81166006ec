//! The web chat page: its three files, compiled into the binary, and the routes that serve
//! them.

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

const CHAT_HTML: &str = include_str!("../static/index.html");
const CHAT_JS: &str = include_str!("../static/app.js");
const CHAT_CSS: &str = include_str!("../static/style.css");

/// `router` with the chat page at `/` and its assets under `/chat/`.
pub(crate) fn with_chat_page<S>(router: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    router
        .route("/", get(|| async { Html(CHAT_HTML) }))
        .route(
            "/chat/app.js",
            get(|| async { asset("text/javascript", CHAT_JS) }),
        )
        .route(
            "/chat/style.css",
            get(|| async { asset("text/css", CHAT_CSS) }),
        )
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}
