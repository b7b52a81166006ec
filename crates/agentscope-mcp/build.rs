//! Sets `has_node` when this machine has Node.js and npm, so the tests against real MCP
//! servers are ignored with the reason without them (the rule:
//! `agentscope_test::components`). Not published: users of the crate never run it.

#[path = "../agentscope-test/build/components.rs"]
mod components;

use components::{cfg, program};

fn main() {
    // The servers are Node packages the tests install with `npm ci` from the committed lock
    // file.
    cfg(
        "has_node",
        &[program("node", "--version"), program("npm", "--version")],
    );
}
