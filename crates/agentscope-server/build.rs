//! Sets `has_redis`, `has_node` and `has_chromium` for the components this machine has, so
//! the tests that need a missing one are ignored with the reason (the rule:
//! `agentscope_test::components`). Not published: users of the crate never run it.

#[path = "../agentscope-test/build/components.rs"]
mod components;

use components::{cfg, chromium, program};

fn main() {
    // Two instances of the server on one redis-server.
    cfg("has_redis", &[program("redis-server", "--version")]);
    // The official AG-UI client and the browser driver are Node packages the tests install
    // with `npm ci` from the committed lock files.
    cfg(
        "has_node",
        &[program("node", "--version"), program("npm", "--version")],
    );
    cfg("has_chromium", &[chromium()]);
}
