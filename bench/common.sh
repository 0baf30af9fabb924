# bench/common.sh, sourced by the side-by-side benches (syscount, snoop,
# net, runqlat, lang): the scry binary they time, their scratch folder and
# the two numbers they print.
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
