//! Aggregation: call trees, flat profiles, histograms.
pub mod sample;
