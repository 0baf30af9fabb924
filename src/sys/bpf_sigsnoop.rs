//! `scry sigsnoop` and `scry killsnoop`'s kernel side: loads
//! `src/bpf/sigsnoop.bpf.c` through the engine with one of its two
//! sources (every generated signal, or the kill/tkill/tgkill calls: the
//! other's programs are not loaded) and decodes the events its ring
//! streams.

use std::io;

use super::bpf_engine::{GroupRules, u32_at};
use super::bpf_events::{EventStream, c_string_at, i32_at};

super::bpf::bpf_skeleton!("sigsnoop.skel.rs");

use skel::SigsnoopSkelBuilder;

/// The programs of the kill calls (killsnoop's source).
const KILL_GROUPS: &[&str] = &[
    "scry_sig_kill",
    "scry_sig_kill_exit",
    "scry_sig_tkill",
    "scry_sig_tkill_exit",
    "scry_sig_tgkill",
    "scry_sig_tgkill_exit",
];

/// The program of signal:signal_generate (sigsnoop's source).
const GENERATE_GROUPS: &[&str] = &["scry_sig_generate"];

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SigSettings {
    /// Only signals this process sends (-p).
    pub(crate) pid: Option<u32>,
    /// Bit `sig - 1` set: signal `sig` is shown (-s); 0: every signal.
    pub(crate) signals: u64,
    /// Only failed ones (-x).
    pub(crate) failed_only: bool,
    /// The kill(2), tkill(2) and tgkill(2) calls instead of every
    /// generated signal (killsnoop, sigsnoop -k).
    pub(crate) kill_only: bool,
}

/// What sent a signal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SigSource {
    /// signal:signal_generate (any sender).
    #[default]
    Generated,
    Kill,
    Tkill,
    Tgkill,
}

impl SigSource {
    pub(crate) fn name(self) -> &'static str {
        match self {
            SigSource::Generated => "signal_generate",
            SigSource::Kill => "kill",
            SigSource::Tkill => "tkill",
            SigSource::Tgkill => "tgkill",
        }
    }
}

/// One signal, as the kernel saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SigEvent {
    /// The sender.
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// The target as given (kill(2): a negative process group, 0, -1).
    pub(crate) tpid: i32,
    pub(crate) sig: i32,
    /// A call's return (minus the errno), or signal_generate's errno.
    pub(crate) ret: i32,
    pub(crate) source: SigSource,
    pub(crate) comm: String,
}

impl SigEvent {
    /// Decodes one ring record (`struct sig_event`); None when short.
    pub(crate) fn decode(r: &[u8]) -> Option<SigEvent> {
        let source = match u32_at(r, 20)? {
            1 => SigSource::Kill,
            2 => SigSource::Tkill,
            3 => SigSource::Tgkill,
            _ => SigSource::Generated,
        };
        Some(SigEvent {
            pid: u32_at(r, 0)?,
            tid: u32_at(r, 4)?,
            tpid: i32_at(r, 8)?,
            sig: i32_at(r, 12)?,
            ret: i32_at(r, 16)?,
            source,
            comm: c_string_at(r, 24, 16),
        })
    }
}

/// The loaded, attached programs, streaming [`SigEvent`]s.
pub(crate) type SigsnoopBpf = EventStream<SigEvent>;

pub(crate) fn load(settings: SigSettings) -> io::Result<SigsnoopBpf> {
    let skip = if settings.kill_only {
        GENERATE_GROUPS
    } else {
        KILL_GROUPS
    };
    EventStream::load(
        SigsnoopSkelBuilder::default,
        |open: &mut skel::OpenSigsnoopSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_tgid = settings.pid.unwrap_or(0);
            rodata.target_signals = settings.signals;
            rodata.failed_only = settings.failed_only;
            Ok(())
        },
        GroupRules::skipping(skip),
        |s: &skel::SigsnoopSkel<'static>| (&s.maps.events, &s.maps.drops),
        SigEvent::decode,
    )
}
