//! perf.data (PERFILE2) reader and writer, and the exports built on them.
pub mod build_id;
pub mod features;
pub mod pipe_writer;
pub mod reader;
pub mod tracing_data;
pub mod writer;
