//! Sets `has_postgres` and `has_openssl` for the components this machine has, so the tests
//! that need a missing one are ignored with the reason (the rule:
//! `agentscope_test::components`). Not published: users of the crate never run it.

#[path = "../agentscope-test/build/components.rs"]
mod components;

use components::{cfg, postgres, program};

fn main() {
    cfg("has_postgres", &[postgres()]);
    // The TLS test makes its certificates with openssl.
    cfg("has_openssl", &[program("openssl", "version")]);
}
