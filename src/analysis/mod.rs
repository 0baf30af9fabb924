//! Aggregation: call trees, flat profiles, histograms.
