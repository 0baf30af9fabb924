# bench/settle.sh, sourced by the streaming tools' benches (snoop.sh,
# net.sh): waits for a tracer's output to be complete.
#
# settle LOG PATTERN WANT: waits until LOG has WANT lines with PATTERN, or
# their count stopped growing for five seconds (a tracer that lost events;
# a busy machine can hold a tracer off the CPU for a second).
settle() {
    local last=-1 same=0 now
    while now=$(grep -c -- "$2" "$1" || true); [ "$now" -lt "$3" ] && [ "$same" -lt 50 ]; do
        if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0 last=$now; fi
        sleep 0.1
    done
}
