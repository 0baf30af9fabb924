//! The block I/O tools' records (biosnoop's events, the disks they name),
//! as `render` reads them: the kernel side's types, handed up unchanged.

pub use crate::sys::block::Partition;
pub use crate::sys::bpf_bio::BioEvent;
