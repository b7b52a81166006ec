#!/usr/bin/env bash
# Side by side, in one run: agentscope-rs, the Rust floor of an async hook, and rig 0.44.
#
#   scripts/compare-peers.sh [--rounds N] [--quick]
#
# Builds our `peers` bench (crates/agentscope/benches/peers.rs) and, in a scratch project
# outside this repository, the rig program of scripts/compare-rig/ (rig-core and rig-agent
# 0.44.0 from crates.io; the first run downloads and compiles them, a few minutes). Then runs
# N interleaved rounds (ours, rig, ours, rig, ...; default 4), takes each figure's median
# across the rounds and prints a markdown table with ratios, and the machine it ran on.
# Each round times every figure as the median of 151 batches of about 2 ms (`--quick`: 41).
#
# Environment:
#   COMPARE_DIR       the scratch project (default ${TMPDIR:-/tmp}/agentscope-compare-rig);
#                     it must lie outside the repository. It keeps its own target directory,
#                     so later runs rebuild nothing, and each round's raw output and the
#                     summary printed last (results/).
#   CARGO_TARGET_DIR  honoured for our workspace as cargo does; never used for rig's build.
#   CARGO_BUILD_JOBS  honoured by both builds as cargo does (e.g. 1 on a busy machine).
#
# Needs only the Rust toolchain (rig 0.44 wants rustc 1.95 or newer) and crates.io access.
set -euo pipefail

usage() {
    sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

rounds=4
quick=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds)
            [ $# -ge 2 ] || { echo "--rounds needs a number" >&2; exit 2; }
            rounds="$2"
            shift 2
            ;;
        --rounds=*)
            rounds="${1#--rounds=}"
            shift
            ;;
        --quick)
            quick=(--quick)
            shift
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "unknown argument: $1 (see --help)" >&2
            exit 2
            ;;
    esac
done
case "$rounds" in
    '' | *[!0-9]* | 0)
        echo "--rounds must be a positive integer, not '$rounds'" >&2
        exit 2
        ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
compare_dir="${COMPARE_DIR:-${TMPDIR:-/tmp}/agentscope-compare-rig}"
case "$compare_dir" in /*) ;; *) compare_dir="$PWD/$compare_dir" ;; esac
outside_repo() {
    case "$1/" in
        "$root/"* | "$(cd "$root" && pwd -L)/"*)
            echo "COMPARE_DIR ($1) must lie outside the repository ($root)" >&2
            exit 2
            ;;
    esac
}
outside_repo "$compare_dir"
mkdir -p "$compare_dir"
compare_dir="$(cd "$compare_dir" && pwd -P)"
outside_repo "$compare_dir"

say() { echo "== $*" >&2; }

# The rig program: a fresh copy of the committed sources, built with its own target dir.
say "rig 0.44 program in $compare_dir"
# A file is copied only when its content differs, so an unchanged program is not rebuilt.
sync_file() {
    if ! cmp -s "$1" "$2"; then
        mkdir -p "$(dirname "$2")"
        cp "$1" "$2"
    fi
}
sync_file "$root/scripts/compare-rig/Cargo.toml.in" "$compare_dir/Cargo.toml"
if [ -d "$compare_dir/src" ]; then
    (cd "$compare_dir/src" && find . -type f) | while read -r file; do
        [ -f "$root/scripts/compare-rig/src/$file" ] || rm -f "$compare_dir/src/$file"
    done
fi
(cd "$root/scripts/compare-rig/src" && find . -type f) | while read -r file; do
    sync_file "$root/scripts/compare-rig/src/$file" "$compare_dir/src/$file"
done
locked=()
if [ -f "$root/scripts/compare-rig/Cargo.lock" ]; then
    # The versions the committed figures were measured with.
    sync_file "$root/scripts/compare-rig/Cargo.lock" "$compare_dir/Cargo.lock"
    locked=(--locked)
fi
(
    cd "$compare_dir"
    CARGO_TARGET_DIR="$compare_dir/target" cargo build --release ${locked[@]+"${locked[@]}"} >&2
)
rig_bin="$compare_dir/target/release/agentscope-compare-rig"

# Ours: the `peers` bench binary, built as `cargo bench` builds it.
say "agentscope peers bench"
(
    cd "$root"
    cargo bench -p agentscope --bench peers --no-run --message-format=json-render-diagnostics
) >"$compare_dir/peers-build.json"
ours_bin="$(
    grep '"name":"peers"' "$compare_dir/peers-build.json" | grep -o '"executable":"[^"]*"' |
        tail -n 1 | cut -d'"' -f4 || true
)"
if [ -z "$ours_bin" ] || [ ! -x "$ours_bin" ]; then
    echo "could not find the peers bench binary" >&2
    exit 1
fi

load_start="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)"
results="$compare_dir/results"
rm -rf "$results"
mkdir -p "$results"
for round in $(seq 1 "$rounds"); do
    say "round $round of $rounds: ours"
    "$ours_bin" --bench ${quick[@]+"${quick[@]}"} >"$results/ours.$round"
    say "round $round of $rounds: rig"
    "$rig_bin" ${quick[@]+"${quick[@]}"} >"$results/rig.$round"
done

cpu="$(grep -m 1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
load_end="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)"
cpus="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"
rig_detail="$(grep -h '^#' "$results/rig.1" | sed 's/^# *//' || true)"

summary() {
    echo "machine: $cpus CPUs${cpu:+ ($cpu)}, $(uname -sm), $(cd "$root" && rustc -V)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')${load_start:+; load average (1, 5, 15 min) at the first round $load_start, after the last $load_end}"
    echo "command: scripts/compare-peers.sh --rounds $rounds${quick[0]+ --quick}"
    echo

    # Each round's figures, the derived ones per round, then medians across rounds.
    awk -v rounds="$rounds" -v rig_detail="$rig_detail" '
function median(key,    n, i, j, v, tmp) {
    n = 0
    for (i = 1; i <= rounds; i++) {
        if ((key, i) in value) { n++; v[n] = value[key, i] }
    }
    if (n == 0) return ""
    for (i = 2; i <= n; i++) {
        tmp = v[i]
        for (j = i - 1; j >= 1 && v[j] > tmp; j--) v[j + 1] = v[j]
        v[j + 1] = tmp
    }
    return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function t(ns) {
    if (ns == "") return "-"
    if (ns >= 1000 || ns <= -1000) return sprintf("%.2f µs", ns / 1000)
    return sprintf("%.1f ns", ns)
}
function plus(ns) { return (ns == "" ? "-" : (ns >= 0 ? "+" : "") t(ns)) }
function ratio(a, b) {
    if (a == "" || b == "" || b == 0) return "-"
    return sprintf("%.2fx", a / b)
}
FNR == 1 {
    round = parts[split(FILENAME, parts, ".")]
}
/^#/ { next }
NF == 3 { value[$1 " " $2, round] = $3 }
END {
    for (r = 1; r <= rounds; r++) {
        o0 = value["ours react_call_0", r]; o10 = value["ours react_call_10", r]
        r0 = value["rig react_call_0", r]; r10 = value["rig react_call_10", r]
        oc = value["ours hook_calls_per_run", r]; rc = value["rig hook_calls_per_run", r]
        value["ours added_10", r] = o10 - o0
        value["rig added_10", r] = r10 - r0
        value["ours per_invocation", r] = (o10 - o0) / (10 * oc)
        value["rig per_invocation", r] = (r10 - r0) / (10 * rc)
    }
    floor = median("floor boxed_dyn_future")
    o0 = median("ours react_call_0"); r0 = median("rig react_call_0")
    o10 = median("ours react_call_10"); r10 = median("rig react_call_10")
    oa = median("ours added_10"); ra = median("rig added_10")
    op = median("ours per_invocation"); rp = median("rig per_invocation")
    oasync = median("ours hook_async_per_event"); ofn = median("ours hook_fn_per_event")
    oc = median("ours hook_calls_per_run"); rc = median("rig hook_calls_per_run")

    printf "| figure (median of %d rounds) | floor | rig 0.44 | ours | ours/rig | ours/floor |\n", rounds
    print "|---|---|---|---|---|---|"
    printf "| ReAct call (one tool call, then the answer; instant model), 0 hooks | - | %s | %s | %s | - |\n", t(r0), t(o0), ratio(o0, r0)
    printf "| the same call with 10 no-op async hooks | - | %s | %s | %s | - |\n", t(r10), t(o10), ratio(o10, r10)
    printf "| added cost of 10 no-op async hooks on a ReAct call | - | %s | %s | %s | - |\n", plus(ra), plus(oa), ratio(oa, ra)
    printf "| per hook invocation (added cost / (10 x calls per hook per run: rig %d, ours %d)) | %s | %s | %s | %s | %s |\n", rc, oc, t(floor), t(rp), t(op), ratio(op, rp), ratio(op, floor)
    printf "| async no-op hook, per hook per event (one PreReasoning event, 10 hooks) | %s | - | %s | - | %s |\n", t(floor), t(oasync), ratio(oasync, floor)
    printf "| `hook_fn` no-op hook, per hook per event (same event, 10 hooks) | %s | - | %s | - | %s |\n", t(floor), t(ofn), ratio(ofn, floor)
    print ""
    print "floor: an async no-op called through `dyn` with a boxed future, per call, measured in our bench binary."
    print ""
    print "The added cost and the per-invocation figures are the median of each round'"'"'s own difference (10 hooks - 0 hooks), so they need not equal the difference of the medians above them."
    print ""
    detail = ""
    n = split(rig_detail, calls, " ")
    for (i = 1; i <= n; i++) {
        split(calls[i], kv, "=")
        if (kv[1] == "observes" || kv[2] == 0) continue
        detail = detail (detail == "" ? "" : ", ") kv[1] " " kv[2] (kv[1] == "on_model_select" ? " (synchronous)" : "")
    }
    printf "hook calls per hook per run, counted by a hook that increments an atomic: rig %d (%s), ours %d (one per event).\n", rc, detail, oc
    print ""
    print "Per round (each figure the median of its batches within the round):"
    print ""
    print "| round | rig, 0 hooks | rig, 10 hooks | ours, 0 hooks | ours, 10 hooks | floor | ours async hook per event |"
    print "|---|---|---|---|---|---|---|"
    for (r = 1; r <= rounds; r++) {
        printf "| %d | %s | %s | %s | %s | %s | %s |\n", r, t(value["rig react_call_0", r]), t(value["rig react_call_10", r]), t(value["ours react_call_0", r]), t(value["ours react_call_10", r]), t(value["floor boxed_dyn_future", r]), t(value["ours hook_async_per_event", r])
    }
}
    ' "$results"/ours.* "$results"/rig.*
}
summary | tee "$results/summary.md"
