#!/bin/sh
# Runs the fuzz targets, each for SECONDS (default 300), on seeded corpora:
#   fuzz/run.sh [SECONDS] [TARGET...]      (default: every target)
# CI runs `fuzz/run.sh 45` (scripts/test): about 2 min of fuzzing on top of
# the build. A crash, a leak or an out-of-memory fails the run, and the
# input is left in fuzz/artifacts/TARGET/ (replay it with
# `RUSTC_BOOTSTRAP=1 cargo fuzz run TARGET ARTIFACT`).
#
# Seeds: perf_data_reader gets small files recorded by perf (plain with
# callchains, multi-event, system-wide, tracepoint, -z compressed, the same
# as COMPRESSED2, pipe format, group reads) when perf and perf events are
# there; tracepoint_format
# gets this kernel's own format files (FORMAT \0 RECORD BYTES).
# SCRY_FUZZ_STRICT=1 makes the last-resort catch_unwind findings crashes too.
set -eu
cd "$(dirname "$0")"
secs=${1:-300}
[ $# -gt 0 ] && shift
targets=${*:-"perf_data_reader tracepoint_format"}
./build.sh

seed_perf_data() {
    corpus=corpus/perf_data_reader
    mkdir -p "$corpus"
    [ -n "$(ls -A "$corpus")" ] && return 0
    command -v perf >/dev/null 2>&1 || return 0
    cc -O1 -fno-omit-frame-pointer -o target/calls ../workloads/calls.c
    # Each seed is optional: a machine without a facility skips it.
    perf record -q -g -F 999 -o "$corpus/g.data" -- target/calls 300000 || true
    perf record -q -e cpu-clock -e page-faults -o "$corpus/m.data" -- target/calls 100000 || true
    perf record -q -a -F 499 -o "$corpus/a.data" -- sleep 0.05 || true
    perf record -q -e sched:sched_switch -a -o "$corpus/s.data" -- sleep 0.05 || true
    perf record -q -z -g -F 999 -o "$corpus/z.data" -- target/calls 300000 || true
    perf record -q -g -F 999 -o - -- target/calls 100000 > "$corpus/pipe.data" || true
    perf record -q -e '{cpu-clock,task-clock}:S' -o "$corpus/group.data" -- target/calls 100000 || true
    rm -f "$corpus"/*.old
    # z.data's COMPRESSED (81) records as COMPRESSED2 (83), which perf 6.1
    # does not write (tests/suite/script.rs's as_compressed2 does the same).
    if [ -s "$corpus/z.data" ] && command -v python3 >/dev/null 2>&1; then
        python3 - "$corpus/z.data" "$corpus/z2.data" <<'PY' || true
import struct, sys
b = open(sys.argv[1], "rb").read()
off, size = struct.unpack_from("<QQ", b, 40)
out, at = bytearray(b[:off]), off
while at < off + size:
    kind, misc, n = struct.unpack_from("<IHH", b, at)
    if n < 8:
        sys.exit(1)
    if kind == 81:
        body = b[at + 8:at + n]
        for i in range(0, len(body), 65535 - 23):
            part = body[i:i + 65535 - 23]
            padded = (16 + len(part) + 7) // 8 * 8
            out += struct.pack("<IHHQ", 83, misc, padded, len(part)) + part
            out += bytes(padded - 16 - len(part))
    else:
        out += b[at:at + n]
    at += n
grown = len(out) - (off + size)
struct.pack_into("<Q", out, 48, size + grown)
table = len(out)
out += b[off + size:]
for i in range(sum(bin(x).count("1") for x in b[72:104])):
    o, = struct.unpack_from("<Q", out, table + 16 * i)
    struct.pack_into("<Q", out, table + 16 * i, o + grown)
open(sys.argv[2], "wb").write(out)
PY
    fi
}

seed_formats() {
    corpus=corpus/tracepoint_format
    mkdir -p "$corpus"
    [ -n "$(ls -A "$corpus")" ] && return 0
    for dir in /sys/kernel/tracing/events /sys/kernel/debug/tracing/events; do
        [ -r "$dir/sched/sched_switch/format" ] || continue
        n=0
        for f in "$dir"/sched/*/format "$dir"/raw_syscalls/*/format "$dir"/irq/*/format; do
            [ -r "$f" ] || continue
            n=$((n + 1))
            { cat "$f"; printf '\0'; head -c 64 /dev/urandom; } > "$corpus/format$n"
        done
        break
    done
}

status=0
for target in $targets; do
    case $target in
        perf_data_reader) seed_perf_data ;;
        tracepoint_format) seed_formats ;;
    esac
    mkdir -p "corpus/$target"
    echo "fuzz/run.sh: $target for ${secs}s"
    RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len=262144 \
        -print_final_stats=1 || status=1
done
exit $status
