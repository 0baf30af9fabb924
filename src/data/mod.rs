//! perf.data (PERFILE2) reader and writer, the exports built on them, and
//! the record pipeline every input shares: the raw record and the walk over
//! ring bytes (`raw`), the one sorter of per-CPU streams (`order`), the
//! dispatcher of parsed records (`handler`) and the thread-name model
//! (`threads`). `build_id` reads build-ids; `build_id_cache` keeps files
//! by them (recordings copy in, the symbol stage reads). `function_rows`
//! is scry's own feature section: `record --profile`'s kernel function rows.
pub mod build_id;
pub mod build_id_cache;
pub mod features;
pub mod function_rows;
pub mod handler;
pub(crate) mod order;
pub mod pipe_writer;
pub(crate) mod raw;
pub(crate) mod read_buf;
pub mod reader;
pub mod threads;
pub mod tracing_data;
pub mod writer;
