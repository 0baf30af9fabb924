#!/usr/bin/env bash
# bench/serve.sh: how fast `scry serve` answers on the bench's large
# recording (bench/bench_data.sh: 400k samples with the defaults on 2
# CPUs): the flame graph (goal: under 0.5 s), the heat map (goal: under
# 0.2 s), a heat map selection's flame graph and the function table; the
# time to load the file before serving is printed too. Each answer is
# asked once (first: made) and then RUNS times more (repeated: the server
# keeps what it made) with curl; the first time and the repeats' median
# are printed, the goal applies to both.
#
# Usage: bench/serve.sh [SECONDS=20] [FREQ=10000] [WORKLOAD=deep]
#   SCRY_BENCH_DATA=FILE   reuse an existing recording instead of making one
#   RUNS=N                 requests per answer (default 5)
#   SCRY_BIN=PATH          time this scry binary instead of building a release one
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/bench/common.sh"
command -v curl > /dev/null || { echo "bench/serve.sh: curl is missing (scripts/deps)" >&2; exit 2; }
bench_scry serve.sh

data=${SCRY_BENCH_DATA:-}
if [ -z "$data" ]; then
    data="$out/perf.data"
    "$repo/bench/bench_data.sh" "$scry" "$data" "${1:-20}" "${2:-10000}" "${3:-deep}"
fi
echo "file: $data ($(du -h "$data" | cut -f1))"

start=$(date +%s.%N)
: > "$out/banner"
"$scry" serve --port 0 "$data" 2> "$out/banner" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$out"' EXIT INT TERM
url=
while [ -z "$url" ]; do
    kill -0 $server 2>/dev/null || { echo "bench/serve.sh: scry serve ended:" >&2; cat "$out/banner" >&2; exit 2; }
    url=$(sed -n 's|.*\(http://[^ ]*/\).*|\1|p' "$out/banner")
    [ -n "$url" ] || sleep 0.1
done
ready=$(date +%s.%N)
printf '%-44s %8.3f s\n' "loading the file (before serving)" "$(awk -v a="$ready" -v b="$start" 'BEGIN {print a - b}')"
samples=$(curl -sf "${url}api/files" | sed -n 's/^\[{"event":[0-9]*,"events":\[[^]]*\],"index":0,"name":"[^"]*","samples":\([0-9]*\).*/\1/p')
echo "samples: $samples"

runs=${RUNS:-5}
# time NAME PATH GOAL: the first answer and the median of $runs more,
# against GOAL seconds (0: no goal).
time_answer() {
    : > "$out/t"
    first=$(curl -sf -o "$out/body" -w '%{time_total}' "$url$2") || {
        echo "$1: failed: $(cat "$out/body" 2>/dev/null)" >&2; return 0; }
    r=0
    while [ "$r" -lt "$runs" ]; do
        curl -sf -o "$out/body" -w '%{time_total}\n' "$url$2" >> "$out/t" || {
            echo "$1: failed: $(cat "$out/body" 2>/dev/null)" >&2; return 0; }
        r=$((r + 1))
    done
    t=$(median t)
    size=$(wc -c < "$out/body")
    if [ "$3" = 0 ]; then
        printf '%-36s first %7.3f s  repeated %7.3f s %10d bytes\n' "$1" "$first" "$t" "$size"
    else
        verdict=$(awk -v f="$first" -v t="$t" -v g="$3" 'BEGIN {print (f < g && t < g ? "ok" : "over")}')
        printf '%-36s first %7.3f s  repeated %7.3f s %10d bytes  goal < %s s  %s\n' "$1" "$first" "$t" "$size" "$3" "$verdict"
    fi
}
time_answer "flame graph (/api/flamegraph)" "api/flamegraph?file=0" 0.5
time_answer "heat map (/api/heatmap)" "api/heatmap?file=0" 0.2
time_answer "icicle" "api/flamegraph?file=0&inverted=1" 0.5
time_answer "selection 2.0-4.49's flame graph" "api/flamegraph?file=0&from=2.0&to=4.49" 0.5
time_answer "function table (/api/calltree)" "api/calltree?file=0" 0
