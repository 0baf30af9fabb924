//! perf.data (PERFILE2) reader and writer, and the exports built on them.
