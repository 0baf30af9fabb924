//! `FormatCache`: the tracepoint formats a consumer renders records with,
//! loaded from a perf.data's TRACING_DATA or lazily from the running
//! kernel's tracefs, and the one call that turns a tracepoint's raw bytes
//! into the text perf script prints after `sched:sched_switch: `.
//!
//! Decisions:
//! - Records are matched to formats by `common_type` (the first two bytes
//!   of every record, equal to the tracepoint id and to the event's
//!   `perf_event_attr.config`), so callers need not pass ids around.
//! - From tracefs, formats load on first use: an id → directory index is
//!   built once (one small read per event), then each format is read when
//!   a record first needs it. Interior mutability keeps `render(&self)`.
//! - Rendering never fails: no format → `[unknown tracepoint id N]`; a
//!   print fmt that does not parse or evaluate → `field=value` pairs.
//! - Kernel symbols for `%pS`/`%ps` come from the caller as a
//!   [`KernelSymbols`] (this stage does not know where symbols live; the
//!   symbol stage implements it for kallsyms). Attached once with
//!   `with_kernel_symbols`, they serve every `render`; without them the
//!   addresses print in hex.
//!
//! Invariant: nothing here panics on record bytes; `render` only appends.

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::format::{Endian, EventFormat, FormatError, load_format, write_field_pairs};
use super::print_render::{RenderContext, Resolver, render_print_fmt};
use super::tracing_data_parse::{TracingData, parse_tracing_data};

/// Kernel symbols for `%pS`/`%ps`: address → (name, start address), as
/// perf script resolves them (`func+0xoff`; nothing for user addresses).
pub trait KernelSymbols {
    /// The kernel function holding `addr`: its name and start address,
    /// `None` when no kernel symbol covers it.
    fn lookup(&self, addr: u64) -> Option<(&str, u64)>;
}

/// The symbols a cache renders with (none by default).
#[derive(Default)]
struct AttachedSymbols(Option<Box<dyn KernelSymbols>>);

impl std::fmt::Debug for AttachedSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "KernelSymbols"
        } else {
            "None"
        })
    }
}

/// No kernel symbols: `%pS` prints the address.
impl KernelSymbols for () {
    fn lookup(&self, _addr: u64) -> Option<(&str, u64)> {
        None
    }
}

/// Event formats by id, and what rendering them needs.
#[derive(Debug, Default)]
pub struct FormatCache {
    formats: RefCell<HashMap<u64, Rc<EventFormat>>>,
    endian: Endian,
    printk_formats: HashMap<u64, String>,
    /// The tracefs to load from lazily, with its id → (system, name) index.
    tracefs: Option<PathBuf>,
    tracefs_ids: OnceCell<HashMap<u64, (String, String)>>,
    /// Enum constants by name (the running kernel's BTF, for tracefs
    /// caches), loaded on first use.
    enums: OnceCell<HashMap<String, u64>>,
    load_kernel_enums: bool,
    /// For `%pS`/`%ps` in `render`.
    kernel_symbols: AttachedSymbols,
}

struct Both<'a> {
    printk: &'a HashMap<u64, String>,
    symbols: &'a dyn KernelSymbols,
    enums: Option<&'a HashMap<String, u64>>,
}

impl Resolver for Both<'_> {
    fn kernel_symbol(&self, addr: u64) -> Option<(&str, u64)> {
        self.symbols.lookup(addr)
    }
    fn printk_string(&self, addr: u64) -> Option<&str> {
        self.printk.get(&addr).map(String::as_str)
    }
    fn enum_value(&self, name: &str) -> Option<u64> {
        self.enums?.get(name).copied()
    }
}

impl FormatCache {
    /// Formats from a TRACING_DATA blob (perf.data's feature section).
    pub fn from_tracing_data(blob: &[u8]) -> Result<FormatCache, FormatError> {
        Ok(Self::from_parsed(parse_tracing_data(blob)?))
    }

    /// Formats from already parsed tracing data.
    pub(crate) fn from_parsed(data: TracingData) -> FormatCache {
        let formats = data
            .formats
            .into_iter()
            .map(|f| (f.id, Rc::new(f)))
            .collect();
        FormatCache {
            formats: RefCell::new(formats),
            endian: data.endian,
            printk_formats: data.printk_formats,
            tracefs: None,
            tracefs_ids: OnceCell::new(),
            enums: OnceCell::new(),
            load_kernel_enums: false,
            kernel_symbols: AttachedSymbols::default(),
        }
    }

    /// Formats of the running kernel, read from the tracefs at `root` as
    /// records need them (`root` from `sys::tracefs::root()`).
    pub fn from_tracefs(root: &Path) -> FormatCache {
        let printk = std::fs::read_to_string(root.join("printk_formats")).unwrap_or_default();
        FormatCache {
            formats: RefCell::default(),
            endian: Endian::host(),
            printk_formats: super::tracing_data_parse::parse_printk_formats(&printk),
            tracefs: Some(root.to_path_buf()),
            tracefs_ids: OnceCell::new(),
            enums: OnceCell::new(),
            load_kernel_enums: true,
            kernel_symbols: AttachedSymbols::default(),
        }
    }

    /// Resolves `%pS`/`%ps` (and `%pF`/`%pf`) in every `render` with
    /// `symbols` (e.g. the symbol stage's kallsyms).
    pub(crate) fn with_kernel_symbols(mut self, symbols: Box<dyn KernelSymbols>) -> FormatCache {
        self.kernel_symbols = AttachedSymbols(Some(symbols));
        self
    }

    /// The byte order of the records.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Adds (or replaces) a format.
    pub fn insert(&self, format: EventFormat) {
        self.formats.borrow_mut().insert(format.id, Rc::new(format));
    }

    /// Loads `system:name` from tracefs (an error for unknown events).
    pub(crate) fn load(&self, system: &str, name: &str) -> Result<Rc<EventFormat>, FormatError> {
        let root = self
            .tracefs
            .as_deref()
            .ok_or_else(|| FormatError::NoSuchEvent(format!("{system}:{name}")))?;
        let format = Rc::new(load_format(root, system, name)?);
        self.formats
            .borrow_mut()
            .insert(format.id, Rc::clone(&format));
        Ok(format)
    }

    /// The format of tracepoint `id`, loading it from tracefs if needed.
    pub fn get(&self, id: u64) -> Option<Rc<EventFormat>> {
        if let Some(f) = self.formats.borrow().get(&id) {
            return Some(Rc::clone(f));
        }
        let root = self.tracefs.as_deref()?;
        let (system, name) = self.tracefs_ids.get_or_init(|| index_ids(root)).get(&id)?;
        self.load(system, name).ok()
    }

    /// The tracepoint id of a record: its `common_type`.
    pub fn record_id(&self, raw: &[u8]) -> Option<u64> {
        self.endian.read_uint(raw, 0, 2)
    }

    /// Appends the text of one record (`raw` starts at `common_type`), as
    /// perf script prints it after the event name. `%pS` resolves with the
    /// attached kernel symbols, else prints the address.
    pub fn render(&self, raw: &[u8], out: &mut String) {
        match &self.kernel_symbols.0 {
            Some(symbols) => self.render_with_symbols(raw, symbols.as_ref(), out),
            None => self.render_with_symbols(raw, &(), out),
        }
    }

    /// As `render`, resolving `%pS`/`%ps` with `symbols`.
    pub fn render_with_symbols(&self, raw: &[u8], symbols: &dyn KernelSymbols, out: &mut String) {
        let Some(id) = self.record_id(raw) else {
            let _ = write!(out, "[truncated tracepoint record: {} bytes]", raw.len());
            return;
        };
        let Some(format) = self.get(id) else {
            let _ = write!(out, "[unknown tracepoint id {id}: {} bytes]", raw.len());
            return;
        };
        let enums = self
            .load_kernel_enums
            .then(|| self.enums.get_or_init(super::btf_enums::load_vmlinux));
        let resolver = Both {
            printk: &self.printk_formats,
            symbols,
            enums,
        };
        render_format(&format, raw, self.endian, &resolver, out);
    }
}

/// Renders one record with a known format (print fmt, else field pairs).
pub(crate) fn render_format(
    format: &EventFormat,
    raw: &[u8],
    endian: Endian,
    resolver: &dyn Resolver,
    out: &mut String,
) {
    if let Ok(print_fmt) = &format.print_fmt {
        let ctx = RenderContext {
            format,
            raw,
            endian,
            resolver,
        };
        let mut text = String::new();
        if render_print_fmt(print_fmt, &ctx, &mut text).is_ok() {
            out.push_str(&text);
            return;
        }
    }
    write_field_pairs(format, raw, endian, out);
}

/// id → (system, name) for every event under `root/events`.
fn index_ids(root: &Path) -> HashMap<u64, (String, String)> {
    let mut ids = HashMap::new();
    let Ok(systems) = std::fs::read_dir(root.join("events")) else {
        return ids;
    };
    for system in systems.flatten() {
        let Ok(events) = std::fs::read_dir(system.path()) else {
            continue;
        };
        let sys_name = system.file_name().to_string_lossy().into_owned();
        for event in events.flatten() {
            let Ok(text) = std::fs::read_to_string(event.path().join("id")) else {
                continue;
            };
            if let Ok(id) = text.trim().parse::<u64>() {
                let name = event.file_name().to_string_lossy().into_owned();
                ids.insert(id, (sys_name.clone(), name));
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::format::parse_format;

    struct Syms;
    impl KernelSymbols for Syms {
        fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
            (0x1000..0x1100)
                .contains(&addr)
                .then_some(("do_thing", 0x1000))
        }
    }

    #[test]
    fn renders_by_common_type_with_fallbacks() {
        let cache = FormatCache::default();
        let fields = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n";
        cache.insert(
            parse_format("t", &format!("name: ok\nID: 5\nformat:\n{fields}\nprint fmt: \"%pS %ps\", (void *)REC->ip, REC->ip\n")).expect("fmt"),
        );
        cache.insert(
            parse_format(
                "t",
                &format!(
                    "name: odd\nID: 6\nformat:\n{fields}\nprint fmt: \"%d\", __weird(REC->ip)\n"
                ),
            )
            .expect("fmt"),
        );
        let mut raw = vec![0u8; 16];
        raw[0] = 5;
        raw[8..16].copy_from_slice(&0x1010u64.to_le_bytes());
        let mut out = String::new();
        cache.render_with_symbols(&raw, &Syms, &mut out);
        assert_eq!(out, "do_thing+0x10 do_thing");
        out.clear();
        cache.render(&raw, &mut out);
        assert_eq!(out, "0x1010 0x1010");
        let cache = cache.with_kernel_symbols(Box::new(Syms));
        out.clear();
        cache.render(&raw, &mut out);
        assert_eq!(out, "do_thing+0x10 do_thing");
        raw[0] = 6;
        out.clear();
        cache.render(&raw, &mut out);
        assert_eq!(out, "ip=0x1010");
        raw[0] = 9;
        out.clear();
        cache.render(&raw, &mut out);
        assert_eq!(out, "[unknown tracepoint id 9: 16 bytes]");
        out.clear();
        cache.render(&raw[..1], &mut out);
        assert_eq!(out, "[truncated tracepoint record: 1 bytes]");
    }
}
