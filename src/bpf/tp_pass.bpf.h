// SPDX-License-Identifier: (MIT OR Apache-2.0)
// What a classic tracepoint program returns. The kernel hands the record
// to the perf events on the same tracepoint only when the program returns
// non-zero (perf_trace_run_bpf_submit): bcc's tools return 0, and while
// one runs, `perf record -e` of its tracepoint gets nothing, system-wide.
// scry's return TP_PASS, so a tool never blinds another tracer (measured:
// no cost on 1,000,000 system calls; tests/suite/snoop.rs checks perf).
#pragma once
#define TP_PASS 1
