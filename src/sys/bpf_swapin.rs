//! `scry swapin`'s kernel side: loads `src/bpf/swapin.bpf.c` on the
//! function that reads a swapped-out folio back, and takes its per-process
//! counts (read and deleted, so each interval starts from zero). The
//! function is chosen here from /proc/kallsyms, before anything loads:
//! swap_read_folio (6.6 and later), else swap_readpage; the other's group
//! is skipped, so a refusal names only the function this kernel has.
//! There is no tracepoint to fall back on: without fentry and kprobes the
//! load fails, saying so.

use std::io;

use super::bpf_engine::{self, GroupRules, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("swapin.skel.rs");

use skel::{SwapinSkel, SwapinSkelBuilder};

/// The functions, newest first, with the group that hooks each.
const FUNCTIONS: [(&str, &str); 2] = [
    ("swap_read_folio", "scry_k_swap_read_folio"),
    ("swap_readpage", "scry_k_swap_readpage"),
];

/// One process's swap-ins in an interval, keyed as bcc keys them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SwapinCount {
    pub(crate) pid: u32,
    pub(crate) comm: String,
    /// Calls of the function: folios read, one page each unless large.
    pub(crate) count: u64,
}

impl SwapinCount {
    /// One map entry (`struct swapin_key`, a u64); None when short.
    fn parse(key: &[u8], value: &[u8]) -> Option<SwapinCount> {
        Some(SwapinCount {
            pid: u32_at(key, 0)?,
            comm: comm_at(key, 4, 16),
            count: u64_at(value, 0)?,
        })
    }
}

/// The loaded, attached program.
#[derive(Debug)]
pub(crate) struct SwapinBpf {
    loaded: Loaded<SwapinSkel<'static>>,
    function: &'static str,
}

impl SwapinBpf {
    /// Loads and attaches the program; `pid`: only this process's swap-ins.
    pub(crate) fn load(pid: Option<u32>) -> io::Result<SwapinBpf> {
        let names: Vec<&str> = FUNCTIONS.iter().map(|(f, _)| *f).collect();
        let found = super::proc::kallsyms_addresses(&names)
            .map_err(|e| io::Error::new(e.kind(), format!("reading /proc/kallsyms: {e}")))?;
        let Some(at) = found.iter().position(Option::is_some) else {
            return Err(io::Error::other(
                "neither swap_read_folio nor swap_readpage is in /proc/kallsyms (a kernel \
                 without swap, CONFIG_SWAP, or kallsyms hidden: kernel.kptr_restrict)",
            ));
        };
        let (function, _) = FUNCTIONS[at];
        let skip: Vec<&str> = FUNCTIONS
            .iter()
            .filter(|(f, _)| *f != function)
            .map(|(_, g)| *g)
            .collect();
        let loaded = bpf_engine::load(
            SwapinSkelBuilder::default,
            |open: &mut skel::OpenSwapinSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.filter_tgid = pid.unwrap_or(0);
                Ok(())
            },
            GroupRules::skipping(&skip),
            bpf_engine::Attach::Now,
        )
        .map_err(|e| unhookable(function, e))?;
        Ok(SwapinBpf { loaded, function })
    }

    /// The kernel function counted.
    pub(crate) fn function(&self) -> &'static str {
        self.function
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The counts since the last take (each entry read and deleted).
    pub(crate) fn take(&self) -> io::Result<Vec<SwapinCount>> {
        bpf_engine::take_entries(
            &self.loaded.skel.maps.counts,
            "reading swapin's counts",
            SwapinCount::parse,
        )
    }

    /// Detaches the program: nothing counts after the last take.
    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}

/// A refused load, said as what is missing: the error kept as it is
/// when it is the privileges (the caller names them).
fn unhookable(function: &str, err: io::Error) -> io::Error {
    if err.kind() == io::ErrorKind::PermissionDenied {
        return err;
    }
    let what = match super::uprobe::UprobePmu::detect_kprobe() {
        Err(why) => format!(
            "this kernel has no kprobes (the kprobe PMU, /sys/bus/event_source/devices/kprobe: \
             {why}) and refused fentry ({err})"
        ),
        Ok(_) => err.to_string(),
    };
    io::Error::new(
        err.kind(),
        format!("{function} cannot be hooked here, and no tracepoint sees a swap-in: {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_count_entry() {
        let mut key = vec![0u8; 20];
        key[0..4].copy_from_slice(&4242u32.to_ne_bytes());
        key[4..11].copy_from_slice(b"swapper");
        let value = 17u64.to_ne_bytes();
        let c = SwapinCount::parse(&key, &value).unwrap();
        assert_eq!((c.pid, c.comm.as_str(), c.count), (4242, "swapper", 17));
        assert!(SwapinCount::parse(&key[..3], &value).is_none());
        assert!(SwapinCount::parse(&key, &value[..4]).is_none());
    }
}
