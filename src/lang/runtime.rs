//! What a running program holds (its maps, the names of its stacks and
//! probes) and what it does with each record of its event ring: printf
//! lines, `print`/`clear`/`zero` of maps, `time`, `join`, `cat`; values
//! such as `ksym`, `ntop`, `strftime` turned into text as bpftrace prints
//! them.
//!
//! The records are read after the ring is consumed (`run` queues them),
//! so one printing a map reads the map as it is then, not as it was when
//! the probe fired: bpftrace does the same.

use std::io::{self, Write};

use super::calls::{JOIN_ARGS, JOIN_ARGSIZE, JOIN_HEADER};
use super::codegen::{Registry, event_kind};
use super::output::{Entry, Resolve, c_str, print_map};
use super::printf::{Arg, format};
use super::stacks::StackNames;
use super::types::Ty;
use crate::sys::bpf_raw::Map;

/// What the run holds while it runs.
pub(crate) struct Runtime<'a> {
    pub(crate) reg: Registry,
    pub(crate) maps: Vec<Map>,
    pub(crate) per_cpu: Vec<bool>,
    pub(crate) stacks: StackNames<'a>,
    /// The wall-clock time of the boot (ns), for `strftime()`.
    pub(crate) boot_ns: u64,
    /// /etc/passwd's names by uid, read at the first `username` printed.
    pub(crate) users: std::cell::OnceCell<std::collections::HashMap<u64, String>>,
}

impl Resolve for Runtime<'_> {
    fn text(&self, ty: Ty, bytes: &[u8]) -> String {
        let word = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_le_bytes);
        match ty {
            Ty::Probe => self
                .reg
                .probe_names
                .get(word as usize)
                .cloned()
                .unwrap_or_default(),
            Ty::Kstack => self.stacks.kernel(word),
            Ty::Ksym => self.stacks.ksym(word),
            Ty::Usym => {
                let pid = bytes
                    .get(8..12)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u32::from_le_bytes);
                StackNames::usym(word, pid)
            }
            Ty::Ustack => {
                let pid = bytes
                    .get(8..12)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u32::from_le_bytes);
                self.stacks.user(word, pid)
            }
            Ty::Inet => inet_text(bytes),
            // bpftrace's resolve_mac_address: upper-case hex.
            Ty::MacAddr => bytes
                .iter()
                .take(6)
                .map(|b| format!("{b:02X}"))
                .collect::<Vec<_>>()
                .join(":"),
            Ty::Username => self
                .users
                .get_or_init(user_names)
                .get(&word)
                .cloned()
                .unwrap_or_default(),
            Ty::Tuple { id, .. } => {
                let tys = self
                    .reg
                    .tuples
                    .get(id as usize)
                    .map_or(&[][..], |t| t.as_slice());
                let mut at = 0;
                let mut parts = Vec::new();
                for ty in tys {
                    let part = bytes.get(at..at + ty.size()).unwrap_or(&[]);
                    parts.push(crate::lang::output::value_text(*ty, part, self));
                    at += ty.size();
                }
                format!("({})", parts.join(", "))
            }
            Ty::Buf(n) => {
                let len = (word as usize).min(n);
                hex_escaped(bytes.get(8..8 + len).unwrap_or(&[]))
            }
            Ty::Strftime(id) => {
                let fmt = self
                    .reg
                    .time_formats
                    .get(id as usize)
                    .map_or("", |f| f.as_str());
                strftime_since_boot(fmt, self.boot_ns, word)
            }
            _ => String::new(),
        }
    }
}

/// `cat(path)`: the first `CAT_BYTES` of the file as they are (bpftrace's
/// `cat_file`); a file that cannot be read is said on stderr, as
/// bpftrace says it.
fn cat(path: &str, out: &mut impl Write) -> io::Result<()> {
    const CAT_BYTES: u64 = 10240;
    let mut text = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|f| io::Read::read_to_end(&mut io::Read::take(f, CAT_BYTES), &mut text));
    if let Err(e) = read {
        let why = e.to_string();
        let why = why.split(" (os error").next().unwrap_or(&why);
        eprintln!("ERROR: failed to open file '{path}': {why}");
        return Ok(());
    }
    out.write_all(&text)
}

/// A `buf()`'s bytes as bpftrace prints them: printable ASCII as it is,
/// every other byte as `\xNN`.
fn hex_escaped(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        if (32..=126).contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The users' names in /etc/passwd by uid (a uid without one prints
/// empty, as bpftrace's `username`); the first line of a uid wins.
fn user_names() -> std::collections::HashMap<u64, String> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let mut names = std::collections::HashMap::new();
    for line in passwd.lines() {
        let mut fields = line.split(':');
        if let (Some(name), Some(_), Some(uid)) = (fields.next(), fields.next(), fields.next())
            && let Ok(uid) = uid.parse::<u64>()
        {
            names.entry(uid).or_insert_with(|| name.to_string());
        }
    }
    names
}

/// `strftime(fmt, nsecs)`: `nsecs` since boot as local time, with
/// bpftrace's `%f` (microseconds, 6 digits).
fn strftime_since_boot(fmt: &str, boot_ns: u64, nsecs: u64) -> String {
    let at = boot_ns.saturating_add(nsecs);
    let fmt = fmt.replace("%f", &format!("{:06}", at % 1_000_000_000 / 1000));
    crate::sys::localtime::strftime_at(&fmt, at / 1_000_000_000)
}

/// An `ntop()` value as `inet_ntop` writes it (IPv4-mapped IPv6 addresses
/// as `::ffff:a.b.c.d`, the longest zero run as `::`).
fn inet_text(bytes: &[u8]) -> String {
    let family = bytes.first().copied().unwrap_or(0);
    let addr = bytes.get(8..24).unwrap_or(&[]);
    if i32::from(family) == 10
        && let Ok(v6) = <[u8; 16]>::try_from(addr)
    {
        return std::net::Ipv6Addr::from(v6).to_string();
    }
    match addr.get(..4).and_then(|a| <[u8; 4]>::try_from(a).ok()) {
        Some(v4) => std::net::Ipv4Addr::from(v4).to_string(),
        None => String::new(),
    }
}

impl Runtime<'_> {
    fn entries(&self, map: usize) -> Vec<Entry> {
        let m = &self.maps[map];
        m.keys()
            .into_iter()
            .filter_map(|key| {
                let values = m.lookup(&key, self.per_cpu[map]).ok()??;
                Some(Entry { key, values })
            })
            .collect()
    }

    /// Map `map` as bpftrace prints it; `top` > 0 keeps the last (largest)
    /// `top` elements.
    pub(crate) fn print(&self, map: usize, top: usize, out: &mut impl Write) -> io::Result<()> {
        let text = print_map(&self.reg.maps[map], &self.entries(map), top, self);
        out.write_all(text.as_bytes())
    }

    fn clear(&self, map: usize, zero: bool) {
        let m = &self.maps[map];
        let size = self.reg.maps[map].kind.value_size();
        for key in m.keys() {
            let _ = if zero {
                m.set_all(&key, &vec![0; size], self.per_cpu[map])
            } else {
                m.delete(&key)
            };
        }
    }

    /// Handles one event; true when it asks to exit.
    pub(crate) fn event(&self, data: &[u8], out: &mut impl Write) -> io::Result<bool> {
        let word = |at: usize| {
            data.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_le_bytes)
        };
        let index = word(8) as usize;
        match word(0) {
            event_kind::PRINTF => {
                let Some(spec) = self.reg.printfs.get(index) else {
                    return Ok(false);
                };
                let mut at = 16;
                let mut args = Vec::new();
                for ty in &spec.args {
                    let bytes = data.get(at..at + ty.size()).unwrap_or(&[]);
                    args.push(match ty {
                        Ty::Int | Ty::Uint | Ty::Ptr(_) => Arg::Int(word(at) as i64),
                        Ty::Str(_) => Arg::Str(c_str(bytes)),
                        _ => Arg::Str(self.text(*ty, bytes)),
                    });
                    at += ty.size();
                }
                let text = format(&spec.format, &args);
                if spec.cat {
                    cat(&text, out)?;
                } else {
                    out.write_all(text.as_bytes())?;
                }
            }
            event_kind::EXIT => return Ok(true),
            event_kind::JOIN => {
                let delim = self.reg.join_delims.get(index).map_or(" ", |d| d.as_str());
                let count = (word(16) as usize).min(JOIN_ARGS);
                // bpftrace's join ends at the first empty string too.
                let parts: Vec<String> = (0..count)
                    .map(|i| {
                        let at = JOIN_HEADER + i * JOIN_ARGSIZE;
                        c_str(data.get(at..at + JOIN_ARGSIZE).unwrap_or(&[]))
                    })
                    .take_while(|s| !s.is_empty())
                    .collect();
                writeln!(out, "{}", parts.join(delim))?;
            }
            event_kind::PRINT if index & 0xffff_ffff < self.maps.len() => {
                self.print(index & 0xffff_ffff, index >> 32, out)?
            }
            event_kind::CLEAR if index < self.maps.len() => self.clear(index, false),
            event_kind::ZERO if index < self.maps.len() => self.clear(index, true),
            event_kind::TIME => {
                let fmt = self.reg.time_formats.get(index).map_or("", |f| f.as_str());
                out.write_all(crate::sys::localtime::strftime_now(fmt).as_bytes())?;
            }
            _ => {}
        }
        Ok(false)
    }
}

/// The records lost so far, summed over the CPUs.
pub(crate) fn lost_count(lost: &Map) -> u64 {
    lost.lookup(&0u32.to_le_bytes(), true)
        .ok()
        .flatten()
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()))
        .map(u64::from_le_bytes)
        .sum()
}
