//! What the TCP tools' commands share (tcplife, tcpconnect, tcpaccept,
//! tcpstates): the `-4`/`-6` flags, port lists (`-L 80,443`: at most
//! eight, each 1-65535, checked before loading, so a bad one is one line
//! and exit 2), and the run: the program loaded in the tool's mode, its
//! events through the streaming tools' run (`snoop::run`, the tool's
//! table a `TcpTable`), and at the end one note when the filters given
//! matched nothing (the kernel filters, so nothing was seen at all).

use std::cell::{Cell, RefCell};
use std::io::{self, Write};

use scry::analysis::net::{ConnectCounts, TcpEvent};
use scry::render::net::{SessionLayout, Stamps, TcpTable, connect_counts_json};
use scry::sys::bpf_tcp::{self, AF_INET, AF_INET6, MAX_PORTS, TcpMode, TcpSettings};

use super::{bpf_tool, snoop};

/// -4 / -6.
#[derive(clap::Args, Debug)]
pub(crate) struct FamilyFlags {
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    ipv6: bool,
}

impl FamilyFlags {
    pub(crate) fn family(&self) -> Option<u16> {
        if self.ipv4 {
            Some(AF_INET)
        } else if self.ipv6 {
            Some(AF_INET6)
        } else {
            None
        }
    }
}

/// The ports of `-L`/`-D` (tcpconnect's and tcpaccept's `-P`), and the
/// flags as typed (for the note when nothing matched).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PortLists {
    pub(crate) local: Vec<u16>,
    pub(crate) remote: Vec<u16>,
    pub(crate) filters: Vec<String>,
}

/// bcc's `--cgroupmap` and `--mntnsmap` (tcptop, tcpconnect): maps of
/// cgroup ids or mount namespaces pinned by another program, not read:
/// taken only to say so, in one line naming the filter to give instead.
#[derive(clap::Args, Debug)]
pub(crate) struct BccMapArgs {
    /// bcc's pinned map of cgroup ids (not taken: give the cgroup's
    /// directory).
    #[arg(long = "cgroupmap", value_name = "MAP")]
    cgroupmap: Option<std::path::PathBuf>,
    /// bcc's pinned map of mount namespaces (not taken: no namespace
    /// filter).
    #[arg(long = "mntnsmap", value_name = "MAP")]
    mntnsmap: Option<std::path::PathBuf>,
}

impl BccMapArgs {
    /// An error when either map is given; `cgroup_flag`: the tool's own
    /// cgroup filter, or "" when it has none.
    pub(crate) fn refuse(&self, tool: &str, cgroup_flag: &str) -> anyhow::Result<()> {
        let instead = match cgroup_flag {
            "" => "no cgroup filter: give -p PID".to_string(),
            flag => format!("give the cgroup's directory with {flag} /sys/fs/cgroup/..."),
        };
        if let Some(map) = &self.cgroupmap {
            anyhow::bail!(
                "{tool}: --cgroupmap {}: bcc's map of cgroup ids pinned by another program is \
                 not read; {instead}",
                map.display()
            );
        }
        if let Some(map) = &self.mntnsmap {
            anyhow::bail!(
                "{tool}: --mntnsmap {}: bcc's map of mount namespaces pinned by another program \
                 is not read; {instead}",
                map.display()
            );
        }
        Ok(())
    }
}

/// `(FLAG, PORTS)` for the local and the remote list, each PORTS a
/// comma-separated list (at most eight, each 1-65535) or None. Checked
/// before anything loads.
pub(crate) fn port_lists(
    tool: &str,
    local: (&str, Option<&str>),
    remote: (&str, Option<&str>),
) -> anyhow::Result<PortLists> {
    let mut lists = PortLists::default();
    for ((flag, text), ports) in [(local, &mut lists.local), (remote, &mut lists.remote)] {
        let Some(text) = text else { continue };
        for p in text.split(',') {
            let port = p.trim().parse::<u16>().ok().filter(|&n| n > 0);
            let port = port.ok_or_else(|| {
                anyhow::anyhow!("{tool}: {flag} {text}: '{p}' is not a port (1-65535)")
            })?;
            ports.push(port);
        }
        if ports.len() > MAX_PORTS {
            anyhow::bail!("{tool}: {flag} {text}: at most {MAX_PORTS} ports");
        }
        lists.filters.push(format!("{flag} {text}"));
    }
    Ok(lists)
}

/// tcplife's and tcpstates' flags: which sessions, how wide.
#[derive(clap::Args, Debug)]
pub(crate) struct SessionFlags {
    #[command(flatten)]
    family: FamilyFlags,
    /// Only these local ports (comma-separated, at most 8).
    #[arg(short = 'L', long = "localport", value_name = "PORTS")]
    lports: Option<String>,
    /// Only these remote ports (comma-separated, at most 8).
    #[arg(short = 'D', long = "remoteport", value_name = "PORTS")]
    rports: Option<String>,
    /// Wide address columns (fit IPv6).
    #[arg(short = 'w', long = "wide")]
    pub(crate) wide: bool,
}

impl SessionFlags {
    /// The table's columns: these flags' width, the time columns asked.
    pub(crate) fn layout(&self, hms: bool, secs: bool) -> SessionLayout {
        SessionLayout {
            stamps: Stamps { hms, secs },
            wide: self.wide,
        }
    }

    /// The settings in `mode` with these filters, and the port lists.
    pub(crate) fn settings(
        &self,
        tool: &str,
        mode: TcpMode,
    ) -> anyhow::Result<(TcpSettings, PortLists)> {
        let ports = port_lists(
            tool,
            ("-L", self.lports.as_deref()),
            ("-D", self.rports.as_deref()),
        )?;
        let settings = TcpSettings {
            mode,
            family: self.family.family(),
            ..TcpSettings::default()
        };
        Ok((settings, ports))
    }
}

/// How a TCP tool runs.
#[derive(Debug)]
pub(crate) struct TcpRun<'a> {
    pub(crate) tool: &'a str,
    pub(crate) settings: TcpSettings,
    pub(crate) flags: &'a snoop::StreamFlags,
    /// The filters given, as typed (for the note when nothing matched).
    pub(crate) filters: Vec<String>,
}

impl<'a> TcpRun<'a> {
    /// `settings` with the port lists put in.
    pub(crate) fn new(
        tool: &'a str,
        flags: &'a snoop::StreamFlags,
        mut settings: TcpSettings,
        ports: PortLists,
    ) -> TcpRun<'a> {
        settings.lports = ports.local;
        settings.rports = ports.remote;
        TcpRun {
            tool,
            settings,
            flags,
            filters: ports.filters,
        }
    }
}

/// `-c`: the events counted per connection (`by_source_port`: keyed by
/// the source port too) until the end, then printed by `table` (or as
/// JSON).
pub(crate) fn run_counted(
    how: &TcpRun<'_>,
    by_source_port: bool,
    table: fn(&mut io::StdoutLock<'static>, &ConnectCounts) -> io::Result<()>,
) -> anyhow::Result<()> {
    let counts = RefCell::new(ConnectCounts::new(by_source_port));
    run(how, TcpTable::Counted, |e| {
        counts.borrow_mut().add(e);
        false
    })?;
    let mut out = io::stdout().lock();
    if how.flags.json {
        connect_counts_json(&mut out, &counts.borrow())?;
    } else {
        table(&mut out, &counts.borrow())?;
    }
    out.flush()?;
    Ok(())
}

/// Loads the program and streams its events in `table` (or as JSON)
/// until the end; then the note when nothing came and filters were
/// given. Returns the number of events; `keep` sees each first and says
/// whether it is printed (tcpconnect -c sums them instead).
pub(crate) fn run(
    how: &TcpRun<'_>,
    table: TcpTable,
    keep: impl Fn(&TcpEvent) -> bool,
) -> anyhow::Result<u64> {
    let bpf = bpf_tool::load(how.tool, || bpf_tcp::load(&how.settings))?;
    let stream = snoop::Stream::new(how.tool, how.flags, how.settings.pid);
    let events = Cell::new(0u64);
    snoop::run(&stream, how.flags, &bpf, &table, |e| {
        events.set(events.get() + 1);
        keep(e)
    })?;
    if events.get() == 0 && !how.filters.is_empty() {
        eprintln!(
            "{}: nothing matched {} while it ran",
            how.tool,
            how.filters.join(" ")
        );
    }
    Ok(events.get())
}
