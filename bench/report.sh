#!/bin/sh
# bench/report.sh: scry report / scry flamegraph side by side with their
# peers on two system-wide recordings, in one run; prints wall time, CPU
# time (user+sys), peak memory and the ratios against the goals.
#
# Usage: bench/report.sh
#   SCRY_BENCH_DATA=FILE     the deep file to reuse instead of recording one
#   SCRY_BENCH_SHALLOW=FILE  the shallow file to reuse instead of recording one
#   SCRY_BENCH_RECORDER=perf record with perf instead of scry
#   SCRY_BIN=PATH            time this scry binary instead of building a release one
#   SCRY_BASE=PATH           also time this one (an earlier build: before/after)
#   RUNS=N                   runs of each command (default 3; medians printed)
#   BENCH_FIFO=1             record with the workloads real-time (bench_data.sh)
#   BENCH_PIDS=0             record system-wide (-a) instead of the
#                            workloads' processes only (-p, the default)
#   BENCH_NICE=N             run the timed commands at this nice value
#                            (e.g. -10 on a machine others share: the
#                            wall times then measure the tools, not the
#                            queue for a CPU; default: as started)
#
# The recordings (bench/bench_data.sh, cpu-clock only, `-p WORKLOADS -F
# 10000 -g` with a busy workload on every CPU: the workloads' processes
# only, so another process's samples (a compiler's libLLVM took perf
# report 24 minutes) never enter the file):
#   deep     20 s of workloads/deep (work 24-71 frames down, many distinct
#            stacks; perf report's cost grows with depth): 400k samples on
#            2 CPUs
#   shallow  10 s of workloads/cpu7525 (stacks 3-5 frames deep): 200k
#            samples on 2 CPUs
# Commands, each RUNS times, interleaved (one of each per round, so the
# machine's load falls on all alike), under /usr/bin/time, output to
# /dev/null:
#   dd if=FILE of=/dev/null bs=1M        reading the file once: the floor
#   perf report --stdio                  (children, the default for -g files)
#   perf report --stdio --no-children
#   samply import -s -n --unstable-presymbolicate FILE   (samply 0.13.1,
#            installed with `cargo install --locked samply@0.13.1` when missing)
#   scry report --stdio, and --no-children
#   deep file only: perf script | inferno-collapse-perf | inferno-flamegraph
#            (and FlameGraph's Perl scripts when on PATH) against
#            scry flamegraph -i
# Goals (issue 15): deep: scry report >= 40x perf report (children), >= 10x
# with --no-children, >= 15x samply; shallow: >= 15x perf, >= 10x samply;
# peak memory <= 1/10 of perf's; scry flamegraph >= 40x perf script | inferno.
# Ratios are of wall time (the goals) and of CPU time (what a loaded
# machine cannot blur: wall time there is mostly waiting for a CPU).
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/scry-bench-report.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM

need() { command -v "$1" >/dev/null 2>&1 || { echo "bench/report.sh: $1 is missing ($2)" >&2; exit 2; }; }
need perf "apt-get install linux-perf"
[ -x /usr/bin/time ] || { echo "bench/report.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
need inferno-collapse-perf "cargo install inferno --locked"
need inferno-flamegraph "cargo install inferno --locked"
if ! command -v samply >/dev/null 2>&1; then
    echo "installing samply 0.13.1 (cargo install --locked samply@0.13.1)..." >&2
    cargo install --quiet --locked samply@0.13.1 >&2
fi
need samply "cargo install --locked samply@0.13.1"

scry=${SCRY_BIN:-}
if [ -z "$scry" ]; then
    echo "building scry (release)..." >&2
    (cd "$repo" && cargo build --release --quiet)
    scry="${CARGO_TARGET_DIR:-$repo/target}/release/scry"
fi

# file NAME SECONDS WORKLOAD GIVEN: the recording to use.
file() {
    if [ -n "$4" ]; then
        echo "$4"
        return
    fi
    if [ "${SCRY_BENCH_RECORDER:-scry}" = perf ]; then
        rec="$work/perf-rec"
        printf '#!/bin/sh\nshift; exec perf record "$@"\n' > "$rec"
        chmod +x "$rec"
    else
        rec=$scry
    fi
    BENCH_EVENTS="-e cpu-clock" BENCH_PIDS=${BENCH_PIDS:-1} "$repo/bench/bench_data.sh" "$rec" "$work/$1.data" "$2" 10000 "$3" >&2
    echo "$work/$1.data"
}
deep=$(file deep 20 deep "${SCRY_BENCH_DATA:-}")
shallow=$(file shallow 10 shallow "${SCRY_BENCH_SHALLOW:-}")

runs=${RUNS:-3}
nice=
[ -n "${BENCH_NICE:-}" ] && nice="nice -n $BENCH_NICE "
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# once NAME COMMAND: one run of COMMAND (a shell string; a pipeline's
# stages each under /usr/bin/time, joined by `|`), appending "wall cpu KiB"
# to $work/NAME.runs. A pipeline's peak memory is the sum of its stages'
# (they run at once), its CPU the sum of theirs.
once() {
    name=$1; shift
    cmd="" i=0
    old_ifs=$IFS; IFS='|'
    for stage in $*; do
        i=$((i + 1))
        part="$nice/usr/bin/time -f '%U %S %M' -o $work/stage$i $stage"
        cmd=${cmd:+$cmd |}$part
    done
    IFS=$old_ifs
    start=$(date +%s.%N)
    sh -c "$cmd" > /dev/null 2> "$work/err" || { echo "$name: failed:" >&2; cat "$work/err" >&2; return 0; }
    end=$(date +%s.%N)
    j=1 cpu=0 kib=0
    while [ "$j" -le "$i" ]; do
        read -r u s m < "$work/stage$j" || true
        cpu=$(awk -v c="$cpu" -v u="$u" -v s="$s" 'BEGIN { print c + u + s }')
        kib=$((kib + m))
        j=$((j + 1))
    done
    awk -v a="$start" -v b="$end" -v c="$cpu" -v k="$kib" 'BEGIN { printf "%.3f %.2f %d\n", b - a, c, k }' >> "$work/$name.runs"
}

# bench FILE TAG: every command on FILE, interleaved, then the table.
bench() {
    data=$1 tag=$2
    samples=$(perf report -i "$data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
    echo "== $tag: $data ($(du -h "$data" | cut -f1), $samples samples)"
    set -- \
        "dd (read the file once)@dd if=$data of=/dev/null bs=1M" \
        "perf report --stdio (children)@perf report -i $data --stdio" \
        "perf report --stdio --no-children@perf report -i $data --stdio --no-children" \
        "samply import --presymbolicate@samply import -s -n --unstable-presymbolicate -o $work/samply.json.gz $data" \
        "scry report --stdio (children)@$scry report -i $data --stdio" \
        "scry report --stdio --no-children@$scry report -i $data --stdio --no-children"
    if [ -n "${SCRY_BASE:-}" ]; then
        set -- "$@" \
            "base scry report --stdio (children)@$SCRY_BASE report -i $data --stdio" \
            "base scry report --stdio --no-children@$SCRY_BASE report -i $data --stdio --no-children"
    fi
    if [ "$tag" = deep ]; then
        set -- "$@" \
            "perf script | inferno@perf script -i $data | inferno-collapse-perf | inferno-flamegraph" \
            "scry flamegraph -i@$scry flamegraph -i $data -o $work/scry.svg"
        [ -n "${SCRY_BASE:-}" ] && set -- "$@" "base scry flamegraph -i@$SCRY_BASE flamegraph -i $data -o $work/scry.svg"
        if command -v stackcollapse-perf.pl >/dev/null 2>&1 && command -v flamegraph.pl >/dev/null 2>&1; then
            set -- "$@" "perf script | FlameGraph perl@perf script -i $data | stackcollapse-perf.pl | flamegraph.pl"
        fi
    fi
    : > "$work/names"
    for entry in "$@"; do
        name=${entry%%@*}
        echo "$name" >> "$work/names"
        : > "$work/$tag-$name.runs"
    done
    r=0
    while [ "$r" -lt "$runs" ]; do
        for entry in "$@"; do
            once "$tag-${entry%%@*}" "${entry#*@}"
        done
        r=$((r + 1))
    done
    printf '%-38s %9s %9s %11s\n' "" "wall s" "CPU s" "peak KiB"
    while read -r name; do
        f="$work/$tag-$name.runs"
        [ -s "$f" ] || continue
        wall=$(cut -d' ' -f1 "$f" | median); cpu=$(cut -d' ' -f2 "$f" | median); kib=$(cut -d' ' -f3 "$f" | median)
        echo "$name;$wall;$cpu;$kib" >> "$work/results-$tag"
        printf '%-38s %9.3f %9.2f %11d\n' "$name" "$wall" "$cpu" "$kib"
    done < "$work/names"
}

# ratio TAG PEER OURS GOAL: PEER's time over OURS' (wall and CPU), OURS'
# memory over PEER's, and the wall ratio against GOAL.
ratio() {
    p=$(awk -F';' -v n="$2" '$1 == n' "$work/results-$1") o=$(awk -F';' -v n="$3" '$1 == n' "$work/results-$1")
    [ -n "$p" ] && [ -n "$o" ] || return 0
    echo "$p;$o" | awk -F';' -v peer="$2" -v ours="$3" -v goal="$4" '{
        w = ($6 > 0) ? $2 / $6 : 0; c = ($7 > 0) ? $3 / $7 : 0; m = ($4 > 0) ? $8 / $4 : 0
        verdict = (goal == "") ? "" : (w >= goal ? "goal " goal "x: met" : "goal " goal "x: NOT met")
        printf "  %-34s vs %-34s %6.1fx wall %6.1fx CPU  %5.3f of the memory  %s\n", ours, peer, w, c, m, verdict }'
}

: > "$work/results-deep"; : > "$work/results-shallow"
bench "$deep" deep
echo
bench "$shallow" shallow
echo
echo "ratios (peer / scry; memory scry / peer):"
ratio deep "perf report --stdio (children)" "scry report --stdio (children)" 40
ratio deep "perf report --stdio --no-children" "scry report --stdio --no-children" 10
ratio deep "samply import --presymbolicate" "scry report --stdio --no-children" 15
ratio deep "perf script | inferno" "scry flamegraph -i" 40
ratio deep "base scry report --stdio (children)" "scry report --stdio (children)" ""
ratio deep "base scry report --stdio --no-children" "scry report --stdio --no-children" ""
ratio deep "base scry flamegraph -i" "scry flamegraph -i" ""
ratio deep "perf script | FlameGraph perl" "scry flamegraph -i" ""
ratio deep "dd (read the file once)" "scry report --stdio --no-children" ""
ratio shallow "perf report --stdio (children)" "scry report --stdio (children)" 15
ratio shallow "perf report --stdio --no-children" "scry report --stdio --no-children" 15
ratio shallow "samply import --presymbolicate" "scry report --stdio --no-children" 10
ratio shallow "dd (read the file once)" "scry report --stdio --no-children" ""
ratio shallow "base scry report --stdio (children)" "scry report --stdio (children)" ""
ratio shallow "base scry report --stdio --no-children" "scry report --stdio --no-children" ""
echo "memory goal: <= 0.1 of perf report's. Load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (wall ratios on a loaded machine undersell the faster tool: it waits for a CPU as long as the slower)"
