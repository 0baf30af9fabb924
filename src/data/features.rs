//! The feature sections of a perf.data file (the metadata after the data:
//! host, kernel, CPUs, command line, build-ids, tracepoint formats) and their
//! byte encodings, as perf's `util/header.c` writes and reads them.
//!
//! Decisions:
//! - Values are gathered once, up front, by [`Features::from_system`] from
//!   /proc and /sys (no `uname(2)`: `/proc/sys/kernel/{hostname,osrelease}`
//!   say the same without `unsafe`); the caller adds what only it knows
//!   (build-ids of the DSOs it saw, tracing data, the sample time range).
//! - Strings are `perf_header_string`s: a u32 length that counts the NUL and
//!   is padded to 64 bytes (perf's `NAME_ALIGN`), then the bytes and zeros.
//!   perf reads that padding back as part of the string, so it must be zeros.
//! - BUILD_ID entries always set `PERF_RECORD_MISC_BUILD_ID_SIZE` and store
//!   the length, so build-ids shorter than 20 bytes survive the trip.
//! - EVENT_DESC is not here: it is about the events, so the writer encodes it
//!   next to the attrs section it mirrors.
//!
//! Invariant: [`Features::sections`] returns sections in ascending feature
//! bit order, which is the order their table entries take in the file.

use std::path::Path;

/// Feature bits (`HEADER_*` in perf's `util/header.h`).
pub(crate) mod bit {
    pub(crate) const TRACING_DATA: u32 = 1;
    pub(crate) const BUILD_ID: u32 = 2;
    pub(crate) const HOSTNAME: u32 = 3;
    pub(crate) const OSRELEASE: u32 = 4;
    pub(crate) const VERSION: u32 = 5;
    pub(crate) const ARCH: u32 = 6;
    pub(crate) const NRCPUS: u32 = 7;
    pub(crate) const CPUDESC: u32 = 8;
    pub(crate) const CPUID: u32 = 9;
    pub(crate) const TOTAL_MEM: u32 = 10;
    pub(crate) const CMDLINE: u32 = 11;
    pub(crate) const EVENT_DESC: u32 = 12;
    pub(crate) const PMU_MAPPINGS: u32 = 16;
    pub(crate) const GROUP_DESC: u32 = 17;
    pub(crate) const SAMPLE_TIME: u32 = 21;
    pub(crate) const CLOCKID: u32 = 23;
    pub(crate) const CLOCK_DATA: u32 = 29;
}

/// `PERF_RECORD_MISC_KERNEL`: a build-id of the kernel or a module.
pub const MISC_KERNEL: u16 = 1;
/// `PERF_RECORD_MISC_USER`: a build-id of a user-space file.
pub const MISC_USER: u16 = 2;
/// `PERF_RECORD_MISC_BUILD_ID_SIZE`: the entry stores its build-id length.
const MISC_BUILD_ID_SIZE: u16 = 1 << 15;
/// perf pads strings and build-id file names to this many bytes.
const NAME_ALIGN: usize = 64;

/// One entry of the BUILD_ID feature: which file had which build-id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// -1 for the kernel and modules (perf's "host machine" pid).
    pub pid: i32,
    /// [`MISC_KERNEL`] or [`MISC_USER`].
    pub misc: u16,
    /// At most 20 bytes (longer ids are cut, as perf does).
    pub build_id: Vec<u8>,
    /// Absolute path, `[kernel.kallsyms]`, `[vdso]`, or a module's name.
    pub filename: String,
}

/// The clock of the timestamps, for events opened with `use_clockid`
/// (perf's `-k`): CLOCKID holds the resolution, CLOCK_DATA a reference
/// pair that maps clock time to wall-clock time (`perf script -F tod`).
/// The values come from `clock_getres`/`clock_gettime`, which the caller
/// reads (syscalls live in `sys`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockData {
    /// `CLOCK_MONOTONIC` = 1, `CLOCK_MONOTONIC_RAW` = 4, `CLOCK_BOOTTIME` = 7, ...
    pub clockid: u32,
    /// Resolution of the clock in ns (perf prints `1000 / res_ns` MHz).
    pub res_ns: u64,
    /// Wall-clock time (ns since the epoch) at the reference instant.
    pub tod_ns: u64,
    /// The clock's time (ns) at the same instant.
    pub clockid_ns: u64,
}

/// The metadata written after the data section. Empty strings and zero
/// counts are written as they are; `None`/empty collections leave the
/// feature out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `uname -n`.
    pub(crate) hostname: String,
    /// `uname -r`.
    pub(crate) osrelease: String,
    /// The recording tool, `scry 0.1.0`.
    pub(crate) version: String,
    /// `uname -m`.
    pub(crate) arch: String,
    pub(crate) nr_cpus_online: u32,
    /// perf's "available": the highest present CPU number + 1.
    pub(crate) nr_cpus_avail: u32,
    /// x86: the `model name` of /proc/cpuinfo, spaces squeezed.
    pub(crate) cpudesc: String,
    /// x86: `vendor,family,model,stepping`; `None` elsewhere.
    pub(crate) cpuid: Option<String>,
    /// MemTotal of /proc/meminfo.
    pub(crate) total_mem_kb: u64,
    /// The recording command line, argv[0] first.
    pub(crate) cmdline: Vec<String>,
    /// The BUILD_ID feature: one entry per kernel, module and user binary
    /// with samples (or every one mapped, with `--buildid-all`).
    pub build_ids: Vec<BuildIdEntry>,
    /// The TRACING_DATA blob (see `data::tracing_data`), when tracepoints
    /// were recorded.
    pub tracing_data: Option<Vec<u8>>,
    /// Timestamps of the first and the last sample.
    pub sample_time: Option<(u64, u64)>,
    /// `(type, name)` of the PMUs in /sys/bus/event_source/devices.
    pub(crate) pmu_mappings: Vec<(u32, String)>,
    /// The timestamps' clock, when the events use `use_clockid`.
    pub clock: Option<ClockData>,
    /// Event groups of two or more (`'{a,b}'`): the leader's event index
    /// and how many events the group has.
    pub(crate) groups: Vec<(u32, u32)>,
    /// `record --profile`'s kernel function rows, in scry's own section
    /// (`data::function_rows`: a bit perf does not read).
    pub function_rows: Option<super::function_rows::FunctionRows>,
}

impl Features {
    /// Everything the system can tell: host, kernel, CPUs, memory, PMUs.
    /// What cannot be read is left empty/zero (a perf.data without a
    /// hostname is still a good file); `cmdline` is taken as given.
    pub fn from_system(cmdline: Vec<String>) -> Self {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let cpu_count = |path: &str| {
            let cpus = crate::sys::proc::parse_cpu_list(&read(path)).unwrap_or_default();
            cpus.iter().max().map_or(0, |max| max.saturating_add(1))
        };
        let online = crate::sys::proc::parse_cpu_list(&read("/sys/devices/system/cpu/online"))
            .map_or(0, |cpus| u32::try_from(cpus.len()).unwrap_or(u32::MAX));
        let cpuinfo = read("/proc/cpuinfo");
        Features {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            osrelease: read("/proc/sys/kernel/osrelease").trim().to_string(),
            version: format!("scry {}", env!("CARGO_PKG_VERSION")),
            arch: std::env::consts::ARCH.to_string(),
            nr_cpus_online: online,
            nr_cpus_avail: cpu_count("/sys/devices/system/cpu/present"),
            cpudesc: cpu_desc(&cpuinfo),
            cpuid: cpu_id(&cpuinfo),
            total_mem_kb: mem_total_kb(&read("/proc/meminfo")),
            cmdline,
            build_ids: Vec::new(),
            tracing_data: None,
            sample_time: None,
            pmu_mappings: pmu_mappings(Path::new("/sys/bus/event_source/devices")),
            clock: None,
            groups: Vec::new(),
            function_rows: None,
        }
    }

    /// `(feature bit, section bytes)` of every feature present, in bit order.
    pub(crate) fn sections(&self) -> Vec<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        if let Some(data) = &self.tracing_data {
            out.push((bit::TRACING_DATA, data.clone()));
        }
        if !self.build_ids.is_empty() {
            out.push((bit::BUILD_ID, encode_build_ids(&self.build_ids)));
        }
        out.push((bit::HOSTNAME, header_string(&self.hostname)));
        out.push((bit::OSRELEASE, header_string(&self.osrelease)));
        out.push((bit::VERSION, header_string(&self.version)));
        out.push((bit::ARCH, header_string(&self.arch)));
        let mut nrcpus = self.nr_cpus_avail.to_ne_bytes().to_vec();
        nrcpus.extend_from_slice(&self.nr_cpus_online.to_ne_bytes());
        out.push((bit::NRCPUS, nrcpus));
        out.push((bit::CPUDESC, header_string(&self.cpudesc)));
        if let Some(cpuid) = &self.cpuid {
            out.push((bit::CPUID, header_string(cpuid)));
        }
        out.push((bit::TOTAL_MEM, self.total_mem_kb.to_ne_bytes().to_vec()));
        out.push((bit::CMDLINE, string_list(&self.cmdline)));
        if !self.pmu_mappings.is_empty() {
            let mut pmus = len_u32(self.pmu_mappings.len()).to_ne_bytes().to_vec();
            for (kind, name) in &self.pmu_mappings {
                pmus.extend_from_slice(&kind.to_ne_bytes());
                pmus.extend_from_slice(&header_string(name));
            }
            out.push((bit::PMU_MAPPINGS, pmus));
        }
        if let Some((first, last)) = self.sample_time {
            let mut time = first.to_ne_bytes().to_vec();
            time.extend_from_slice(&last.to_ne_bytes());
            out.push((bit::SAMPLE_TIME, time));
        }
        if let Some(clock) = self.clock {
            out.push((bit::CLOCKID, clock.res_ns.to_ne_bytes().to_vec()));
            // CLOCK_DATA: u32 version (1), u32 clockid, u64 tod, u64 clock.
            let mut data = 1u32.to_ne_bytes().to_vec();
            data.extend_from_slice(&clock.clockid.to_ne_bytes());
            data.extend_from_slice(&clock.tod_ns.to_ne_bytes());
            data.extend_from_slice(&clock.clockid_ns.to_ne_bytes());
            out.push((bit::CLOCK_DATA, data));
        }
        if !self.groups.is_empty() {
            // perf's write_group_desc: u32 count, then per group its name
            // (perf's `{anon_group}` for unnamed ones), leader index, size.
            let mut desc = len_u32(self.groups.len()).to_ne_bytes().to_vec();
            for &(leader, members) in &self.groups {
                desc.extend_from_slice(&header_string("{anon_group}"));
                desc.extend_from_slice(&leader.to_ne_bytes());
                desc.extend_from_slice(&members.to_ne_bytes());
            }
            out.push((bit::GROUP_DESC, desc));
        }
        if let Some(rows) = &self.function_rows {
            out.push((super::function_rows::FUNCTION_ROWS_BIT, rows.encode()));
        }
        out
    }
}

/// A length as the u32 perf's headers use, saturating (no file of ours gets
/// near 4 G entries; saturating keeps the encoder total).
pub(crate) fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `perf_header_string`: u32 padded length, bytes, NUL, zero padding to 64.
pub(crate) fn header_string(s: &str) -> Vec<u8> {
    let padded = (s.len() + 1).next_multiple_of(NAME_ALIGN);
    let mut out = Vec::with_capacity(4 + padded);
    out.extend_from_slice(&len_u32(padded).to_ne_bytes());
    out.extend_from_slice(s.as_bytes());
    out.resize(4 + padded, 0);
    out
}

/// `perf_header_string_list`: u32 count, then the strings.
fn string_list(list: &[String]) -> Vec<u8> {
    let mut out = len_u32(list.len()).to_ne_bytes().to_vec();
    for s in list {
        out.extend_from_slice(&header_string(s));
    }
    out
}

/// A sequence of `perf_record_header_build_id`: header (type 0, misc, size),
/// pid, 20 bytes of id + length byte + 3 reserved, file name padded to 64.
fn encode_build_ids(entries: &[BuildIdEntry]) -> Vec<u8> {
    const FIXED: usize = 8 + 4 + 24;
    let mut out = Vec::new();
    for entry in entries {
        let name_len = (entry.filename.len() + 1).next_multiple_of(NAME_ALIGN);
        let size = u16::try_from(FIXED + name_len).unwrap_or(u16::MAX);
        let id = &entry.build_id[..entry.build_id.len().min(20)];
        out.extend_from_slice(&0u32.to_ne_bytes());
        out.extend_from_slice(&(entry.misc | MISC_BUILD_ID_SIZE).to_ne_bytes());
        out.extend_from_slice(&size.to_ne_bytes());
        out.extend_from_slice(&entry.pid.to_ne_bytes());
        let mut id_field = [0u8; 24];
        id_field[..id.len()].copy_from_slice(id);
        id_field[20] = id.len() as u8;
        out.extend_from_slice(&id_field);
        let name_start = out.len();
        out.extend_from_slice(entry.filename.as_bytes());
        // A name too long for the u16 record size is cut: the record must
        // stay parseable, and such a path is not a real one anyway.
        out.resize(name_start + usize::from(size) - FIXED, 0);
        if let Some(last) = out.last_mut() {
            *last = 0;
        }
    }
    out
}

fn cpuinfo_field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim())
    })
}

/// The CPU description perf shows: x86's `model name` with runs of spaces
/// squeezed; other architectures' first `Processor`/`cpu model` line.
fn cpu_desc(cpuinfo: &str) -> String {
    let raw = ["model name", "Processor", "cpu model", "cpu"]
        .iter()
        .find_map(|key| cpuinfo_field(cpuinfo, key))
        .unwrap_or("");
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// x86's `vendor,family,model,stepping` (what perf's CPUID feature holds).
fn cpu_id(cpuinfo: &str) -> Option<String> {
    let vendor = cpuinfo_field(cpuinfo, "vendor_id")?;
    let family = cpuinfo_field(cpuinfo, "cpu family")?;
    let model = cpuinfo_field(cpuinfo, "model")?;
    let stepping = cpuinfo_field(cpuinfo, "stepping")?;
    Some(format!("{vendor},{family},{model},{stepping}"))
}

fn mem_total_kb(meminfo: &str) -> u64 {
    cpuinfo_field(meminfo, "MemTotal")
        .and_then(|v| v.trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn pmu_mappings(dir: &Path) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(u32, String)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let kind = std::fs::read_to_string(e.path().join("type")).ok()?;
            Some((
                kind.trim().parse().ok()?,
                e.file_name().to_string_lossy().into_owned(),
            ))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_string_is_padded_to_64_with_nul() {
        let s = header_string("vm");
        assert_eq!(s.len(), 4 + 64);
        assert_eq!(&s[..4], &64u32.to_ne_bytes());
        assert_eq!(&s[4..6], b"vm");
        assert!(s[6..].iter().all(|&b| b == 0));
        // 63 chars + NUL fit in 64; 64 chars need 128.
        assert_eq!(header_string(&"x".repeat(63)).len(), 4 + 64);
        assert_eq!(header_string(&"x".repeat(64)).len(), 4 + 128);
    }

    #[test]
    fn build_id_entry_layout() {
        let entry = BuildIdEntry {
            pid: -1,
            misc: MISC_KERNEL,
            build_id: vec![0xaa; 20],
            filename: "[kernel.kallsyms]".into(),
        };
        let b = encode_build_ids(&[entry]);
        assert_eq!(b.len(), 36 + 64);
        assert_eq!(&b[0..4], &0u32.to_ne_bytes());
        assert_eq!(
            u16::from_ne_bytes([b[4], b[5]]),
            MISC_KERNEL | MISC_BUILD_ID_SIZE
        );
        assert_eq!(u16::from_ne_bytes([b[6], b[7]]), 100);
        assert_eq!(&b[8..12], &(-1i32).to_ne_bytes());
        assert_eq!(&b[12..32], &[0xaa; 20]);
        assert_eq!(b[32], 20);
        assert_eq!(&b[36..53], b"[kernel.kallsyms]");
        assert_eq!(b[53], 0);
    }

    #[test]
    fn cpuinfo_parsing() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n\
                    model name\t: AMD  EPYC   7B13\nstepping\t: 1\n";
        assert_eq!(cpu_desc(info), "AMD EPYC 7B13");
        assert_eq!(cpu_id(info).as_deref(), Some("AuthenticAMD,25,1,1"));
        assert_eq!(
            mem_total_kb("MemFree: 1 kB\nMemTotal:   24684096 kB\n"),
            24684096
        );
        assert_eq!(cpu_id("processor: 0\n"), None);
    }

    #[test]
    fn sections_are_in_bit_order() {
        let mut f = Features::from_system(vec!["scry".into(), "record".into()]);
        f.tracing_data = Some(vec![1, 2, 3]);
        f.sample_time = Some((1, 2));
        f.clock = Some(ClockData {
            clockid: 1,
            res_ns: 1,
            tod_ns: 3,
            clockid_ns: 4,
        });
        f.build_ids.push(BuildIdEntry {
            pid: -1,
            misc: MISC_USER,
            build_id: vec![1; 20],
            filename: "/bin/sh".into(),
        });
        let bits: Vec<u32> = f.sections().iter().map(|(b, _)| *b).collect();
        let mut sorted = bits.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(bits, sorted);
        assert!(bits.contains(&bit::TRACING_DATA) && bits.contains(&bit::SAMPLE_TIME));
        assert_eq!(bits.last(), Some(&bit::CLOCK_DATA));
    }
}
