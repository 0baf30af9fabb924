//! `scry hardirqs` and `scry softirqs`' kernel side: loads
//! `src/bpf/irqs.bpf.c` through the engine with only the chosen tool's
//! hooks (the other pair is skipped, and the exit hook too when counting)
//! and reads its sums: per hard irq handler name or softirq vector, a
//! total (time or count) or log2 slots. The rules are in the program's
//! header comment. Sums are read and deleted, as libbpf-tools does, so
//! each interval starts from zero.

use std::io;

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("irqs.skel.rs");

use skel::{IrqsSkel, IrqsSkelBuilder};

/// Slots per histogram: the program's MAX_SLOTS.
pub(crate) const MAX_SLOTS: usize = 36;
/// The program's NAME_LEN.
const NAME_LEN: usize = 32;

/// Which interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IrqKind {
    Hard,
    Soft,
}

/// What the program sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IrqMeasure {
    /// Time, summed.
    Total,
    /// Time, as log2 histograms.
    Dist,
    /// Events, counted at the entry.
    Count,
}

/// The program's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IrqSettings {
    pub(crate) kind: IrqKind,
    pub(crate) measure: IrqMeasure,
    /// Nanoseconds (default: microseconds).
    pub(crate) nanoseconds: bool,
    /// Only the cgroup given to [`IrqsBpf::set_cgroup`].
    pub(crate) cgroup: bool,
    /// Only this CPU's interrupts (bcc's -c CPU).
    pub(crate) cpu: Option<u32>,
}

/// One interrupt's sums: a hard irq by handler name (`vec` 0), a softirq
/// by vector (`name` empty). `total` is the time or the count; `slots`
/// the histogram (all zero unless `IrqMeasure::Dist`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct IrqSum {
    pub(crate) vec: u32,
    pub(crate) name: String,
    pub(crate) total: u64,
    pub(crate) slots: Vec<u64>,
}

#[derive(Debug)]
pub(crate) struct IrqsBpf {
    loaded: Loaded<IrqsSkel<'static>>,
}

impl IrqsBpf {
    pub(crate) fn load(settings: IrqSettings) -> io::Result<IrqsBpf> {
        let counting = settings.measure == IrqMeasure::Count;
        let skip: &[&str] = match (settings.kind, counting) {
            (IrqKind::Hard, false) => &["scry_si_entry", "scry_si_exit"],
            (IrqKind::Hard, true) => &["scry_si_entry", "scry_si_exit", "scry_hi_exit"],
            (IrqKind::Soft, false) => &["scry_hi_entry", "scry_hi_exit"],
            (IrqKind::Soft, true) => &["scry_hi_entry", "scry_hi_exit", "scry_si_exit"],
        };
        let loaded = bpf_engine::load(
            IrqsSkelBuilder::default,
            |open: &mut skel::OpenIrqsSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.do_count = counting;
                rodata.dist = settings.measure == IrqMeasure::Dist;
                rodata.nanoseconds = settings.nanoseconds;
                rodata.filter_cgroup = settings.cgroup;
                rodata.filter_cpu = settings.cpu.map_or(-1, |c| i32::try_from(c).unwrap_or(-1));
                Ok(())
            },
            GroupRules::skipping(skip),
            Attach::Now,
        )?;
        Ok(IrqsBpf { loaded })
    }

    /// Counts only the tasks under the cgroup directory `dir` (loaded
    /// with `cgroup` set: nothing counts until this is called).
    pub(crate) fn set_cgroup(&self, dir: &std::fs::File) -> io::Result<()> {
        super::bpf_execsnoop::fill_cgroup(&self.loaded.skel.maps.cgroup_map, Some(dir))
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The sums since the last read (they are deleted).
    pub(crate) fn read(&self) -> io::Result<Vec<IrqSum>> {
        let maps = &self.loaded.skel.maps;
        let entries = bpf_engine::hash_entries(&maps.infos, "reading the BPF irq sums")?;
        bpf_engine::clear_hash(&maps.infos, "clearing the BPF irq sums")?;
        Ok(entries
            .iter()
            .filter_map(|(key, value)| {
                let slots = (0..MAX_SLOTS)
                    .map(|i| u64_at(value, 8 + i * 8))
                    .collect::<Option<Vec<u64>>>()?;
                Some(IrqSum {
                    vec: u32_at(key, 0)?,
                    name: comm_at(key, 4, NAME_LEN),
                    total: u64_at(value, 0)?,
                    slots,
                })
            })
            .collect())
    }

    pub(crate) fn detach(&mut self) {
        self.loaded.detach();
    }
}
