//! Everything a person reads: tables, trees, SVG.
