//! Symbolization and unwinding: addresses in, frames out.
