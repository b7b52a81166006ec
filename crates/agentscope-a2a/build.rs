//! Sets `has_redis` and `has_postgres` for the components this machine has, so the tests
//! that need a missing one are ignored with the reason (the rule:
//! `agentscope_test::components`). Not published: users of the crate never run it.

#[path = "../agentscope-test/build/components.rs"]
mod components;

use components::{cfg, postgres, program};

fn main() {
    // The lease-expiry trials on every leasing store.
    cfg("has_redis", &[program("redis-server", "--version")]);
    cfg("has_postgres", &[postgres()]);
}
