//! Calling remote agents over A2A 1.0, on the official SDK's types (`a2a-lf`, its ProtoJSON
//! mapping in `a2a-pb`) with HTTP of its own (see `http`): [`RemoteAgent`], a remote agent
//! as a local [`Agent`](agentscope::Agent), and [`RemoteAgentTool`], the same agent as a
//! tool.

// One job per module; `use super::` edges only point down the list (no cycles):
//   agent    -> client, reply, tool, parts, question   RemoteAgent, RemoteAgentBuilder
//   tool                                  RemoteAgentTool: progress, questions as suspension
//   reply    -> client, http, parts, question   one call: a message out, updates in as events
//   client   -> http, error                the card, the interface, following a task
//   http                                   both bindings: credentials by origin, bounds
//   question                               a question's calls, typed; InDoubtCall
//   parts                                  Msg <-> A2A parts, seen from the client
//   error                                  RemoteError
mod agent;
mod client;
mod error;
mod http;
mod parts;
mod question;
mod reply;
mod tool;

pub use agent::{RemoteAgent, RemoteAgentBuilder};
pub use error::RemoteError;
pub use question::InDoubtCall;
pub use tool::RemoteAgentTool;
