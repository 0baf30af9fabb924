//! `scry runqslower`'s kernel side: loads `src/bpf/runqslower.bpf.c`
//! through the engine, opens its ring buffer, and parses its events (the
//! layout of its `struct event`, kept in step here and nowhere else). The
//! rules (when a wait starts and ends) are in the program's header.

use std::io;

use super::bpf_engine::{self, Hook, Loaded, RingReader, comm_at, u32_at, u64_at};

super::bpf::bpf_skeleton!("runqslower.skel.rs");

use skel::{RunqslowerSkel, RunqslowerSkelBuilder};

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunqslowerSettings {
    /// Report waits longer than this (0: all).
    pub(crate) min_us: u64,
    pub(crate) pid: Option<u32>,
    pub(crate) tid: Option<u32>,
}

/// One wait longer than the threshold.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct SlowWait {
    pub(crate) tid: u32,
    pub(crate) comm: String,
    pub(crate) delta_us: u64,
    /// The task that ran on the CPU before it.
    pub(crate) prev_tid: u32,
    pub(crate) prev_comm: String,
}

impl SlowWait {
    /// Parses an event; `None` when it is short.
    pub(crate) fn parse(raw: &[u8]) -> Option<SlowWait> {
        if raw.len() < 48 {
            return None;
        }
        Some(SlowWait {
            tid: u32_at(raw, 0)?,
            prev_tid: u32_at(raw, 4)?,
            delta_us: u64_at(raw, 8)?,
            comm: comm_at(raw, 16, 16),
            prev_comm: comm_at(raw, 32, 16),
        })
    }
}

#[derive(Debug)]
pub(crate) struct RunqslowerBpf {
    loaded: Loaded<RunqslowerSkel<'static>>,
}

impl RunqslowerBpf {
    pub(crate) fn load(settings: RunqslowerSettings) -> io::Result<RunqslowerBpf> {
        let loaded = bpf_engine::load_now(
            RunqslowerSkelBuilder::default,
            |open: &mut skel::OpenRunqslowerSkel<'static>| {
                let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
                rodata.min_us = settings.min_us;
                rodata.filter_tgid = settings.pid.unwrap_or(0);
                rodata.filter_tid = settings.tid.unwrap_or(0);
                Ok(())
            },
        )?;
        Ok(RunqslowerBpf { loaded })
    }

    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    /// The reader of the program's events.
    pub(crate) fn events<'a>(
        &'a self,
        mut on_wait: impl FnMut(SlowWait) + 'a,
    ) -> io::Result<RingReader<'a>> {
        bpf_engine::ring_reader(&self.loaded.skel.maps.events, move |raw| {
            if let Some(wait) = SlowWait::parse(raw) {
                on_wait(wait);
            }
        })
    }

    /// Events the program could not send (the ring was full).
    pub(crate) fn dropped(&self) -> io::Result<u64> {
        bpf_engine::dropped(&self.loaded.skel.maps.drops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_event_layout() {
        let mut raw = Vec::new();
        raw.extend_from_slice(&7u32.to_ne_bytes());
        raw.extend_from_slice(&9u32.to_ne_bytes());
        raw.extend_from_slice(&12345u64.to_ne_bytes());
        raw.extend_from_slice(b"spin\0\0\0\0\0\0\0\0\0\0\0\0");
        raw.extend_from_slice(b"kworker/0:1\0\0\0\0\0");
        let wait = SlowWait::parse(&raw).unwrap();
        assert_eq!((wait.tid, wait.prev_tid, wait.delta_us), (7, 9, 12345));
        assert_eq!(
            (wait.comm.as_str(), wait.prev_comm.as_str()),
            ("spin", "kworker/0:1")
        );
        assert!(SlowWait::parse(&raw[..40]).is_none());
    }
}
