//! mountsnoop's lines, in libbpf-tools' layout (`COMM PID TID MNT_NS
//! CALL`, the call written as C: `mount("src", "dest", "fs", MS_NOSUID |
//! MS_NODEV, "data") = 0`, a failure as `-ENOENT`; `-t`: a leading TIME,
//! HH:MM:SS) or, with `-d`, one field a line as libbpf-tools' detailed
//! mode; and their JSON fields.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::snoop::{Clock, SnoopFormat, hms};
use crate::analysis::snoop::MountEvent;

/// The names of the mount flags' bits, bit 0 first, as <linux/mount.h>
/// defines them (bit 9 has none). libbpf-tools' table skips that gap and
/// names bits 9-14 one too low (its MS_BIND is MS_MOVE's 0x2000).
const MOUNT_FLAGS: [&str; 32] = [
    "MS_RDONLY",
    "MS_NOSUID",
    "MS_NODEV",
    "MS_NOEXEC",
    "MS_SYNCHRONOUS",
    "MS_REMOUNT",
    "MS_MANDLOCK",
    "MS_DIRSYNC",
    "MS_NOSYMFOLLOW",
    "",
    "MS_NOATIME",
    "MS_NODIRATIME",
    "MS_BIND",
    "MS_MOVE",
    "MS_REC",
    "MS_SILENT",
    "MS_POSIXACL",
    "MS_UNBINDABLE",
    "MS_PRIVATE",
    "MS_SLAVE",
    "MS_SHARED",
    "MS_RELATIME",
    "MS_KERNMOUNT",
    "MS_I_VERSION",
    "MS_STRICTATIME",
    "MS_LAZYTIME",
    "MS_SUBMOUNT",
    "MS_NOREMOTELOCK",
    "MS_NOSEC",
    "MS_BORN",
    "MS_ACTIVE",
    "MS_NOUSER",
];

/// The flags as libbpf-tools writes them: `0x0`, or the names of the
/// low 32 bits set, joined by ` | `.
pub(crate) fn mount_flags(flags: u64) -> String {
    if flags == 0 {
        return "0x0".to_string();
    }
    let names: Vec<String> = (0..32)
        .filter(|bit| flags & (1 << bit) != 0)
        .map(|bit| match MOUNT_FLAGS[bit] {
            "" => format!("{:#x}", 1u64 << bit),
            name => name.to_string(),
        })
        .collect();
    names.join(" | ")
}

/// The result as libbpf-tools writes it: `0`, or `-ENAME`.
pub(crate) fn mount_result(ret: i32) -> String {
    if ret >= 0 {
        return ret.to_string();
    }
    match syscalls::Errno::new(-ret).name_and_description() {
        Some((name, _)) => format!("-{name}"),
        None => ret.to_string(),
    }
}

/// The call written as C, with its result.
pub(crate) fn call_text(e: &MountEvent) -> String {
    let (flags, ret) = (mount_flags(e.flags), mount_result(e.ret));
    match e.call {
        "mount" => format!(
            "mount(\"{}\", \"{}\", \"{}\", {flags}, \"{}\") = {ret}",
            e.src, e.dest, e.fs, e.data
        ),
        call => format!("{call}(\"{}\", {flags}) = {ret}", e.dest),
    }
}

/// mountsnoop's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MountLayout {
    /// -t: HH:MM:SS.
    pub(crate) timestamp: bool,
    /// -d: one field a line.
    pub(crate) detailed: bool,
}

impl SnoopFormat for MountLayout {
    type Event = MountEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        if self.detailed {
            return Ok(());
        }
        if self.timestamp {
            write!(w, "{:<8} ", "TIME")?;
        }
        writeln!(
            w,
            "{:<16} {:<7} {:<7} {:<11} CALL",
            "COMM", "PID", "TID", "MNT_NS"
        )
    }

    fn line<W: Write>(&self, w: &mut W, e: &MountEvent, clock: Clock) -> io::Result<()> {
        let indent = if self.timestamp { "    " } else { "" };
        if self.timestamp {
            write!(w, "{} ", hms(clock.hms))?;
        }
        if !self.detailed {
            return writeln!(
                w,
                "{:<16} {:<7} {:<7} {:<11} {}",
                e.comm,
                e.pid,
                e.tid,
                e.mnt_ns,
                call_text(e)
            );
        }
        if self.timestamp {
            writeln!(w)?;
        }
        let mut fields = vec![
            ("PID", e.pid.to_string()),
            ("TID", e.tid.to_string()),
            ("COMM", e.comm.clone()),
            ("OP", e.call.to_uppercase()),
            ("RET", mount_result(e.ret)),
            ("LAT", format!("{}us", e.delta_ns / 1000)),
            ("MNT_NS", e.mnt_ns.to_string()),
        ];
        if e.call == "mount" {
            fields.push(("FS", e.fs.clone()));
            fields.push(("SOURCE", e.src.clone()));
        }
        fields.push(("TARGET", e.dest.clone()));
        if e.call == "mount" {
            fields.push(("DATA", e.data.clone()));
        }
        fields.push(("FLAGS", mount_flags(e.flags)));
        for (name, value) in fields {
            writeln!(w, "{indent}{:<8}{value}", format!("{name}:"))?;
        }
        writeln!(w)
    }

    fn fields(&self, e: &MountEvent) -> Value {
        json!({
            "pid": e.pid, "tid": e.tid, "comm": e.comm, "mnt_ns": e.mnt_ns,
            "call": e.call, "ret": e.ret, "latency_us": e.delta_ns / 1000,
            "fs": e.fs, "source": e.src, "target": e.dest, "data": e.data,
            "flags": e.flags, "flag_names": mount_flags(e.flags),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_named_by_their_bits_in_linux_mount_h() {
        assert_eq!(mount_flags(0x1000), "MS_BIND");
        assert_eq!(mount_flags(0x2000), "MS_MOVE");
        assert_eq!(mount_flags(0x4000 | 0x40000), "MS_REC | MS_PRIVATE");
        assert_eq!(mount_flags(0x400 | 0x8000), "MS_NOATIME | MS_SILENT");
        assert_eq!(mount_flags(0x200), "0x200");
    }

    #[test]
    fn lines_in_libbpf_tools_layout() {
        let mount = MountEvent {
            pid: 7,
            tid: 7,
            mnt_ns: 4026531832,
            call: "mount",
            comm: "mount".into(),
            fs: "tmpfs".into(),
            src: "none".into(),
            dest: "/mnt".into(),
            flags: 0b110,
            ..MountEvent::default()
        };
        let umount = MountEvent {
            call: "umount",
            ret: -2,
            dest: "/nope".into(),
            delta_ns: 12_345,
            ..mount.clone()
        };
        let clock = Clock {
            hms: (1, 2, 3),
            secs: 0.25,
        };
        let mut out = Vec::new();
        let table = MountLayout::default();
        table.header(&mut out).unwrap();
        table.line(&mut out, &mount, clock).unwrap();
        table.line(&mut out, &umount, clock).unwrap();
        let detailed = MountLayout {
            timestamp: false,
            detailed: true,
        };
        detailed.line(&mut out, &umount, clock).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "COMM             PID     TID     MNT_NS      CALL\n\
             mount            7       7       4026531832  \
             mount(\"none\", \"/mnt\", \"tmpfs\", MS_NOSUID | MS_NODEV, \"\") = 0\n\
             mount            7       7       4026531832  umount(\"/nope\", MS_NOSUID | MS_NODEV) = -ENOENT\n\
             PID:    7\nTID:    7\nCOMM:   mount\nOP:     UMOUNT\nRET:    -ENOENT\nLAT:    12us\n\
             MNT_NS: 4026531832\nTARGET: /nope\nFLAGS:  MS_NOSUID | MS_NODEV\n\n"
        );
    }
}
