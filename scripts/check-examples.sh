#!/usr/bin/env bash
# The examples as a newcomer runs them (`.ci/run` and `just examples` run this):
#
# 1. offline, each example that ends by itself exits 0, and its first line says which model
#    runs or that it runs scripted and why (`mcp` needs Node.js, `two_instances` Redis: each is
#    skipped with a message when missing, outside CI);
# 2. `observability` prints its spans without an OTLP endpoint, and with one (a receiver of
#    a few lines of Python) exports its traces and metrics there;
# 3. `hitl`'s hint, followed literally, continues the stopped session (a store path with a
#    space in it);
# 4. a retry shows: `quickstart` against a port where nothing listens prints one `warning:`
#    line per retry, then the error's chain and exits 1;
# 5. against a real model (llama.cpp's llama-server serving SmolLM2, started with
#    `third_party_openai.sh llama PORT` from ../shared/tools, or $THIRD_PARTY_OPENAI),
#    `cargo run --example quickstart` and `--example streaming` end normally (exit 0) or with
#    a clear model error: `error:` and `caused by:` lines only, no `Debug` dump, no panic. The
#    base URL carries a password and a query key, which no output may show.
#
# Under CI (AGENTSCOPE_CI=1) a missing server script or component fails the check; elsewhere
# it is skipped with a message.
set -euo pipefail
cd "$(dirname "$0")/.."

in_ci() { [ "${AGENTSCOPE_CI:-}" = 1 ]; }
fail() {
    echo "FAILED: $*" >&2
    exit 1
}
skip_or_fail() { # WHY
    if in_ci; then fail "$1"; fi
    echo "skipped: $1"
}
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# shellcheck source=real-model.sh
. scripts/real-model.sh
tmp=$(mktemp -d)
cleanup() {
    stop_real_model
    rm -rf "$tmp"
}
trap cleanup EXIT

# The model the examples use comes from these; the offline checks clear them.
offline=(env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL
    -u AGENTSCOPE_MODEL -u AGENTSCOPE_MAX_TOKENS)

# The examples' packages: `examples/` and one per example that links more (`examples/packages/`).
cargo build --quiet -p agentscope-examples -p 'agentscope-example-*' --examples
bin=target/debug/examples

# An example's first line must say which model runs, or that it runs scripted.
check_first_line() { # NAME FILE
    local first
    first=$(head -n 1 "$2")
    case "$first" in
        "model: "* | "runs scripted, offline: "*) ;;
        *) fail "$1: the first line says neither the model nor why it is scripted: $first" ;;
    esac
}

# An example that failed must have printed its error as `error:` then `caused by:` lines on
# stderr (after any `warning:` lines), and nothing like a panic or a `Debug` dump.
check_ending() { # NAME EXIT-CODE STDOUT STDERR
    local name=$1 code=$2 out=$3 err=$4
    if grep -q "panicked at" "$out" "$err"; then fail "$name panicked: $(cat "$err")"; fi
    case "$code" in
        0) return ;;
        1) ;;
        *) fail "$name exited with $code: $(cat "$err")" ;;
    esac
    if grep -vqE '^(warning|error|caused by): ' "$err"; then
        fail "$name: stderr holds more than warning/error/caused-by lines: $(cat "$err")"
    fi
    [ "$(grep -c '^error: ' "$err")" = 1 ] || fail "$name: not exactly one error: line"
    if grep -A1000 '^error: ' "$err" | tail -n +2 | grep -vq '^caused by: '; then
        fail "$name: lines after error: that are not caused by: lines"
    fi
}

echo "-- offline: each example's first line, and a normal end"
for example in quickstart streaming hitl custom_agent context multi_agent typed_tools; do
    code=0
    "${offline[@]}" timeout 120 "$bin/$example" </dev/null >"$tmp/out" 2>"$tmp/err" || code=$?
    [ "$code" = 0 ] || fail "$example exited with $code: $(cat "$tmp/err")"
    check_first_line "$example" "$tmp/out"
    echo "$example: $(head -n 1 "$tmp/out")"
done
if command -v node >/dev/null; then
    code=0
    "${offline[@]}" timeout 300 "$bin/mcp" </dev/null >"$tmp/out" 2>"$tmp/err" || code=$?
    [ "$code" = 0 ] || fail "mcp exited with $code: $(cat "$tmp/err")"
    check_first_line mcp "$tmp/out"
    grep -q "^answer: " "$tmp/out" || fail "mcp gave no answer: $(cat "$tmp/out")"
    echo "mcp: $(head -n 1 "$tmp/out")"
else
    skip_or_fail "mcp needs Node.js (node is not installed)"
fi
if command -v redis-server >/dev/null; then
    code=0
    "${offline[@]}" -u REDIS_URL timeout 120 "$bin/two_instances" </dev/null >"$tmp/out" 2>"$tmp/err" \
        || code=$?
    [ "$code" = 0 ] || fail "two_instances exited with $code: $(cat "$tmp/err")"
    check_first_line two_instances "$tmp/out"
    echo "two_instances: $(head -n 1 "$tmp/out")"
else
    skip_or_fail "two_instances needs redis-server (not installed)"
fi
# The web chat serves until stopped: its first line, then its address, then stop it.
port=$(free_port)
"${offline[@]}" PORT="$port" SESSIONS_DIR="$tmp/web-sessions" "$bin/web_chat" >"$tmp/web" 2>&1 &
web_pid=$!
for _ in $(seq 1 100); do
    grep -q "^web chat: http://127.0.0.1:$port/" "$tmp/web" && break
    sleep 0.1
done
kill "$web_pid" 2>/dev/null || true
wait "$web_pid" 2>/dev/null || true
grep -q "^web chat: http://127.0.0.1:$port/" "$tmp/web" || fail "web_chat did not serve: $(cat "$tmp/web")"
check_first_line web_chat "$tmp/web"
echo "web_chat: $(head -n 1 "$tmp/web")"
# The A2A server likewise: its first line, its base URL, its card.
port=$(free_port)
"${offline[@]}" PORT="$port" SESSIONS_DIR="$tmp/a2a-sessions" "$bin/a2a" serve >"$tmp/a2a" 2>&1 &
a2a_pid=$!
for _ in $(seq 1 100); do
    grep -q "^A2A agent: http://127.0.0.1:$port/a2a" "$tmp/a2a" && break
    sleep 0.1
done
card=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
    "http://127.0.0.1:$port/a2a/.well-known/agent-card.json" 2>&1 || true)
# `call` against it: a local agent asks it as a tool, its progress and the answer stream;
# three times (each a new context), as a served demo answers any number of requests.
code=0
for round in 1 2 3; do
    "${offline[@]}" timeout 120 "$bin/a2a" call "http://127.0.0.1:$port/a2a" </dev/null \
        >"$tmp/a2a-call-$round" 2>"$tmp/a2a-call-err" || { code=$?; break; }
done
cp "$tmp/a2a-call-1" "$tmp/a2a-call" 2>/dev/null || true
# Two more questions in one context, with curl's body: each gets its answer.
answers=""
for id in m1 m2; do
    answers="$answers $(python3 - "http://127.0.0.1:$port/a2a" "$id" <<'PY' 2>&1 || true
import json, sys, urllib.request
body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
    "role": "ROLE_USER", "messageId": sys.argv[2], "contextId": "demo",
    "parts": [{"text": "What is 6*7?"}]}}}
request = urllib.request.Request(sys.argv[1], json.dumps(body).encode(), {
    "A2A-Version": "1.0", "Content-Type": "application/json"})
task = json.load(urllib.request.urlopen(request))["result"]["task"]
print(task["status"]["state"] + ":" + task["artifacts"][0]["parts"][0]["text"].replace(" ", "_"))
PY
)"
done
kill "$a2a_pid" 2>/dev/null || true
wait "$a2a_pid" 2>/dev/null || true
grep -q "^A2A agent: http://127.0.0.1:$port/a2a" "$tmp/a2a" || fail "a2a did not serve: $(cat "$tmp/a2a")"
case "$card" in *'"name":"calculator"'*) ;; *) fail "a2a: no agent card named calculator: $card" ;; esac
check_first_line a2a "$tmp/a2a"
echo "a2a: $(head -n 1 "$tmp/a2a")"
[ "$code" = 0 ] || fail "a2a call exited with $code: $(cat "$tmp/a2a-call-err")"
check_first_line "a2a call" "$tmp/a2a-call"
expected_call="remote agent: calculator at http://127.0.0.1:$port/a2a/.well-known/agent-card.json (Answers arithmetic questions with a calculator.)
you: What is 6*7?
  calculator | calls calculator({\"expression\":\"6*7\"})
  calculator | calculator returned 42
  calculator | The answer is 42.
  calculator answered: The answer is 42.
assistant: The remote agent says: The answer is 42."
for round in 1 2 3; do
    [ "$(tail -n +3 "$tmp/a2a-call-$round")" = "$expected_call" ] \
        || fail "a2a call $round printed: $(cat "$tmp/a2a-call-$round")"
done
echo "a2a call (3 times): $(tail -n 1 "$tmp/a2a-call")"
[ "$answers" = " TASK_STATE_COMPLETED:The_answer_is_42. TASK_STATE_COMPLETED:The_answer_is_42." ] \
    || fail "a2a: two questions in one context answered:$answers"
echo "a2a: two questions in one context, both answered"

echo "-- observability: the spans printed without an endpoint, exported over OTLP with one"
code=0
"${offline[@]}" -u OTEL_EXPORTER_OTLP_ENDPOINT -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
    timeout 120 "$bin/observability" </dev/null >"$tmp/out" 2>"$tmp/err" || code=$?
[ "$code" = 0 ] || fail "observability exited with $code: $(cat "$tmp/err")"
check_first_line observability "$tmp/out"
grep -q '^no OTEL_EXPORTER_OTLP_ENDPOINT set, so nothing was sent' "$tmp/out" \
    || fail "observability did not say it sent nothing: $(cat "$tmp/out")"
for span in '^invoke_agent assistant \[Internal, ' '^  chat demo-model (offline, scripted) \[Client, ' \
    '^  execute_tool calculator \[Internal, .* gen_ai.tool.call.id=call_1 '; do
    grep -q "$span" "$tmp/out" || fail "observability printed no span like '$span': $(cat "$tmp/out")"
done
[ "$(grep -c '^  chat ' "$tmp/out")" = 2 ] || fail "observability: not two chat spans: $(cat "$tmp/out")"
grep -q '^gen_ai.client.operation.duration {.*} count=2 ' "$tmp/out" \
    || fail "observability printed no duration metric: $(cat "$tmp/out")"
# An OTLP/HTTP receiver of a few lines: it keeps each request's path and body.
port=$(free_port)
python3 - "$port" "$tmp/otlp" <<'PY' &
import http.server, os, sys
os.makedirs(sys.argv[2], exist_ok=True)
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        name = self.path.strip("/").replace("/", "_")
        with open(os.path.join(sys.argv[2], name), "ab") as f:
            f.write(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
PY
sink_pid=$!
for _ in $(seq 1 50); do
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])))' "$port" \
        2>/dev/null && break
    sleep 0.1
done
code=0
"${offline[@]}" -u OTEL_EXPORTER_OTLP_TRACES_ENDPOINT -u OTEL_EXPORTER_OTLP_PROTOCOL \
    OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port" OTEL_SERVICE_NAME=check-examples \
    timeout 120 "$bin/observability" </dev/null >"$tmp/out" 2>"$tmp/err" || code=$?
kill "$sink_pid" 2>/dev/null || true
wait "$sink_pid" 2>/dev/null || true
[ "$code" = 0 ] || fail "observability with an endpoint exited with $code: $(cat "$tmp/err")"
grep -qx "traces and metrics exported to http://127.0.0.1:$port (OTLP)" "$tmp/out" \
    || fail "observability did not say where it exported: $(cat "$tmp/out")"
# Protobuf keeps strings as they are: the span names, the service and the metric show.
for text in 'invoke_agent assistant' 'execute_tool calculator' 'check-examples'; do
    grep -qa "$text" "$tmp/otlp/v1_traces" 2>/dev/null \
        || fail "the OTLP receiver got no trace with '$text'"
done
grep -qa 'gen_ai.client.token.usage\|gen_ai.client.operation.duration' "$tmp/otlp/v1_metrics" \
    2>/dev/null || fail "the OTLP receiver got no GenAI metric"
echo "observability: $(head -n 1 "$tmp/out") -> exported to the OTLP receiver"

echo "-- hitl: the hint, followed as printed, continues the session"
store="$tmp/hitl store"
"${offline[@]}" "$bin/hitl" --session ci --store "$store" >"$tmp/out" 2>&1 \
    || fail "hitl run 1: $(cat "$tmp/out")"
hint=$(grep -E '^  cargo run --example hitl -- .* --approve$' "$tmp/out" | sed 's/^  //') \
    || fail "hitl printed no --approve hint: $(cat "$tmp/out")"
echo "$hint"
eval "${offline[*]} ${hint/cargo run/cargo run --quiet}" >"$tmp/out" 2>&1 \
    || fail "the hint failed: $(cat "$tmp/out")"
grep -qx "assistant: Done: the delete_files said deleted 3 files matching /var/log/app/\*.log." \
    "$tmp/out" || fail "the hint did not resume the stopped call: $(cat "$tmp/out")"

echo "-- a retry shows: quickstart with nothing listening"
port=$(free_port)
code=0
"${offline[@]}" OPENAI_BASE_URL="http://127.0.0.1:$port/v1" timeout 120 "$bin/quickstart" \
    >"$tmp/out" 2>"$tmp/err" || code=$?
[ "$code" = 1 ] || fail "quickstart against a closed port exited with $code"
check_ending quickstart "$code" "$tmp/out" "$tmp/err"
[ "$(grep -c '^warning: model request failed, retrying (' "$tmp/err")" = 2 ] \
    || fail "the two retries do not show: $(cat "$tmp/err")"
grep -qx 'caused by: gave up after 3 attempts' "$tmp/err" || fail "no give-up line: $(cat "$tmp/err")"
cat "$tmp/err"

echo "-- against a real model (llama.cpp, SmolLM2)"
port=$(free_port)
if ! start_real_model "$port" "$tmp/llama.log" >"$tmp/why"; then
    case "$(cat "$tmp/why")" in
        "no server script at "*) skip_or_fail "$(cat "$tmp/why")"; exit 0 ;;
        *) fail "$(cat "$tmp/why")" ;;
    esac
fi
cat "$tmp/why"
for example in quickstart streaming; do
    code=0
    env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL \
        OPENAI_API_KEY=sk-SECRET-key \
        OPENAI_BASE_URL="http://alice:pw-SECRET@127.0.0.1:$port/v1?key=q-SECRET" \
        AGENTSCOPE_MODEL=smollm2 AGENTSCOPE_MAX_TOKENS=64 \
        timeout 600 cargo run --quiet --example "$example" </dev/null >"$tmp/out" 2>"$tmp/err" \
        || code=$?
    check_ending "$example" "$code" "$tmp/out" "$tmp/err"
    first="model: smollm2 at http://alice:<redacted>@127.0.0.1:$port/v1/chat/completions?key=<redacted>, at most 64 tokens per answer (AGENTSCOPE_MAX_TOKENS)"
    [ "$(head -n 1 "$tmp/out")" = "$first" ] || fail "$example's first line: $(head -n 1 "$tmp/out")"
    if grep -q SECRET "$tmp/out" "$tmp/err"; then fail "$example printed a secret"; fi
    echo "$example on llama.cpp: exit $code"
    head -n 1 "$tmp/out"
    tail -n 3 "$tmp/out"
    cat "$tmp/err"
done
echo "examples checked"
