#!/usr/bin/env bash
# bench/oncpu.sh: on-CPU stack sampling of the whole machine at 99 Hz for
# SECS seconds while two spinners keep both CPUs busy, side by side in one
# run, ratios printed:
#
#   scry      `scry profile-bpf -F 99 -f SECS` (counted in the kernel,
#             folded stacks at the end)
#   perf      `perf record -F 99 -a -g -- sleep SECS`, then
#             `perf script | inferno-collapse-perf` (the same folded answer;
#             the three processes' CPU time summed, the largest peak RSS)
#   bpftrace  `bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] =
#             count(); }'` stopped by SIGINT after SECS
#
# CPU time is the tool's own (user + system, /usr/bin/time, children
# included): the BPF programs run in the sampled tasks, not in the tool, in
# scry's and bpftrace's case alike. Peak RSS is /usr/bin/time's %M.
#
# Start CPU: the CPU time (perf stat's task-clock, ms: /usr/bin/time's
# 10 ms steps round scry's to 0) of a start
# followed by an end at once, which the load of a shared machine does not
# stretch as it stretches wall times: `scry profile-bpf -F 99 -p PID` of a
# sleeping process killed 0.1 s after scry's banner says it samples (no sample
# to name; a run that fails is not counted and says so), against
# `bpftrace -e 'BEGIN { exit(); } profile:hz:99 {...}'` (BEGIN runs once
# every probe is attached). (Until 2026-11-27 the process exited 0.2 s
# after it was started, whatever scry had done by then: on a loaded
# machine scry's start can take longer, and a run that found the process
# gone failed and was counted as well.)
#
# Start: the wall time from the command to its ready line, median of REPS:
# scry's banner (printed once the sampling program is attached to every
# CPU: its first sample follows within 1/99 s) against bpftrace's
# `BEGIN { printf("ready\n") }` with the same profile probe (printed once
# every probe is attached), and against bpftrace's first sample itself
# (`profile:hz:99 { printf("sample\n"); exit(); }`).
#
# inferno-collapse-perf comes from `cargo install inferno --locked`
# (installed here when missing; without it, scry's own collapse of the
# perf.data, `scry flamegraph --folded -i`, stands in and the line says so).
#
# The machine may be shared: the CPU runs are interleaved (scry, perf,
# bpftrace, RUNS times) and each figure is the median of its RUNS.
# scry's `-v` line "loaded and attached in N ms" splits its start (BTF,
# load and verifier, attach) from the exec; "N counts named in M ms" is
# the cost of the symbols at the end (both printed below, medians).
#
# Every tool runs under `timeout`, KILL as the last word: a tool that
# ignores the signal that should stop it cannot hang the bench.
#
# Usage: bench/oncpu.sh   (env SECS=10, RUNS=3, REPS=5, SCRY_BIN=path to skip the build)
# Needs: root, perf, bpftrace (scripts/deps), cc, /usr/bin/time.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10} REPS=${REPS:-5} RUNS=${RUNS:-3}
for tool in perf bpftrace stdbuf cc /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench/oncpu.sh: no $tool (scripts/deps)" >&2; exit 2; }
done
. bench/common.sh
bench_scry oncpu.sh
spinner=$(scripts/workload spinner)

collapse=$(command -v inferno-collapse-perf || echo "$HOME/.cargo/bin/inferno-collapse-perf")
if [ ! -x "$collapse" ]; then
    PATH="$HOME/.cargo/bin:$PATH" cargo install inferno --locked --quiet >&2 || true
fi
if [ -x "$collapse" ]; then
    collapse_name=inferno-collapse-perf
    collapse_cmd="'$collapse'"
else
    collapse_name="scry flamegraph --folded (inferno not installable)"
    collapse_cmd="'$scry' flamegraph --folded -i -"
fi

"$spinner" >/dev/null & spin1=$!
"$spinner" >/dev/null & spin2=$!
trap 'kill $spin1 $spin2 2>/dev/null; rm -rf "$out"' EXIT

# timed NAME CMD...: runs CMD under /usr/bin/time; appends "cpu_s rss_kb"
# to $out/NAME.
timed() {
    local name=$1; shift
    /usr/bin/time -f "%U %S %M" -o "$out/$name.time" "$@"
    awk '{printf "%.3f %d\n", $1 + $2, $3}' "$out/$name.time" >>"$out/$name"
}

echo "bench/oncpu.sh: ${SECS} s at 99 Hz, every CPU, two spinners busy, median of $RUNS interleaved runs (load average $(cut -d" " -f1-3 /proc/loadavg))"
for _ in $(seq "$RUNS"); do
    limit=$((SECS + 120))
    timed scry timeout -s KILL "$limit" "$scry" profile-bpf -v -F 99 -f "$SECS" >"$out/scry.folded" 2>"$out/scry.err"
    sed -n 's/.*loaded and attached in \([0-9.]*\) ms/\1/p' "$out/scry.err" >>"$out/scry_load"
    sed -n 's/.* counts named in \([0-9.]*\) ms/\1/p' "$out/scry.err" >>"$out/scry_naming"
    timed perf_record timeout -s KILL "$limit" perf record -q -F 99 -a -g -o "$out/perf.data" -- sleep "$SECS"
    timed perf_script timeout -s KILL "$limit" sh -c "perf script -i '$out/perf.data' > '$out/perf.script' 2>/dev/null"
    timed collapse timeout -s KILL "$limit" sh -c "$collapse_cmd < '$out/perf.script' > '$out/perf.folded'"
    # -k: bpftrace names every stack before it exits (a minute, loaded).
    timeout -k 300 -s INT "$SECS" /usr/bin/time -f "%U %S %M" -o "$out/bpftrace.time" \
        bpftrace -e 'profile:hz:99 { @[kstack, ustack, comm] = count(); }' >"$out/bpftrace.out" 2>&1 || true
    awk '{printf "%.3f %d\n", $1 + $2, $3}' "$out/bpftrace.time" >>"$out/bpftrace"
done

# col NAME N: the median of column N of $out/NAME.
col() { awk -v n="$2" '{print $n}' "$out/$1" >"$out/$1.col$2"; median "$1.col$2"; }
s_cpu=$(col scry 1) s_rss=$(col scry 2)
r_cpu=$(col perf_record 1) r_rss=$(col perf_record 2)
p_cpu=$(col perf_script 1) p_rss=$(col perf_script 2)
c_cpu=$(col collapse 1) c_rss=$(col collapse 2)
b_cpu=$(col bpftrace 1) b_rss=$(col bpftrace 2)
perf_cpu=$(awk -v a="$r_cpu" -v b="$p_cpu" -v c="$c_cpu" 'BEGIN {printf "%.3f", a + b + c}')
perf_rss=$(printf '%s\n' "$r_rss" "$p_rss" "$c_rss" | sort -n | tail -1)
samples() { awk '{s += $NF} END {print s + 0}' "$1"; }
# perf's folded lines weigh by period (ns of cpu-clock): count its samples
# in the script instead (one header line, not indented, each).
perf_samples=$(grep -c '^[^[:space:]]' "$out/perf.script" || true)
cpus=$(nproc)
share() { awk -v c="$1" -v s="$SECS" -v n="$cpus" 'BEGIN {printf "%.3f%%", c / (s * n) * 100}'; }
printf '%-40s %9s %8s %10s %9s\n' tool cpu_s machine peak_rss_kb samples
printf '%-40s %9s %8s %10s %9s\n' "scry profile-bpf" "$s_cpu" "$(share "$s_cpu")" "$s_rss" "$(samples "$out/scry.folded")"
printf '%-40s %9s %8s %10s %9s\n' "perf record + script + $collapse_name" "$perf_cpu" "$(share "$perf_cpu")" "$perf_rss" "$perf_samples"
printf '%-40s %9s %8s %10s %9s\n' "  perf record" "$r_cpu" "" "$r_rss" ""
printf '%-40s %9s %8s %10s %9s\n' "  perf script" "$p_cpu" "" "$p_rss" ""
printf '%-40s %9s %8s %10s %9s\n' "  $collapse_name" "$c_cpu" "" "$c_rss" ""
b_samples=$({ grep -o ']: [0-9]*$' "$out/bpftrace.out" || true; } | awk '{s += $2} END {print s + 0}')
printf '%-40s %9s %8s %10s %9s\n' "bpftrace" "$b_cpu" "$(share "$b_cpu")" "$b_rss" "$b_samples"
[ -s "$out/scry_load" ] && echo "scry -v: loaded and attached in $(median scry_load) ms, counts named in $(median scry_naming) ms (medians)"
echo "cpu   scry / perf pipeline $(ratio "$s_cpu" "$perf_cpu")   scry / bpftrace $(ratio "$s_cpu" "$b_cpu")"
echo "rss   scry / perf pipeline $(ratio "$s_rss" "$perf_rss")   scry / bpftrace $(ratio "$s_rss" "$b_rss")"

# stop PID: SIGTERM to a `timeout -s KILL` wrapper, which passes it on
# (a background job of a script ignores SIGINT); if the tool still runs
# 3 s later, SIGALRM: timeout takes it for its expiry and KILLs the tool.
stop() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 30); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "bench/oncpu.sh: $2 still running 3 s after SIGTERM (naming its stacks): killed" >&2
    kill -ALRM "$1" 2>/dev/null || true
}

# ready NAME WORD CMD...: the wall time from the start to the first line
# holding WORD; the tool is then stopped. The reading is bounded too (a
# tool that never prints WORD is killed after 60 s).
ready() {
    local name=$1 word=$2; shift 2
    rm -f "$out/fifo"; mkfifo "$out/fifo"
    local t0=$EPOCHREALTIME
    timeout -s KILL 60 stdbuf -oL "$@" >"$out/fifo" 2>>"$out/$name.err" &
    local tool=$!
    exec 3<"$out/fifo"
    while read -r line <&3; do [[ $line == *"$word"* ]] && break; done
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.6f\n", b - a}' >>"$out/$name"
    stop "$tool" "$name"
    cat <&3 >/dev/null
    exec 3<&-
    wait "$tool" || true
}
for _ in $(seq "$REPS"); do
    ready scry_start "Sampling at" "$scry" profile-bpf -F 99
    ready bpftrace_ready ready bpftrace -e 'BEGIN { printf("ready\n"); } profile:hz:99 { @[kstack, ustack, comm] = count(); }'
    ready bpftrace_first sample bpftrace -e 'profile:hz:99 { printf("sample\n"); exit(); }'
done
# task_ms NAME: the task-clock (ms) of `perf stat -x,` in $out/t, appended to $out/NAME.
task_ms() { awk -F, '$3 == "task-clock" {printf "%.2f\n", $1}' "$out/t" >>"$out/$1"; }
# start_cpu: one scry start CPU run (see the header), appended to
# $out/scry_start_cpu when scry ran to its end.
start_cpu() {
    sleep 300 & local nap=$!
    rm -f "$out/fifo"; mkfifo "$out/fifo"
    perf stat -x, -e task-clock -o "$out/t" -- timeout -s KILL 60 "$scry" profile-bpf -F 99 -p "$nap" \
        >"$out/fifo" 2>"$out/start_cpu.err" &
    local stat=$!
    exec 3<"$out/fifo"
    while read -r line <&3; do [[ $line == *"Sampling at"* ]] && break; done
    # scry watches the process (its pidfd) just after the banner.
    sleep 0.1
    kill "$nap" 2>/dev/null || true
    wait "$nap" 2>/dev/null || true
    cat <&3 >/dev/null
    exec 3<&-
    if wait "$stat"; then
        task_ms scry_start_cpu
    else
        echo "bench/oncpu.sh: a scry start CPU run failed (not counted): $(head -1 "$out/start_cpu.err")" >&2
    fi
}
for _ in $(seq "$REPS"); do
    start_cpu
    perf stat -x, -e task-clock -o "$out/t" -- timeout -s KILL 60 bpftrace \
        -e 'BEGIN { exit(); } profile:hz:99 { @[kstack, ustack, comm] = count(); }' >/dev/null 2>&1 || true
    task_ms bpftrace_start_cpu
done
s_start_cpu=$(median scry_start_cpu) b_start_cpu=$(median bpftrace_start_cpu)
echo "start CPU (median of $REPS): scry ${s_start_cpu} ms, bpftrace ${b_start_cpu} ms (start and end, no samples)   scry / bpftrace $(ratio "$s_start_cpu" "$b_start_cpu")"
s_start=$(median scry_start) b_ready=$(median bpftrace_ready) b_first=$(median bpftrace_first)
echo "start (median of $REPS): scry ${s_start} s to attached (first sample within 1/99 s more), bpftrace ${b_ready} s to attached, ${b_first} s to its first sample"
echo "start scry / bpftrace attached $(ratio "$s_start" "$b_ready")   scry / bpftrace first sample $(ratio "$s_start" "$b_first")"
