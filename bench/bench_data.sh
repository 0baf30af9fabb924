#!/bin/sh
# bench/bench_data.sh SCRY OUT [SECONDS=20] [FREQ=10000] [WORKLOAD=deep]:
# the large recordings the benches time scry on: `scry record -a -F FREQ
# -g EVENTS -- sleep SECONDS` with WORKLOAD busy on every CPU, about FREQ x
# CPUs x SECONDS samples (400k with the defaults on 2 CPUs).
#
# WORKLOAD: a workloads/ program; `deep` (work 24-71 frames down, many
# distinct stacks) or `shallow` (workloads/cpu7525: stacks 3-5 frames deep).
#   BENCH_EVENTS   the events (default `-e cpu-clock -e sched:sched_switch`,
#                  bench/export.sh's and bench/serve.sh's; bench/report.sh
#                  records cpu-clock alone)
#   BENCH_FIFO=1   run the workloads (SCHED_FIFO 1) and the recorder (2)
#                  real-time, so a shared machine's other load does not
#                  fill the file (their stacks and binaries are another
#                  recording); needs root (chrt). The kernel leaves 5% of
#                  each CPU to the rest.
#   BENCH_PIDS=1   record the workloads' processes only (`-p PID,PID`,
#                  not `-a`): nothing of the machine's other load (a
#                  compiler's libLLVM samples made perf report take 24
#                  minutes on a system-wide file of a busy machine).
set -eu

scry=$1
data=$2
seconds=${3:-20}
freq=${4:-10000}
workload=${5:-deep}
events=${BENCH_EVENTS:--e cpu-clock -e sched:sched_switch}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/scry-bench-data.XXXXXX)
trap 'kill $(cat "$work/pids" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM

source=$workload
[ "$workload" = shallow ] && source=cpu7525
# The workload stays beside the file (OUT-bin/WORKLOAD): a report names
# its functions from it (in a temporary folder, it was gone by then, and
# every frame of the workload [unknown], in perf report as in scry's).
mkdir -p "$data-bin"
bin="$data-bin/$workload"
cc -O1 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls \
    -o "$bin" "$repo/workloads/$source.c"
rt_work= rt_rec=
if [ "${BENCH_FIFO:-0}" = 1 ]; then
    rt_work="chrt -f 1" rt_rec="chrt -f 2"
fi
: > "$work/pids"
i=0
while [ "$i" -lt "$(nproc)" ]; do
    $rt_work "$bin" 1000000000 & echo $! >> "$work/pids"
    i=$((i + 1))
done
target="-a" what="system-wide"
if [ "${BENCH_PIDS:-0}" = 1 ]; then
    target="-p $(paste -sd, "$work/pids")" what="the workloads' processes"
fi
echo "recording $seconds s of $what at $freq Hz ($workload)..." >&2
# shellcheck disable=SC2086
$rt_rec "$scry" record -q $target -F "$freq" -g $events -o "$data" -- sleep "$seconds"
rm -f "$data.old"
