#!/bin/sh
# Builds the fuzz targets (CI calls this). Rust 1.95 is stable only:
# cargo-fuzz needs nightly flags (-Zsanitizer, -Cpasses), which
# RUSTC_BOOTSTRAP=1 unlocks on a stable compiler.
#
#   cargo install cargo-fuzz          # once
#   fuzz/build.sh                     # build every target
#   fuzz/build.sh perf_data_reader    # build one
#   fuzz/run.sh [SECONDS]             # seed a corpus with perf and fuzz
set -eu
cd "$(dirname "$0")"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/build.sh: cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 1
fi
RUSTC_BOOTSTRAP=1 cargo fuzz build "$@"
