#!/usr/bin/env bash
# Clean build time of a hello-world agent, in one run: agentscope-rs against rig 0.44.
#
#   scripts/build-time.sh [--repo DIR] [--before DIR] [--rounds N] [--debug-only | --release-only]
#
#   --repo DIR        the agentscope-rs checkout to measure (default: this repository)
#   --before DIR      a second checkout, measured in the same rounds, labelled "before"
#   --rounds N        interleaved rounds (default 3); each figure is the median
#   --debug-only, --release-only   one profile (default: both)
#
# Each program is a scratch project outside this repository with its own target directory:
#   agentscope  scripts/build-time/ours: agentscope + agentscope-openai (by path, default
#               features) + tokio; an OpenAI-compatible model from the environment, one
#               `tool_fn` tool, one call. --before takes e.g. an older commit checked out
#               with `git worktree add /tmp/before <commit>`.
#               Each checkout builds its own scripts/build-time/ours/ when it has one (so each
#               API builds its own hello world), else this script's; its Cargo.lock seeds the
#               project's, so the versions are those the checkout tests with.
#   rig 0.44    scripts/build-time/rig: rig-core + rig-agent 0.44.0 + tokio (versions pinned by
#               its Cargo.lock), the same program, built twice: with rig-core's `reqwest`
#               feature, which reaching OpenAI takes, and with rig's default features only (no
#               HTTP client: the program plugs a stub transport).
# `cargo fetch` runs first (downloads are not build time). Then N interleaved rounds (default
# 3; per round and profile: agentscope, [before,] rig, rig default features), each build a
# `cargo clean` of that project's target then `cargo build [--release] --frozen`, timed by the
# wall clock (and its CPU time, user + system). Prints each figure's median and every round's
# value in a markdown table, the ratios of the medians, and the machine it ran on.
#
# Environment:
#   BUILD_TIME_DIR     the scratch directory (default ${TMPDIR:-/tmp}/agentscope-build-time);
#                      it must lie outside every checkout measured, and be new, empty or one
#                      this script made. It keeps the projects, each build's log and the
#                      summary printed last (results/).
#   CARGO_BUILD_JOBS   honoured by every build as cargo does (e.g. 1 on a busy machine).
#   CARGO_INCREMENTAL  0 unless set: cargo compiles path dependencies incrementally in debug
#                      builds, a crates.io dependency never, so 0 builds agentscope as a user's
#                      project would.
#   CARGO_TARGET_DIR and RUSTC_WRAPPER are not used: each project builds in its own target
#   directory, without a compiler cache.
#
# Needs only the Rust toolchain (rig 0.44 wants rustc 1.95 or newer) and crates.io access.
# Measure on a quiet machine: other work on the cores shows up in every figure.
set -euo pipefail

usage() {
    sed -n '2,42p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

rounds=3
profiles=(debug release)
repo=""
before=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds | --repo | --before)
            [ $# -ge 2 ] || { echo "$1 needs a value" >&2; exit 2; }
            case "$1" in
                --rounds) rounds="$2" ;;
                --repo) repo="$2" ;;
                --before) before="$2" ;;
            esac
            shift 2
            ;;
        --rounds=*) rounds="${1#--rounds=}"; shift ;;
        --repo=*) repo="${1#--repo=}"; shift ;;
        --before=*) before="${1#--before=}"; shift ;;
        --debug-only) profiles=(debug); shift ;;
        --release-only) profiles=(release); shift ;;
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

# A checkout: an absolute path holding both crates. The path goes into a TOML literal string.
checkout() {
    local dir
    dir="$(cd "$1" 2>/dev/null && pwd -P)" || { echo "$2: no directory $1" >&2; exit 2; }
    for crate in agentscope agentscope-openai; do
        [ -f "$dir/crates/$crate/Cargo.toml" ] || {
            echo "$2: $dir is not an agentscope-rs checkout (no crates/$crate)" >&2
            exit 2
        }
    done
    case "$dir" in *"'"* | *$'\n'*)
        echo "$2: the path $dir holds a quote or a newline" >&2
        exit 2
        ;;
    esac
    echo "$dir"
}
repo="$(checkout "${repo:-$root}" --repo)"
[ -z "$before" ] || before="$(checkout "$before" --before)"

scratch="${BUILD_TIME_DIR:-${TMPDIR:-/tmp}/agentscope-build-time}"
case "$scratch" in /*) ;; *) scratch="$PWD/$scratch" ;; esac
# Neither may hold the other: the scratch directory gets subdirectories replaced.
apart() {
    local dir
    for dir in "$root" "$repo" ${before:+"$before"}; do
        case "$1/" in "$dir/"*)
            echo "BUILD_TIME_DIR ($1) must lie outside the checkouts ($dir)" >&2
            exit 2
            ;;
        esac
        case "$dir/" in "$1/"*)
            echo "BUILD_TIME_DIR ($1) must not hold a checkout ($dir)" >&2
            exit 2
            ;;
        esac
    done
}
apart "$scratch"
# A directory this script made (or an empty one): it replaces what it finds there.
marker=".agentscope-build-time"
if [ -d "$scratch" ] && [ ! -e "$scratch/$marker" ] && [ -n "$(ls -A "$scratch")" ]; then
    echo "BUILD_TIME_DIR ($scratch) is not empty and was not made by this script" >&2
    exit 2
fi
mkdir -p "$scratch"
scratch="$(cd "$scratch" && pwd -P)"
apart "$scratch"
touch "$scratch/$marker"

say() { echo "== $*" >&2; }

# Every build alike: its own target directory (set per project), no compiler cache, no
# terminal colours in the logs.
unset CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR
export RUSTC_WRAPPER="" RUSTC_WORKSPACE_WRAPPER="" CARGO_TERM_COLOR=never
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

cargo_in() {
    local project="$1"
    shift
    (cd "$project" && CARGO_TARGET_DIR="$project/target" cargo "$@")
}

# The programs in build order, by id; each one's project is $scratch/<id>.
ids=()
declare -A label flags

# The checkout's commit, marked when its crates differ from it.
commit_of() {
    local commit
    commit="$(git -C "$1" rev-parse --short=10 HEAD 2>/dev/null)" || { echo "not a git checkout"; return; }
    git -C "$1" diff --quiet HEAD -- crates Cargo.toml Cargo.lock 2>/dev/null || commit="$commit + uncommitted changes"
    echo "$commit"
}

# An agentscope project in $scratch/$1 over the checkout $2.
ours_project() {
    local id="$1" dir="$2" project="$scratch/$1" sources="$2/scripts/build-time/ours"
    [ -f "$sources/Cargo.toml.in" ] || sources="$root/scripts/build-time/ours"
    say "$id: $project over $dir (program from $sources)"
    mkdir -p "$project"
    rm -rf "$project/src"
    cp -R "$sources/src" "$project/src"
    local manifest
    manifest="$(cat "$sources/Cargo.toml.in")"
    printf '%s\n' "${manifest//@CHECKOUT@/"$dir"}" >"$project/Cargo.toml"
    rm -f "$project/Cargo.lock"
    [ ! -f "$dir/Cargo.lock" ] || cp "$dir/Cargo.lock" "$project/Cargo.lock"
    cargo_in "$project" fetch >&2
    ids+=("$id")
    flags[$id]=""
}

rig_project() {
    local id="$1" project="$scratch/$1"
    say "$id: $project"
    mkdir -p "$project"
    rm -rf "$project/src"
    cp -R "$root/scripts/build-time/rig/src" "$project/src"
    cp "$root/scripts/build-time/rig/Cargo.toml.in" "$project/Cargo.toml"
    cp "$root/scripts/build-time/rig/Cargo.lock" "$project/Cargo.lock"
    cargo_in "$project" fetch --locked >&2
    ids+=("$id")
    flags[$id]="$2"
}

ours_project ours "$repo"
label[ours]="agentscope${before:+ (after)}"
checkouts="${before:+after: }\`$repo\` @ $(commit_of "$repo")"
if [ -n "$before" ]; then
    ours_project before "$before"
    label[before]="agentscope (before)"
    checkouts="$checkouts; before: \`$before\` @ $(commit_of "$before")"
fi
rig_project rig ""
label[rig]="rig 0.44, \`reqwest\` feature (reaches OpenAI)"
rig_project rig-default --no-default-features
label[rig-default]="rig 0.44, default features only (no HTTP client)"

results="$scratch/results"
rm -rf "$results"
mkdir -p "$results"
times="$results/times"
: >"$times"

# `time` reports the wall clock and the CPU time of cargo and the compilers it runs.
TIMEFORMAT='%R %U %S'
load_start="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)"
for round in $(seq 1 "$rounds"); do
    for profile in "${profiles[@]}"; do
        for id in "${ids[@]}"; do
            project="$scratch/$id"
            log="$results/$id.$profile.$round.log"
            release=()
            [ "$profile" = debug ] || release=(--release)
            say "round $round of $rounds, $profile: $id"
            cargo_in "$project" clean >"$log" 2>&1
            # shellcheck disable=SC2086 # the flags are words
            if ! { time cargo_in "$project" build --frozen ${release[@]+"${release[@]}"} ${flags[$id]} >>"$log" 2>&1; } 2>"$log.time"; then
                tail -n 30 "$log" >&2
                echo "the $id build failed; its log: $log" >&2
                exit 1
            fi
            crates="$(grep -c '^ *Compiling ' "$log" || true)"
            read -r wall user sys <"$log.time"
            echo "$id $profile $round $wall $(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }') $crates" >>"$times"
        done
    done
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)"

cpu="$(grep -m 1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
cpus="$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"
command="scripts/build-time.sh --rounds $rounds"
[ ${#profiles[@]} -eq 2 ] || command="$command --${profiles[0]}-only"
[ -z "$before" ] || command="$command --before $before"

summary() {
    echo "machine: $cpus CPUs${cpu:+ ($cpu)}, $(uname -sm), $(rustc -V)"
    local jobs="cargo's default ($cpus)"
    echo "build jobs: ${CARGO_BUILD_JOBS:-$jobs}; CARGO_INCREMENTAL=$CARGO_INCREMENTAL${RUSTFLAGS:+; RUSTFLAGS=$RUSTFLAGS}"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')${load_start:+; load average (1, 5, 15 min) before the first build $load_start, after the last $load_end}"
    echo "command: $command"
    echo "agentscope checkouts: $checkouts"
    echo

    for id in "${ids[@]}"; do printf '%s\t%s\n' "$id" "${label[$id]}"; done |
        awk -v rounds="$rounds" -v profiles="${profiles[*]}" -v ids="${ids[*]}" '
function median(key, what,    n, i, j, v, tmp) {
    n = 0
    for (i = 1; i <= rounds; i++) {
        if ((key, i) in wall) { n++; v[n] = (what == "cpu" ? cpu[key, i] : wall[key, i]) }
    }
    if (n == 0) return ""
    for (i = 2; i <= n; i++) {
        tmp = v[i]
        for (j = i - 1; j >= 1 && v[j] > tmp; j--) v[j + 1] = v[j]
        v[j + 1] = tmp
    }
    return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function s(x) { return x == "" ? "-" : sprintf("%.1f s", x) }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2fx", a / b) }
FNR == NR { split($0, kv, "\t"); label[kv[1]] = kv[2]; next }
{ wall[$1 " " $2, $3] = $4; cpu[$1 " " $2, $3] = $5; crates[$1 " " $2, $3] = $6 }
END {
    np = split(profiles, profile, " ")
    ni = split(ids, id, " ")
    head = "| program |"; rule = "|---|"
    for (p = 1; p <= np; p++) {
        head = head sprintf(" %s, median of %d | %s, each round | %s, CPU time |", profile[p], rounds, profile[p], profile[p])
        rule = rule "---|---|---|"
    }
    print head " crates compiled |"
    print rule "---|"
    for (i = 1; i <= ni; i++) {
        line = "| " label[id[i]] " |"
        counts = ""
        for (p = 1; p <= np; p++) {
            key = id[i] " " profile[p]
            each = ""
            for (r = 1; r <= rounds; r++) each = each (r > 1 ? ", " : "") sprintf("%.1f", wall[key, r])
            line = line " " s(median(key)) " | " each " | " s(median(key, "cpu")) " |"
            c = crates[key, 1]
            if (index(" " counts " ", " " c " ") == 0) counts = counts (counts == "" ? "" : " / ") c
        }
        print line " " counts " |"
    }
    print ""
    head = "| ratio of the medians |"; rule = "|---|"
    for (p = 1; p <= np; p++) { head = head " " profile[p] " | " profile[p] ", CPU time |"; rule = rule "---|---|" }
    print head
    print rule
    n = 0
    for (i = 1; i <= ni; i++) if (id[i] == "ours" || id[i] == "before") {
        for (j = 1; j <= ni; j++) if (id[j] ~ /^rig/) { n++; a[n] = id[i]; b[n] = id[j] }
    }
    if ("before" in label) { n++; a[n] = "ours"; b[n] = "before" }
    for (k = 1; k <= n; k++) {
        line = "| " label[a[k]] " / " label[b[k]] " |"
        for (p = 1; p <= np; p++) {
            line = line " " ratio(median(a[k] " " profile[p]), median(b[k] " " profile[p])) " |"
            line = line " " ratio(median(a[k] " " profile[p], "cpu"), median(b[k] " " profile[p], "cpu")) " |"
        }
        print line
    }
}
    ' - "$times"
    echo
    echo "Each build: \`cargo clean\` of the project's own target directory, then \`cargo build --frozen\` (\`--release\` for release) after a \`cargo fetch\`, timed by the wall clock. CPU time: the user + system time of cargo and the compilers it ran (the median across rounds); unlike the wall clock, it does not count time spent waiting for a core that other work holds. Crates compiled: the \`Compiling\` lines of the first round's log."
}
summary | tee "$results/summary.md"
