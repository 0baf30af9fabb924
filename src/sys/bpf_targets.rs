//! The fork and exec hooks that keep another object's `targets` map
//! (`src/bpf/targets.bpf.c`, the rules in `src/bpf/targets.bpf.h`): loaded
//! beside `sys::bpf_oncpu`'s object only for a run that watches some
//! processes, the map's descriptor handed over before load.
//!
//! An object of their own because the fork hook's CO-RE read makes libbpf
//! read the kernel's whole BTF at load even when the hook is left out: a
//! fifth of a whole-machine profile's start, for hooks it does not load.

use std::io;
use std::os::fd::AsFd;

use super::bpf::io_error;
use super::bpf_engine::{self, Hook, Loaded};

super::bpf::bpf_skeleton!("targets.skel.rs");

use skel::{TargetsSkel, TargetsSkelBuilder};

/// The fork and exec hooks, attached.
#[derive(Debug)]
pub(crate) struct TargetHooks {
    loaded: Loaded<TargetsSkel<'static>>,
}

impl TargetHooks {
    /// Loads the hooks on `targets` (a map declared by targets.bpf.h in
    /// another object, loaded) and attaches them.
    pub(crate) fn attach(targets: &impl AsFd) -> io::Result<TargetHooks> {
        let loaded = bpf_engine::load_now(
            TargetsSkelBuilder::default,
            |open: &mut skel::OpenTargetsSkel<'static>| {
                open.maps
                    .targets
                    .reuse_fd(targets.as_fd())
                    .map_err(|e| io_error("sharing the BPF targets map", e))
            },
        )?;
        Ok(TargetHooks { loaded })
    }

    /// Where the hooks are attached.
    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// Stops the hooks: the map stops growing.
    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
