//! Talking to an A2A server over HTTP, for the tests and the benches (which include this
//! file): the SDK's client from a server's card, and a plain JSON request.

use a2a_client::agent_card::AgentCardResolver;
use a2a_client::{A2AClient, A2AClientFactory, Transport};

/// The SDK's client, over its default binding.
pub(crate) type Client = A2AClient<Box<dyn Transport>>;

/// The SDK's client for the server at `url` (its card at the well-known URL below it), over
/// the binding the SDK prefers.
pub(crate) async fn client_at(url: &str) -> Client {
    let card = AgentCardResolver::new(None).resolve(url).await.unwrap();
    A2AClientFactory::builder()
        .build()
        .create_from_card(&card)
        .await
        .unwrap()
}

/// The JSON body of the answer to `request`.
pub(crate) async fn json_of(request: reqwest::RequestBuilder) -> serde_json::Value {
    request.send().await.unwrap().json().await.unwrap()
}
