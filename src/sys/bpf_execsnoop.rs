//! `scry execsnoop`'s kernel side: loads `src/bpf/execsnoop.bpf.c` through
//! the engine, fills its cgroup filter before attaching (an empty cgroup
//! array would let every task through), and decodes the events its ring
//! buffer streams. What the program keeps and drops is in its header.

use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, MapMut};

use super::bpf_engine::{self, GroupRules, Loaded, u32_at};
use super::bpf_events::{EventStream, c_string_at, i32_at};

super::bpf::bpf_skeleton!("execsnoop.skel.rs");

use skel::ExecsnoopSkelBuilder;

/// The program's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExecSettings {
    /// Failed calls too (-x).
    pub(crate) include_failed: bool,
    /// Only this user (-u).
    pub(crate) uid: Option<u32>,
    /// Only tasks under this cgroup directory (--cgroup).
    pub(crate) cgroup: Option<PathBuf>,
    /// Arguments copied per call (--max-args, at most 60).
    pub(crate) max_args: u32,
}

/// The most arguments the program copies (its TOTAL_MAX_ARGS).
pub(crate) const MAX_ARGS: u32 = 60;

/// One execve(2), as the kernel saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExecEvent {
    pub(crate) comm: String,
    pub(crate) pid: u32,
    pub(crate) ppid: u32,
    pub(crate) uid: u32,
    pub(crate) ret: i32,
    /// The file name passed, then argv[1..].
    pub(crate) args: Vec<String>,
    /// More arguments than were copied.
    pub(crate) truncated: bool,
}

/// Offsets in `struct exec_event`.
const ARGS_OFFSET: usize = 40;

impl ExecEvent {
    /// Decodes one ring record; None when it is too short.
    pub(crate) fn decode(record: &[u8]) -> Option<ExecEvent> {
        let count = i32_at(record, 16)?;
        let size = u32_at(record, 20)? as usize;
        let body = record.get(ARGS_OFFSET..)?;
        let raw = &body[..size.min(body.len())];
        let raw = raw.strip_suffix(&[0]).unwrap_or(raw);
        let args: Vec<String> = if raw.is_empty() {
            Vec::new()
        } else {
            raw.split(|&b| b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        };
        let shown = args.len();
        Some(ExecEvent {
            pid: u32_at(record, 0)?,
            ppid: u32_at(record, 4)?,
            uid: u32_at(record, 8)?,
            ret: i32_at(record, 12)?,
            comm: c_string_at(record, 24, 16),
            truncated: usize::try_from(count).is_ok_and(|c| c > shown),
            args,
        })
    }
}

/// The directory of `--cgroup PATH`, opened (its descriptor fills the
/// programs' cgroup array).
pub(crate) fn open_cgroup(path: Option<&std::path::Path>) -> io::Result<Option<std::fs::File>> {
    path.map(|path| {
        std::fs::File::open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("--cgroup {}: {e}", path.display())))
    })
    .transpose()
}

/// Puts the cgroup `dir` of `--cgroup` (when given) in a program's
/// one-slot cgroup array.
pub(crate) fn fill_cgroup<M: MapCore>(map: &M, dir: Option<&std::fs::File>) -> io::Result<()> {
    let Some(dir) = dir else {
        return Ok(());
    };
    let fd = dir.as_raw_fd() as u32;
    map.update(&0u32.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| super::bpf::io_error("filling the cgroup filter", e))
}

/// Loads `builder`'s object as [`bpf_engine::load`] does, then puts the
/// cgroup `dir` of `--cgroup` (when given) in its cgroup array
/// (`cgroup_map` finds it) before the programs attach.
pub(crate) fn load_in_cgroup<B, C, S>(
    builder: impl Fn() -> B,
    configure: C,
    rules: GroupRules<'_>,
    dir: Option<&std::fs::File>,
    cgroup_map: fn(&S) -> &MapMut<'static>,
) -> io::Result<Loaded<S>>
where
    B: SkelBuilder<'static>,
    B::Output: OpenSkel<'static, Output = S>,
    S: Skel<'static>,
    C: FnMut(&mut B::Output) -> io::Result<()>,
{
    // Filled before each attach (a refused hook loads the object again).
    bpf_engine::load_prepared(builder, configure, rules, |skel: &mut S| {
        fill_cgroup(cgroup_map(skel), dir)
    })
}

/// The loaded, attached program, streaming [`ExecEvent`]s.
pub(crate) type ExecsnoopBpf = EventStream<ExecEvent>;

/// Loads and attaches the program, its cgroup filter filled first.
pub(crate) fn load(settings: &ExecSettings) -> io::Result<ExecsnoopBpf> {
    let cgroup = open_cgroup(settings.cgroup.as_deref())?;
    let loaded = load_in_cgroup(
        ExecsnoopSkelBuilder::default,
        |open: &mut skel::OpenExecsnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.include_failed = settings.include_failed;
            rodata.filter_uid = settings.uid.unwrap_or(u32::MAX);
            rodata.filter_cgroup = cgroup.is_some();
            rodata.max_args = settings.max_args.min(MAX_ARGS) as i32;
            Ok(())
        },
        GroupRules::default(),
        cgroup.as_ref(),
        |s: &skel::ExecsnoopSkel<'static>| &s.maps.cgroup_map,
    )?;
    Ok(EventStream::new(
        loaded,
        |s: &skel::ExecsnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        ExecEvent::decode,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_arguments_and_says_when_some_were_left_out() {
        let mut record = vec![0u8; ARGS_OFFSET];
        record[0..4].copy_from_slice(&7u32.to_ne_bytes());
        record[12..16].copy_from_slice(&(-2i32).to_ne_bytes());
        record[16..20].copy_from_slice(&3i32.to_ne_bytes());
        let args = b"/bin/x\0a b\0";
        record[20..24].copy_from_slice(&(args.len() as u32).to_ne_bytes());
        record[24..28].copy_from_slice(b"sh\0\0");
        record.extend_from_slice(args);
        let e = ExecEvent::decode(&record).expect("decodes");
        assert_eq!(e.pid, 7);
        assert_eq!(e.ret, -2);
        assert_eq!(e.comm, "sh");
        assert_eq!(e.args, ["/bin/x", "a b"]);
        assert!(e.truncated);
        assert_eq!(ExecEvent::decode(&record[..10]), None);
    }
}
