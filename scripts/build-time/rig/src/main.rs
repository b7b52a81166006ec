//! The rig 0.44 side of `scripts/build-time.sh`: the same hello-world agent as
//! `../ours/src/main.rs`. An OpenAI model from the environment (the chat-completions route,
//! as agentscope-openai speaks), one typed tool, one prompt, the reply printed.
//!
//! ```sh
//! OPENAI_API_KEY=sk-... AGENTSCOPE_MODEL=gpt-4o-mini cargo run
//! ```
//!
//! Built with `--no-default-features` (rig's default features: no HTTP client), the model
//! sends through a stub transport that fails every request, so that build compiles the same
//! agent and provider code without reqwest.

use rig_agent::prelude::*;
use rig_agent::tool::ToolContext;
use rig_core::providers::openai::{self, OpenAIConfig, Route};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers.
struct Add;

impl Tool for Add {
    const NAME: &'static str = "add";
    type Args = AddArgs;
    type Output = i64;
    type Error = std::convert::Infallible;

    fn description(&self) -> String {
        "Adds two integers.".to_string()
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]
        })
    }

    async fn call(&self, _context: &mut ToolContext, args: AddArgs) -> Result<i64, Self::Error> {
        Ok(args.a.saturating_add(args.b))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // OPENAI_API_KEY, and OPENAI_BASE_URL when set.
    let config = OpenAIConfig::from_env()?.with_route(Route::Chat);
    #[cfg(feature = "reqwest")]
    let provider = config.client();
    #[cfg(not(feature = "reqwest"))]
    let provider = config.connect(stub::NoHttp);
    let name = std::env::var("AGENTSCOPE_MODEL").unwrap_or_else(|_| openai::GPT_4O_MINI.into());
    let agent = AgentBuilder::new(provider.completion(name))
        .preamble("You are a helpful assistant. Use the add tool for arithmetic.")
        .tool(Add)
        .default_max_turns(10)
        .build();
    let reply = agent.prompt("What is 2 + 3?").await?;
    println!("{}", reply.output());
    Ok(())
}

/// A transport that fails every request: rig-core's default features bring none.
#[cfg(not(feature = "reqwest"))]
mod stub {
    use std::future::{Future, ready};

    use bytes::Bytes;
    use rig_core::http_client::{
        Error, HttpClientExt, LazyBody, MultipartForm, Request, Response, Result, StreamingResponse,
    };
    use rig_core::wasm_compat::WasmCompatSend;

    #[derive(Debug, Clone, Copy)]
    pub(crate) struct NoHttp;

    #[derive(Debug)]
    struct NoClient;

    impl std::fmt::Display for NoClient {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("no HTTP client: this build has rig-core's default features only")
        }
    }

    impl std::error::Error for NoClient {}

    impl HttpClientExt for NoHttp {
        fn send<T, U>(
            &self,
            _req: Request<T>,
        ) -> impl Future<Output = Result<Response<LazyBody<U>>>> + WasmCompatSend + 'static
        where
            T: Into<Bytes>,
            T: WasmCompatSend,
            U: From<Bytes>,
            U: WasmCompatSend + 'static,
        {
            ready(Err(Error::instance(NoClient)))
        }

        fn send_multipart<U>(
            &self,
            _req: Request<MultipartForm>,
        ) -> impl Future<Output = Result<Response<LazyBody<U>>>> + WasmCompatSend + 'static
        where
            U: From<Bytes>,
            U: WasmCompatSend + 'static,
        {
            ready(Err(Error::instance(NoClient)))
        }

        fn send_streaming<T>(
            &self,
            _req: Request<T>,
        ) -> impl Future<Output = Result<StreamingResponse>> + WasmCompatSend
        where
            T: Into<Bytes> + WasmCompatSend,
        {
            ready(Err(Error::instance(NoClient)))
        }
    }
}
