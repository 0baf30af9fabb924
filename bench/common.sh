# bench/common.sh, sourced by the side-by-side benches (syscount, snoop,
# net, runqlat, lang): the scry binary they time, their scratch folder and
# the numbers they print.
#
# bench_scry NAME: sets $scry to $SCRY_BIN, or builds the release binary;
# exits 2 naming NAME when there is none.
bench_scry() {
    scry=${SCRY_BIN:-}
    if [ -z "$scry" ]; then
        PATH="$HOME/.cargo/bin:$PATH" cargo build --release --locked --quiet
        scry=${CARGO_TARGET_DIR:-$PWD/target}/release/scry
    fi
    [ -x "$scry" ] || { echo "bench/$1: no scry at $scry" >&2; exit 2; }
}

# $out: a scratch folder, removed at exit.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# median NAME: the middle of the numbers in $out/NAME; ratio A B: A / B.
median() { sort -g "$out/$1" | awk '{t[NR] = $1} END {print t[int((NR + 1) / 2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.4f", a / b}'; }

# The slowdown benches (snoop, net, memleak) on a shared machine: a
# tracer's slowdown is measured per repetition against the bare run of
# the same repetition (the load the two saw is alike; across a whole run
# it drifts), the runs of a repetition in an order rotated each time (no
# tracer always runs next to the same neighbour), and each figure is the
# median with its spread (min..max) printed, so a noisy run shows as one.
#
# rotated REP NAME...: the names, starting at the REP-th (mod their count).
rotated() {
    local rep=$1; shift
    local names=("$@") i
    for ((i = 0; i < ${#names[@]}; i++)); do
        printf '%s\n' "${names[(rep + i) % ${#names[@]}]}"
    done
}

# per_rep A B: $out/A over $out/B line by line (both hold one time per
# repetition, in order) into $out/A.over.B.
per_rep() { paste "$out/$1" "$out/$2" | awk '{printf "%.6f\n", $1 / $2}' >"$out/$1.over.$2"; }

# spread NAME: "min..max" of $out/NAME.
spread() { sort -g "$out/$1" | awk 'NR == 1 {a = $1} {b = $1} END {printf "%.3f..%.3f", a, b}'; }

# slowdown_table PREFIX BASE NAME...: per tracer its median wall time of
# $out/PREFIX<NAME> and spread, and its slowdown: the median of the per
# repetition ratios to $out/PREFIX<BASE>, and their spread.
slowdown_table() {
    local prefix=$1 base=$2; shift 2
    printf '  %-14s %9s %15s %9s %13s\n' tracer "wall (s)" "min..max" slowdown "min..max"
    printf '  %-14s %9.3f %15s\n' "$base" "$(median "$prefix$base")" "$(spread "$prefix$base")"
    local name
    for name; do
        per_rep "$prefix$name" "$prefix$base"
        printf '  %-14s %9.3f %15s %8.2fx %13s\n' "$name" "$(median "$prefix$name")" \
            "$(spread "$prefix$name")" "$(median "$prefix$name.over.$prefix$base")" \
            "$(spread "$prefix$name.over.$prefix$base")"
    done
}

# versus PREFIX A B: "R (min..max)": the median per repetition ratio of
# A's wall time to B's (below 1: A slows the workload less), its spread.
versus() {
    per_rep "$1$2" "$1$3"
    echo "$(median "$1$2.over.$1$3") ($(spread "$1$2.over.$1$3"))"
}
