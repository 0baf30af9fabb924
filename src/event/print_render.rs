//! Rendering a tracepoint record with its print fmt, the way the kernel's
//! `trace` file and perf script (libtraceevent) print it: evaluate the
//! parsed expressions against the record's bytes and format them with C
//! printf semantics (`%d %u %x %ld %llu %s %c %p %pS %ps %pM %pI4 %*ph`...).
//!
//! Decisions (each matching libtraceevent, which perf script uses):
//! - An identifier the kernel left unexpanded (an enum constant such as
//!   `IOPRIO_CLASS_BE`, or `jiffies`) evaluates to 0 in arithmetic, and
//!   matches nothing as a `__print_symbolic`/`__print_flags` value, so the
//!   number prints in hex (`0x2`) rather than a guessed name — unless the
//!   [`Resolver`] knows the value (the running kernel's BTF, see
//!   `btf_enums`), and then it prints `be` as the kernel's `trace` does.
//! - Pointer arithmetic is not scaled (`(struct page *)vmemmap_base + pfn`
//!   is `pfn`): there is no struct layout to scale by.
//! - `%p` prints `0x…` (`(nil)` for 0); `%pS`/`%pF` print `symbol+0xoff`,
//!   `%ps`/`%pf` `symbol`, through a [`Resolver`], and `0x…` when nothing
//!   resolves (`0x0` for 0).
//! - `%s` of a pointer-sized scalar looks the address up in printk_formats
//!   (strings the kernel prints by address), else prints it in hex.
//! - Anything this module does not know (a helper, a conversion, a field
//!   missing from the record) is an `Err`: the caller then prints the
//!   `field=value` pairs instead, never an error.
//!
//! Invariants: never panics on any record bytes or any parsed print fmt;
//! arithmetic wraps like C's on 64 bits, division by zero is an `Err`.

use std::borrow::Cow;

use super::format::{Endian, EventFormat, c_string};
use super::print_eval::{Val, eval};
use super::print_fmt::PrintFmt;
use super::printf::{Spec, format_int, format_str, read_count, take_pointer_ext};

/// Looks up what a record refers to by address.
pub(crate) trait Resolver {
    /// The kernel symbol containing `addr`: its name and start address.
    fn kernel_symbol(&self, addr: u64) -> Option<(&str, u64)>;
    /// The string the kernel keeps at `addr` (tracefs `printk_formats`).
    fn printk_string(&self, addr: u64) -> Option<&str>;
    /// The value of an enum constant the print fmt names (`IOPRIO_CLASS_BE`).
    fn enum_value(&self, _name: &str) -> Option<u64> {
        None
    }
}

/// A resolver that knows nothing (addresses print in hex).
#[derive(Clone, Copy, Debug, Default)]
#[cfg(test)]
pub(crate) struct NoResolver;

#[cfg(test)]
impl Resolver for NoResolver {
    fn kernel_symbol(&self, _addr: u64) -> Option<(&str, u64)> {
        None
    }
    fn printk_string(&self, _addr: u64) -> Option<&str> {
        None
    }
}

/// What one record is rendered against.
#[derive(Clone, Copy)]
pub(crate) struct RenderContext<'a> {
    pub(crate) format: &'a EventFormat,
    /// The whole record, starting at `common_type`.
    pub(crate) raw: &'a [u8],
    pub(crate) endian: Endian,
    pub(crate) resolver: &'a dyn Resolver,
}

/// Why a record does not render with its print fmt (the caller then
/// prints its `field=value` pairs).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RenderError {
    #[error("too few arguments")]
    TooFewArguments,
    #[error("the format ends inside a conversion")]
    TruncatedConversion,
    #[error("unsupported conversion '%{0}'")]
    Conversion(char),
    #[error("unsupported pointer format %p{0}")]
    PointerFormat(String),
    #[error("{what} needs {need}")]
    Needs { what: String, need: &'static str },
    #[error("no field '{0}'")]
    NoField(String),
    #[error("field '{0}' lies outside the record")]
    OutsideRecord(String),
    #[error("{0} is not supported")]
    Unsupported(&'static str),
    #[error("division by zero")]
    DivisionByZero,
    #[error("index out of range")]
    IndexOutOfRange,
    #[error("unknown helper {0}()")]
    UnknownHelper(String),
}

pub(super) fn needs(what: impl Into<String>, need: &'static str) -> RenderError {
    RenderError::Needs {
        what: what.into(),
        need,
    }
}

pub(super) type Res<T> = Result<T, RenderError>;

/// Renders `fmt` for the record in `ctx` into `out`. On `Err`, `out` may
/// hold a partial line: render into a scratch string.
pub(crate) fn render_print_fmt(
    fmt: &PrintFmt,
    ctx: &RenderContext<'_>,
    out: &mut String,
) -> Res<()> {
    let mut args = fmt.args.iter();
    let mut next_arg = || args.next().ok_or(RenderError::TooFewArguments);
    let bytes = fmt.format.as_bytes();
    let mut i = 0;
    let mut literal_start = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        out.push_str(&fmt.format[literal_start..i]);
        i += 1;
        if bytes.get(i) == Some(&b'%') {
            out.push('%');
            i += 1;
            literal_start = i;
            continue;
        }
        let mut spec = Spec::read_flags(bytes, &mut i);
        spec.width = read_count(bytes, &mut i, &mut || {
            let (v, _) = eval(next_arg()?, ctx)?.as_int()?;
            Ok(v as i64 as i32)
        })?;
        if spec.width.is_some_and(|w| w < 0) {
            spec.left = true;
            spec.width = spec.width.map(|w| w.unsigned_abs() as i32);
        }
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            spec.precision = Some(
                read_count(bytes, &mut i, &mut || {
                    let (v, _) = eval(next_arg()?, ctx)?.as_int()?;
                    Ok(v as i64 as i32)
                })?
                .unwrap_or(0)
                .max(0),
            );
        }
        let mut long = 0i8;
        while let Some(&c) = bytes.get(i) {
            match c {
                b'h' => long -= 1,
                b'l' | b'L' | b'q' | b'j' | b'z' | b'Z' | b't' => {
                    long = if matches!(c, b'l') { long + 1 } else { 2 };
                }
                _ => break,
            }
            i += 1;
        }
        let conv = *bytes.get(i).ok_or(RenderError::TruncatedConversion)?;
        i += 1;
        let arg = eval(next_arg()?, ctx)?;
        match conv {
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' => {
                let (v, _) = arg.as_int()?;
                format_int(out, &spec, conv, long, v);
            }
            b's' => {
                let text = string_of(&arg, ctx)?;
                format_str(out, &spec, &text);
            }
            b'p' => {
                let ext = take_pointer_ext(bytes, &mut i);
                let text = format_pointer(&ext, &arg, &spec, ctx)?;
                format_str(
                    out,
                    &Spec {
                        precision: None,
                        ..spec
                    },
                    &text,
                );
            }
            other => return Err(RenderError::Conversion(other as char)),
        }
        literal_start = i;
    }
    out.push_str(&fmt.format[literal_start.min(fmt.format.len())..]);
    Ok(())
}

fn string_of<'a>(arg: &'a Val<'a>, ctx: &RenderContext<'a>) -> Res<Cow<'a, str>> {
    Ok(match arg {
        Val::Str(s) => Cow::Borrowed(s.as_ref()),
        Val::Bytes { bytes, .. } => Cow::Owned(c_string(bytes)),
        Val::Int {
            v, pointer_field, ..
        } => match ctx.resolver.printk_string(*v) {
            Some(s) if *pointer_field => Cow::Owned(s.to_string()),
            _ => Cow::Owned(format!("{v:x}")),
        },
    })
}

fn hex_addr(v: u64) -> String {
    if v == 0 {
        "(nil)".to_string()
    } else {
        format!("0x{v:x}")
    }
}

fn format_pointer(ext: &str, arg: &Val<'_>, spec: &Spec, ctx: &RenderContext<'_>) -> Res<String> {
    let bytes = |arg: &Val<'_>| -> Res<Vec<u8>> {
        match arg {
            Val::Bytes { bytes, .. } => Ok(bytes.to_vec()),
            _ => Err(needs(format!("%p{ext}"), "an array argument")),
        }
    };
    let first = ext.chars().next();
    Ok(match first {
        None | Some('x' | 'K' | 'X') => match arg {
            Val::Int { v, .. } => hex_addr(*v),
            _ => return Err(needs("%p", "a scalar argument")),
        },
        Some('S' | 's' | 'F' | 'f' | 'B') => {
            let (v, _) = arg.as_int()?;
            match ctx.resolver.kernel_symbol(v) {
                Some((name, start)) if matches!(first, Some('S' | 'F' | 'B')) => {
                    format!("{name}+0x{:x}", v.wrapping_sub(start))
                }
                Some((name, _)) => name.to_string(),
                None => format!("0x{v:x}"),
            }
        }
        Some('M' | 'm') => {
            let b = bytes(arg)?;
            let b = b.get(..6).ok_or_else(|| needs("%pM", "6 bytes"))?;
            let sep = if first == Some('M') { ":" } else { "" };
            b.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(sep)
        }
        Some('I' | 'i') if ext.contains('4') => {
            let b = bytes(arg)?;
            let b = b.get(..4).ok_or_else(|| needs("%pI4", "4 bytes"))?;
            if first == Some('i') {
                format!("{:03}.{:03}.{:03}.{:03}", b[0], b[1], b[2], b[3])
            } else {
                format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
            }
        }
        Some('I' | 'i') if ext.contains('6') => {
            let b = bytes(arg)?;
            let b: [u8; 16] = b
                .get(..16)
                .and_then(|s| s.try_into().ok())
                .ok_or_else(|| needs("%pI6", "16 bytes"))?;
            let addr = std::net::Ipv6Addr::from(b);
            if ext.contains('c') {
                addr.to_string()
            } else {
                addr.segments()
                    .iter()
                    .map(|s| format!("{s:04x}"))
                    .collect::<Vec<_>>()
                    .join(if first == Some('i') { "" } else { ":" })
            }
        }
        Some('h') => {
            let b = bytes(arg)?;
            let n = spec.width.map_or(1, |w| w.max(0) as usize).min(b.len());
            let sep = match ext.chars().nth(1) {
                Some('N') => "",
                Some('C') => ":",
                Some('D') => "-",
                _ => " ",
            };
            return Ok(b[..n]
                .iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(sep));
        }
        Some('U') => {
            let b = bytes(arg)?;
            let b = b.get(..16).ok_or_else(|| needs("%pU", "16 bytes"))?;
            let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
            format!(
                "{}-{}-{}-{}-{}",
                h[..4].concat(),
                h[4..6].concat(),
                h[6..8].concat(),
                h[8..10].concat(),
                h[10..].concat()
            )
        }
        Some(other) => return Err(RenderError::PointerFormat(other.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::format::parse_format;

    fn render(fields: &str, fmt: &str, raw: &[u8]) -> String {
        let text = format!(
            "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n{fields}\nprint fmt: {fmt}\n"
        );
        let format = parse_format("test", &text).expect("format");
        let parsed = format.print_fmt.clone().expect("print fmt");
        let ctx = RenderContext {
            format: &format,
            raw,
            endian: Endian::Little,
            resolver: &NoResolver,
        };
        let mut out = String::new();
        match render_print_fmt(&parsed, &ctx, &mut out) {
            Ok(()) => out,
            Err(e) => format!("ERR {e}"),
        }
    }

    const F: &str = "\tfield:int a;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:unsigned long b;\toffset:8;\tsize:8;\tsigned:0;\n";

    fn raw(a: i32, b: u64) -> Vec<u8> {
        let mut r = vec![0u8; 16];
        r[4..8].copy_from_slice(&a.to_le_bytes());
        r[8..16].copy_from_slice(&b.to_le_bytes());
        r
    }

    #[test]
    fn printf_conversions() {
        let r = raw(-7, 0xff);
        assert_eq!(
            render(
                F,
                r#""%d|%5d|%-5d|%05d|%u", REC->a, REC->a, REC->a, REC->a, REC->a"#,
                &r
            ),
            "-7|   -7|-7   |-0007|4294967289"
        );
        assert_eq!(
            render(
                F,
                r#""%x %#x %08lx %lu %ld %c %%", REC->b, REC->b, REC->b, REC->b, REC->a, 65"#,
                &r
            ),
            "ff 0xff 000000ff 255 -7 A %"
        );
        assert_eq!(
            render(
                F,
                r#""%03d %hhx %s|%-4s|%.2s", 5, 0x1ff, "x", "y", "abc""#,
                &r
            ),
            "005 ff x|y   |ab"
        );
        assert_eq!(render(F, r#""%p %p", REC->b, 0"#, &r), "0xff (nil)");
    }

    /// Issue 10: `%*d` with a width of 2^31-1 from the record wrote 2.1 GB.
    #[test]
    fn widths_from_the_record_are_bounded() {
        use crate::event::printf::MAX_FIELD_WIDTH;
        let max = MAX_FIELD_WIDTH as usize;
        for (a, fmt) in [
            (i32::MAX, r#""%*d|", REC->a, 5"#),
            (i32::MIN, r#""%*d|", REC->a, 5"#),
            (i32::MAX, r#""%.*d|", REC->a, 5"#),
            (i32::MAX, r#""%-*s|", REC->a, "x""#),
            (0, r#""%2147483647d|%.2147483647d|", 5, 5"#),
        ] {
            let out = render(F, fmt, &raw(a, 0));
            assert!(
                out.len() <= 2 * max + 2 && out.len() > max,
                "{fmt} with {a}: {} bytes",
                out.len()
            );
        }
        assert_eq!(render(F, r#""%*d|", REC->a, 5"#, &raw(-3, 0)), "5  |");
    }

    #[test]
    fn expressions_and_helpers() {
        let r = raw(2, 0x5);
        assert_eq!(
            render(
                F,
                r#""%s", __print_flags(REC->b, "|", {1, "A"}, {4, "C"}, {2, "B"})"#,
                &r
            ),
            "A|C"
        );
        assert_eq!(
            render(F, r#""%s", __print_flags(REC->b | 8, "|", {1, "A"})"#, &r),
            "A|0xc"
        );
        assert_eq!(
            render(
                F,
                r#""%s", __print_flags(0, "|", {0, "NONE"}, {1, "A"})"#,
                &r
            ),
            ""
        );
        // Unexpanded enum names match nothing; libtraceevent's known ones do.
        assert_eq!(
            render(
                F,
                r#""%s %s", __print_symbolic(0, {MODE_ABS, "ABS"}), __print_symbolic(REC->a, {0, "x"}, {NET_TX_SOFTIRQ, "NET_TX"})"#,
                &r
            ),
            "0x0 NET_TX"
        );
        assert_eq!(
            render(
                F,
                r#""%s", __print_flags(3, "|", {1, "A"}, {0, ((void *)0)}, {2, "B"})"#,
                &r
            ),
            "A|0x2"
        );
        assert_eq!(
            render(
                F,
                r#""%s %s", __print_symbolic(REC->a, {1, "one"}, {2, "two"}), __print_symbolic(9, {1, "one"})"#,
                &r
            ),
            "two 0x9"
        );
        assert_eq!(
            render(F, r#""%s", REC->a > 1 ? "big" : "small""#, &r),
            "big"
        );
        assert_eq!(
            render(
                F,
                r#""%d %d %d", (unsigned char)-1, (REC->b >> 1) & 1, UNKNOWN_ENUM"#,
                &r
            ),
            "255 0 0"
        );
        assert_eq!(render(F, r#""%d", REC->a / 0"#, &r), "ERR division by zero");
        assert_eq!(
            render(F, r#""%d", __nope(1)"#, &r),
            "ERR unknown helper __nope()"
        );
        assert_eq!(render(F, r#""%d %d""#, &r), "ERR too few arguments");
        assert_eq!(render(F, r#""%d", REC->zz"#, &r), "ERR no field 'zz'");
    }

    #[test]
    fn arrays_strings_and_hex() {
        let fields = "\tfield:char comm[8];\toffset:2;\tsize:8;\tsigned:0;\n\tfield:__data_loc u8[] buf;\toffset:10;\tsize:4;\tsigned:0;\n\tfield:unsigned int args[2];\toffset:14;\tsize:8;\tsigned:0;\n";
        let mut r = vec![0u8; 32];
        r[2..6].copy_from_slice(b"bash");
        r[10..14].copy_from_slice(&(24u32 | 4 << 16).to_le_bytes());
        r[14..18].copy_from_slice(&7u32.to_le_bytes());
        r[18..22].copy_from_slice(&9u32.to_le_bytes());
        r[24..28].copy_from_slice(&[0xde, 0xad, 0x00, 0x01]);
        assert_eq!(
            render(
                fields,
                r#""%s %d,%d", REC->comm, REC->args[0], REC->args[1]"#,
                &r
            ),
            "bash 7,9"
        );
        assert_eq!(
            render(
                fields,
                r#""%s|%s", __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), __print_hex_str(__get_dynamic_array(buf), 2)"#,
                &r
            ),
            "de ad 00 01|dead"
        );
        assert_eq!(
            render(
                fields,
                r#""%s %pI4", __print_array(__get_dynamic_array(buf), 2, 2), __get_dynamic_array(buf)"#,
                &r
            ),
            "{0xadde,0x100} 222.173.0.1"
        );
        assert_eq!(
            render(fields, r#""%*phD", 3, __get_dynamic_array(buf)"#, &r),
            "de-ad-00"
        );
        assert_eq!(
            render(fields, r#""%d", REC->args[5]"#, &r),
            "ERR index out of range"
        );
    }
}
