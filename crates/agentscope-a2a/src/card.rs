//! The agent card, generated once from the agent: its name, the description given, a skill
//! per tool, streaming, the two interfaces served (JSON-RPC and HTTP+JSON, A2A 1.0), and the
//! bearer scheme when a token is required.

use std::collections::HashMap;

use a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, HttpAuthSecurityScheme,
    SecurityScheme, TRANSPORT_PROTOCOL_HTTP_JSON, TRANSPORT_PROTOCOL_JSONRPC,
};
use agentscope::ReActAgent;

/// The card's name for the bearer scheme.
pub(crate) const SCHEME: &str = "bearer";

/// What the card says besides what the agent tells.
pub(crate) struct CardInfo<'a> {
    pub(crate) url: &'a str,
    /// Whether requests need a bearer token.
    pub(crate) bearer: bool,
    pub(crate) description: &'a str,
    pub(crate) version: &'a str,
}

/// The media types the agent reads and writes: text, and JSON (data parts).
const MODES: [&str; 2] = ["text/plain", "application/json"];

pub(crate) fn card(agent: &ReActAgent, info: &CardInfo<'_>) -> AgentCard {
    let tools = agent.toolkit().schemas();
    let skills = if tools.is_empty() {
        vec![skill(agent.name(), agent.name(), info.description, "chat")]
    } else {
        tools
            .iter()
            .map(|tool| skill(&tool.name, &tool.name, &tool.description, "tool"))
            .collect()
    };
    AgentCard {
        name: agent.name().to_owned(),
        description: info.description.to_owned(),
        version: info.version.to_owned(),
        supported_interfaces: vec![
            AgentInterface::new(info.url, TRANSPORT_PROTOCOL_JSONRPC),
            AgentInterface::new(info.url, TRANSPORT_PROTOCOL_HTTP_JSON),
        ],
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extensions: None,
            extended_agent_card: Some(false),
        },
        default_input_modes: MODES.iter().map(|m| (*m).to_owned()).collect(),
        default_output_modes: MODES.iter().map(|m| (*m).to_owned()).collect(),
        skills,
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes: info.bearer.then(|| {
            HashMap::from([(
                SCHEME.to_owned(),
                SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                    scheme: "Bearer".to_owned(),
                    description: None,
                    bearer_format: None,
                }),
            )])
        }),
        security_requirements: info
            .bearer
            .then(|| vec![HashMap::from([(SCHEME.to_owned(), Vec::new())])]),
        signatures: None,
    }
}

fn skill(id: &str, name: &str, description: &str, tag: &str) -> AgentSkill {
    AgentSkill {
        id: id.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        tags: vec![tag.to_owned()],
        examples: None,
        input_modes: None,
        output_modes: None,
        security_requirements: None,
    }
}
