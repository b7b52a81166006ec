# Every recipe is a plain cargo command; `just` is a convenience, never a requirement.

default: ci

# Format the code.
fmt:
    cargo fmt --all

# Lint everything, warnings are errors.
lint:
    cargo clippy --workspace --all-targets -- -D warnings

# Run every test (unit, integration, doc).
test:
    cargo test --workspace

# Build the docs, warnings are errors.
doc:
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features

# Check agentscope with no features, the default, each feature alone, and full.
features:
    cargo check -p agentscope --no-default-features
    cargo check -p agentscope
    for f in json-store context tiktoken skills rag multi-agent schema; do cargo check -p agentscope --no-default-features --features $f; done
    cargo check -p agentscope --features full

# Check that the committed public API listings match the code (`just api` rewrites them).
api-check:
    cargo run --quiet --manifest-path scripts/public-api/Cargo.toml --target-dir target/public-api -- --check

# Rewrite the public API listings after a deliberate change to the surface.
api:
    cargo run --quiet --manifest-path scripts/public-api/Cargo.toml --target-dir target/public-api

# Run the benchmarks.
bench:
    cargo bench -p agentscope

# Side by side in one run: ours, the async-hook floor and rig 0.44 (builds rig outside the tree).
compare *args:
    scripts/compare-peers.sh {{args}}

# Clean build time of a hello-world agent, ours against rig 0.44 (scratch projects outside the tree).
build-time *args:
    scripts/build-time.sh {{args}}

# Run the quickstart (offline unless OPENAI_API_KEY or OPENAI_BASE_URL is set).
demo:
    cargo run --example quickstart

# The examples as a newcomer runs them, offline and (quickstart, streaming) on a real model
# started with ../shared/tools/third_party_openai.sh; skips what is missing outside CI.
examples:
    scripts/check-examples.sh

# Evaluate the quickstart agent on its case set (offline unless OPENAI_API_KEY or
# OPENAI_BASE_URL is set): `just eval --repeat 5 --markdown report.md`.
eval *args:
    cargo run -p agentscope-example-eval --example eval -- examples/cases/quickstart.jsonl {{args}}

# What CI runs.
ci:
    .ci/run
