//! The types `symbol` hands to `analysis` and everything downstream: resolved
//! samples with interned frames (`sample`), and the fast hasher their
//! aggregation maps use (`hash`), and a counter's `read(2)` (`counter`,
//! what capture hands `scry stat`). It sits below `symbol` so that `symbol`
//! and `analysis` both use it and neither uses the other's internals.

pub(crate) mod counter;
pub(crate) mod hash;
pub mod sample;
