//! tcprtt's kernel side: loads `src/bpf/tcprtt.bpf.c` through the engine
//! and reads its one histogram of smoothed RTTs (read and deleted, so each
//! interval starts from zero).

use std::io;

use super::bpf_engine::{self};
use super::bpf_hists::HistBpf;

super::bpf::bpf_skeleton!("tcprtt.skel.rs");

use skel::{TcprttSkel, TcprttSkelBuilder};

/// The program's settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcprttSettings {
    /// Only this local port.
    pub lport: Option<u16>,
    /// Only this remote port.
    pub rport: Option<u16>,
    pub milliseconds: bool,
}

pub type TcprttBpf = HistBpf<TcprttSkel<'static>>;

pub fn load(settings: TcprttSettings) -> io::Result<TcprttBpf> {
    let loaded = bpf_engine::load_now(
        TcprttSkelBuilder::default,
        |open: &mut skel::OpenTcprttSkel<'static>| {
            let rodata = super::bpf::rodata(open.maps.rodata_data.as_deref_mut())?;
            rodata.filter_lport = settings.lport.unwrap_or(0);
            rodata.filter_rport = settings.rport.unwrap_or(0);
            rodata.milliseconds = settings.milliseconds;
            Ok(())
        },
    )?;
    Ok(HistBpf::new(loaded, |s: &TcprttSkel<'static>| {
        &s.maps.hists
    }))
}
