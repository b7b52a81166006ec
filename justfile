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
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# Run the benchmarks.
bench:
    cargo bench -p agentscope

# Side by side in one run: ours, the async-hook floor and rig 0.44 (builds rig outside the tree).
compare *args:
    scripts/compare-peers.sh {{args}}

# Clean build time of a hello-world agent, ours against rig 0.44 (scratch projects outside the tree).
build-time *args:
    scripts/build-time.sh {{args}}

# Run the quickstart (offline unless OPENAI_API_KEY is set).
demo:
    cargo run --example quickstart

# What CI runs.
ci:
    .ci/run
