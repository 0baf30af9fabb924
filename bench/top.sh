#!/usr/bin/env bash
# bench/top.sh: the CPU `scry top` uses at its default rate next to `perf top`,
# in one run on the same machine (release build): both watch the whole system
# (2 spinners busy on the CPUs) for DURATION seconds in their --stdio modes,
# one after the other; CPU is user+sys of the viewer process from
# /usr/bin/time. Prints both and scry's CPU as a ratio to perf's (target <= 1.0).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
DURATION=${DURATION:-10}
cargo build --release --locked -q
scry=target/release/scry
cc -O1 -o target/bench-spin -x c - <<'C'
int main(void) { volatile unsigned long x = 0; for (;;) x++; }
C
target/bench-spin & s1=$!
target/bench-spin & s2=$!
trap 'kill $s1 $s2 2>/dev/null || true' EXIT
sleep 0.5
measure() { # name, command...
    local name=$1; shift
    local out tfile
    tfile=$(mktemp)
    /usr/bin/time -o "$tfile" -f '%U %S' timeout -s INT "$DURATION" "$@" >/dev/null 2>&1 || true
    out=$(tail -1 "$tfile")
    rm -f "$tfile"
    awk -v n="$name" -v o="$out" 'BEGIN { split(o, a, " "); printf "%-34s %8.2f s CPU\n", n, a[1] + a[2] }'
}
echo "top CPU over ${DURATION} s, system-wide, 2 busy spinners, $(nproc) CPUs"
p=$(measure "perf top --stdio (4000 Hz default)" perf top --stdio -d 2)
s=$(measure "scry top --stdio (4000 Hz default)" "$scry" top --stdio -d 2)
echo "$p"; echo "$s"
awk -v p="$p" -v s="$s" 'BEGIN { split(p, a, " "); split(s, b, " ");
    pc = a[length(a) - 2]; sc = b[length(b) - 2];
    if (pc > 0) printf "scry top CPU / perf top CPU: %.2fx\n", sc / pc }'
