//! perf.data (PERFILE2) reader and writer, the exports built on them, and
//! the record pipeline every input shares: the dispatcher of parsed records
//! (`handler`) and the thread-name model (`threads`).
pub mod build_id;
pub mod features;
pub mod handler;
pub mod pipe_writer;
pub mod reader;
pub mod threads;
pub mod tracing_data;
pub mod writer;
