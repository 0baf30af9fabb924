#!/usr/bin/env bash
# bench/unwind.sh: what the call-graph modes cost, side by side in one run
# on the same machine (release build): `--call-graph fp`, `-g` (frame
# pointers plus the top STACK bytes of the user stack, joined at report
# time) and `--call-graph dwarf` (8 KiB of stack a sample), scry's and
# perf's.
#
# 1. Sampling: workloads/nofp ROUNDS rounds (a fixed amount of work, ~1 s)
#    bare and under each recorder at -F 999 and -F 20000. For each: the
#    median (of REPS interleaved runs) wall and CPU time (user+sys of the
#    recorder and the workload it reaped), "extra" CPU over the bare run,
#    the file's size and its bytes per sample. The ratio lines divide -g's
#    and dwarf's size and extra CPU by fp's.
# 2. Under load: `storm CALLS 0` (CALLS getppid as fast as one thread
#    makes them) with raw_syscalls:sys_enter/sys_exit, each with stacks in
#    each mode: events recorded and lost as the recorder reports them.
# 3. Report: the time `scry report` takes on each file (-g unwinds every
#    sample's stack top; fp reads chains only).
# 4. The size of -g's stack copy: nofp, libcloop, rust_work (whose std
#    has no frame pointers) and cpp_work sampled, fsyncer and pingpong
#    blocked (sched_switch), recorded with `--call-graph fp+stack,SIZE` for
#    SIZES, and each file's stack-quality line: the share of samples whose
#    chain was repaired or checked (fully unwound), or kept unchecked.
#
# Usage: bench/unwind.sh   (env REPS=3, ROUNDS=100, FREQS="999 20000", CALLS=500000, SIZES="8 32 64 128 512",
#                          SCRY_BIN=path to skip the release build)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
export PATH="$HOME/.cargo/bin:$PATH"
REPS=${REPS:-3}
ROUNDS=${ROUNDS:-100}
CALLS=${CALLS:-500000}
SIZES=${SIZES:-8 32 64 128 512}

for tool in perf /usr/bin/time cc; do
    command -v "$tool" >/dev/null || { echo "bench/unwind.sh: $tool is missing; run scripts/deps" >&2; exit 2; }
done

if [ -n "${SCRY_BIN:-}" ]; then
    scry=$SCRY_BIN
else
    cargo build --release --locked --quiet
    scry=${CARGO_TARGET_DIR:-$repo/target}/release/scry
fi
nofp=$("$repo/scripts/workload" nofp)
storm=$("$repo/scripts/workload" storm)
libcloop=$("$repo/scripts/workload" libcloop)
rust_work=$("$repo/scripts/workload" rust_work)
cpp_work=$("$repo/scripts/workload" cpp_work)
fsyncer=$("$repo/scripts/workload" fsyncer)
pingpong=$("$repo/scripts/workload" pingpong)

tmp=$(mktemp -d /tmp/scry-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# measure NAME CMD...: run once, append "wall cpu bytes" to $tmp/NAME.times.
measure() {
    local name=$1
    shift
    /usr/bin/time -f '%e %U %S' -o "$tmp/time.out" "$@" >/dev/null 2>"$tmp/$name.stderr" || {
        # Reported, and left out of the table (scry's dwarf rings at
        # -F 20000 can exceed what the kernel maps: ENOMEM).
        echo "bench/unwind.sh: $name failed: $(grep -v '^Command' "$tmp/$name.stderr" | head -1)" >&2
        return 0
    }
    local bytes=0
    [ -f "$tmp/$name.data" ] && bytes=$(stat -c %s "$tmp/$name.data")
    awk -v b="$bytes" '{ printf "%.3f %.3f %d\n", $1, $2 + $3, b }' "$tmp/time.out" >>"$tmp/$name.times"
}

# median NAME COLUMN: the median of one column of $tmp/NAME.times.
median() {
    sort -n -k"$2" "$tmp/$1.times" | awk -v c="$2" '{ v[NR] = $c } END {
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# samples FILE: the samples perf counts in a file.
samples() {
    perf report --stats -i "$1" 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }'
}

modes=(fp g dwarf)
declare -A scry_mode=([fp]="--call-graph fp" [g]="-g" [dwarf]="--call-graph dwarf")
declare -A perf_mode=([fp]="--call-graph fp" [dwarf]="--call-graph dwarf")

echo "sampling: nofp $ROUNDS rounds, median of $REPS interleaved runs, $(nproc) CPUs, $(uname -r)"
for freq in ${FREQS:-999 20000}; do
    for ((rep = 0; rep < REPS; rep++)); do
        measure "bare$freq" "$nofp" "$ROUNDS"
        for m in "${modes[@]}"; do
            # shellcheck disable=SC2086
            measure "scry-$m-$freq" "$scry" record -q -F "$freq" ${scry_mode[$m]} \
                -o "$tmp/scry-$m-$freq.data" -- "$nofp" "$ROUNDS"
            if [ -n "${perf_mode[$m]:-}" ]; then
                # shellcheck disable=SC2086
                measure "perf-$m-$freq" perf record -q -F "$freq" ${perf_mode[$m]} \
                    -o "$tmp/perf-$m-$freq.data" -- "$nofp" "$ROUNDS"
            fi
        done
    done
    bare=$(median "bare$freq" 2)
    printf '\n-F %s          %8s %8s %9s %10s %8s %9s\n' "$freq" wall_s cpu_s extra_s file_MB samples B/sample
    printf '%-22s %8s %8s\n' "bare workload" "$(median "bare$freq" 1)" "$bare"
    for who in scry perf; do
        for m in "${modes[@]}"; do
            name=$who-$m-$freq
            [ -f "$tmp/$name.times" ] || continue
            cpu=$(median "$name" 2)
            bytes=$(median "$name" 3)
            n=$(samples "$tmp/$name.data")
            awk -v l="$who ${scry_mode[$m]}" -v w="$(median "$name" 1)" -v c="$cpu" -v b="$bare" \
                -v sz="$bytes" -v n="${n:-0}" 'BEGIN {
                printf "%-22s %8.3f %8.3f %9.3f %10.3f %8d %9.0f\n", l, w, c, c - b, sz / 1e6, n, (n ? sz / n : 0) }'
            echo "$cpu $bytes" >"$tmp/$name.sum"
        done
    done
    read -r fp_cpu fp_size <"$tmp/scry-fp-$freq.sum"
    for m in g dwarf; do
        [ -f "$tmp/scry-$m-$freq.sum" ] || continue
        read -r cpu size <"$tmp/scry-$m-$freq.sum"
        awk -v m="${scry_mode[$m]}" -v c="$cpu" -v s="$size" -v fc="$fp_cpu" -v fs="$fp_size" -v b="$bare" 'BEGIN {
            e = c - b; fe = fc - b; if (fe < 0.001) fe = 0.001
            printf "ratio scry %s / scry fp: file %.2fx, extra CPU %.2fx\n", m, s / fs, e / fe }'
    done
    t0=$(date +%s.%N)
    for m in "${modes[@]}"; do
        [ -f "$tmp/scry-$m-$freq.data" ] || continue
        t0=$(date +%s.%N)
        "$scry" report --stdio -i "$tmp/scry-$m-$freq.data" >/dev/null 2>&1
        t1=$(date +%s.%N)
        awk -v m="${scry_mode[$m]}" -v a="$t0" -v b="$t1" 'BEGIN { printf "scry report %-20s %.3f s\n", m, b - a }'
    done
done

echo
echo "under load: storm $CALLS 0 with raw_syscalls:sys_enter/sys_exit, stacks on each"
printf '%-34s %10s %10s\n' recorder recorded lost
for who in scry perf; do
    for m in "${modes[@]}"; do
        [ "$who" = perf ] && [ -z "${perf_mode[$m]:-}" ] && continue
        data=$tmp/storm-$who-$m.data
        if [ "$who" = scry ]; then
            # shellcheck disable=SC2086
            "$scry" record ${scry_mode[$m]} -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit \
                -o "$data" -- "$storm" "$CALLS" 0 >/dev/null 2>"$tmp/storm.err"
            lost=$(sed -n 's/.* \([0-9]*\) lost.*/\1/p' "$tmp/storm.err" | tail -1)
        else
            # shellcheck disable=SC2086
            perf record ${perf_mode[$m]} -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit \
                -o "$data" -- "$storm" "$CALLS" 0 >/dev/null 2>"$tmp/storm.err"
            lost=$(perf report --stdio -g none --sort comm -i "$data" 2>/dev/null | awk '/Total Lost Samples:/ { print $5; exit }')
        fi
        printf '%-34s %10s %10s\n' "$who ${scry_mode[$m]}" "$(samples "$data")" "${lost:-0}"
        rm -f "$data"
    done
done

echo
echo "stack copy size: stack quality of -g files (--call-graph fp+stack,SIZE), -F 999, 0.5 s of CPU"
for w in nofp libcloop rust_work cpp_work; do
    for size in $SIZES; do
        data=$tmp/size-$w-$size.data
        "$scry" record -q -F 999 --call-graph "fp+stack,$size" -o "$data" -- "${!w}" 0.5s >/dev/null 2>&1
        line=$("$scry" report --stdio -i "$data" 2>/dev/null | sed -n 's/^# stack quality: //p')
        printf '%-10s %5s B  %s\n' "$w" "$size" "$line"
        rm -f "$data"
    done
done
echo "blocked (sched:sched_switch, the user stack at the system-call entry)"
for w in fsyncer pingpong; do
    for size in $SIZES; do
        data=$tmp/size-$w-$size.data
        "$scry" record -q -e sched:sched_switch --call-graph "fp+stack,$size" -o "$data" -- "${!w}" 300 >/dev/null 2>&1
        line=$("$scry" report --stdio --comms "$w" -i "$data" 2>/dev/null | sed -n 's/^# stack quality: //p')
        printf '%-10s %5s B  %s\n' "$w" "$size" "$line"
        rm -f "$data"
    done
done
