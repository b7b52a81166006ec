//! Sets `has_redis`, `has_redis_cli` and `has_openssl` for the components this machine has,
//! so the tests that need a missing one are ignored with the reason (the rule:
//! `agentscope_test::components`). Not published: users of the crate never run it.

#[path = "../agentscope-test/build/components.rs"]
mod components;

use components::{cfg, program};

fn main() {
    cfg("has_redis", &[program("redis-server", "--version")]);
    // The cluster test creates its cluster with redis-cli.
    cfg("has_redis_cli", &[program("redis-cli", "--version")]);
    // The TLS test makes its certificates with openssl.
    cfg("has_openssl", &[program("openssl", "version")]);
}
