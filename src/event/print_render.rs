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
use std::fmt::Write as _;

use super::format::{Endian, EventFormat, FieldValue, c_string, sign_extend};
use super::print_fmt::{BinaryOp, CType, Expr, PrintFmt, UnaryOp};
use super::printf::{Spec, format_int, format_str, read_count, take_pointer_ext};

/// Looks up what a record refers to by address.
pub trait Resolver {
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
pub struct NoResolver;

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
pub struct RenderContext<'a> {
    pub format: &'a EventFormat,
    /// The whole record, starting at `common_type`.
    pub raw: &'a [u8],
    pub endian: Endian,
    pub resolver: &'a dyn Resolver,
}

#[derive(Clone, Debug)]
enum Val<'a> {
    Int {
        v: u64,
        signed: bool,
        /// Pointer-sized scalar field (for `%s` through printk_formats).
        pointer_field: bool,
    },
    Bytes {
        bytes: Cow<'a, [u8]>,
        elem: usize,
        signed: bool,
    },
    Str(Cow<'a, str>),
}

fn int(v: u64, signed: bool) -> Val<'static> {
    Val::Int {
        v,
        signed,
        pointer_field: false,
    }
}

type Res<T> = Result<T, String>;

impl Val<'_> {
    fn as_int(&self) -> Res<(u64, bool)> {
        match self {
            Val::Int { v, signed, .. } => Ok((*v, *signed)),
            _ => Err("a string where a number is needed".to_string()),
        }
    }
}

/// Renders `fmt` for the record in `ctx` into `out`. On `Err`, `out` may
/// hold a partial line: render into a scratch string.
pub fn render_print_fmt(fmt: &PrintFmt, ctx: &RenderContext<'_>, out: &mut String) -> Res<()> {
    let mut args = fmt.args.iter();
    let mut next_arg = || args.next().ok_or_else(|| "too few arguments".to_string());
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
        let mut spec = Spec::default();
        while let Some(&c) = bytes.get(i) {
            match c {
                b'-' => spec.left = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                _ => break,
            }
            i += 1;
        }
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
        let conv = *bytes.get(i).ok_or("format ends inside a conversion")?;
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
            other => return Err(format!("unsupported conversion '%{}'", other as char)),
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
            _ => Err(format!("%p{ext} needs an array argument")),
        }
    };
    let first = ext.chars().next();
    Ok(match first {
        None | Some('x' | 'K' | 'X') => match arg {
            Val::Int { v, .. } => hex_addr(*v),
            _ => return Err("%p of a non-scalar".to_string()),
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
            let b = b.get(..6).ok_or("%pM needs 6 bytes")?;
            let sep = if first == Some('M') { ":" } else { "" };
            b.iter()
                .map(|x| format!("{x:02x}"))
                .collect::<Vec<_>>()
                .join(sep)
        }
        Some('I' | 'i') if ext.contains('4') => {
            let b = bytes(arg)?;
            let b = b.get(..4).ok_or("%pI4 needs 4 bytes")?;
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
                .ok_or("%pI6 needs 16 bytes")?;
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
            let b = b.get(..16).ok_or("%pU needs 16 bytes")?;
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
        Some(other) => return Err(format!("unsupported pointer format %p{other}")),
    })
}

fn eval_ctype(v: u64, ty: &CType) -> Val<'static> {
    let size = if ty.pointer { 8 } else { ty.size };
    let v = match size {
        1 | 2 | 4 => {
            let masked = v & ((1u64 << (size * 8)) - 1);
            if ty.signed {
                sign_extend(masked, size)
            } else {
                masked
            }
        }
        _ => v,
    };
    // `bool`: any non-zero value is 1.
    let v = if ty.name == "bool" || ty.name == "_Bool" {
        u64::from(v != 0)
    } else {
        v
    };
    int(v, ty.signed)
}

fn eval<'a>(expr: &Expr, ctx: &RenderContext<'a>) -> Res<Val<'a>> {
    Ok(match expr {
        Expr::Num(n) => int(*n, true),
        Expr::Str(s) => Val::Str(Cow::Owned(s.clone())),
        Expr::Ident(name) => match name.as_str() {
            "true" => int(1, true),
            // false, NULL, and names the kernel left: their value when the
            // resolver knows it, else 0 (as libtraceevent).
            _ => int(ctx.resolver.enum_value(name).unwrap_or(0), true),
        },
        Expr::Field(name) => {
            let field = ctx
                .format
                .field(name)
                .ok_or_else(|| format!("no field '{name}'"))?;
            match field.value(ctx.raw, ctx.endian) {
                Some(FieldValue::Int { value, signed }) => Val::Int {
                    v: value,
                    signed,
                    pointer_field: field.size == 8 && field.type_name.contains('*'),
                },
                Some(FieldValue::Bytes { bytes, elem_size }) => Val::Bytes {
                    bytes: Cow::Borrowed(bytes),
                    elem: elem_size,
                    signed: field.signed,
                },
                None => return Err(format!("field '{name}' lies outside the record")),
            }
        }
        Expr::Unary(op, inner) => {
            let v = eval(inner, ctx)?;
            match op {
                UnaryOp::AddrOf => v,
                UnaryOp::Deref => return Err("pointer dereference".to_string()),
                _ => {
                    let (x, signed) = v.as_int()?;
                    match op {
                        UnaryOp::Neg => int(x.wrapping_neg(), signed),
                        UnaryOp::Not => int(u64::from(x == 0), true),
                        _ => int(!x, signed),
                    }
                }
            }
        }
        Expr::Binary(op, left, right) => {
            let (a, sa) = eval(left, ctx)?.as_int()?;
            // && and || short-circuit, as in C.
            match op {
                BinaryOp::And if a == 0 => return Ok(int(0, true)),
                BinaryOp::Or if a != 0 => return Ok(int(1, true)),
                _ => {}
            }
            let (b, sb) = eval(right, ctx)?.as_int()?;
            let signed = sa && sb;
            let cmp = |c: bool| int(u64::from(c), true);
            match op {
                BinaryOp::Add => int(a.wrapping_add(b), signed),
                BinaryOp::Sub => int(a.wrapping_sub(b), signed),
                BinaryOp::Mul => int(a.wrapping_mul(b), signed),
                BinaryOp::Div | BinaryOp::Rem if b == 0 => {
                    return Err("division by zero".to_string());
                }
                BinaryOp::Div if signed => int((a as i64).wrapping_div(b as i64) as u64, true),
                BinaryOp::Div => int(a / b, false),
                BinaryOp::Rem if signed => int((a as i64).wrapping_rem(b as i64) as u64, true),
                BinaryOp::Rem => int(a % b, false),
                BinaryOp::Shl => int(a.wrapping_shl(b as u32), sa),
                BinaryOp::Shr if sa => int(((a as i64).wrapping_shr(b as u32)) as u64, true),
                BinaryOp::Shr => int(a.wrapping_shr(b as u32), false),
                BinaryOp::Lt if signed => cmp((a as i64) < (b as i64)),
                BinaryOp::Gt if signed => cmp((a as i64) > (b as i64)),
                BinaryOp::Le if signed => cmp((a as i64) <= (b as i64)),
                BinaryOp::Ge if signed => cmp((a as i64) >= (b as i64)),
                BinaryOp::Lt => cmp(a < b),
                BinaryOp::Gt => cmp(a > b),
                BinaryOp::Le => cmp(a <= b),
                BinaryOp::Ge => cmp(a >= b),
                BinaryOp::Eq => cmp(a == b),
                BinaryOp::Ne => cmp(a != b),
                BinaryOp::BitAnd => int(a & b, signed),
                BinaryOp::BitOr => int(a | b, signed),
                BinaryOp::BitXor => int(a ^ b, signed),
                BinaryOp::And | BinaryOp::Or => cmp(b != 0),
            }
        }
        Expr::Ternary(cond, then, otherwise) => {
            let (c, _) = eval(cond, ctx)?.as_int()?;
            if c != 0 {
                eval(then, ctx)?
            } else {
                eval(otherwise, ctx)?
            }
        }
        Expr::Cast(ty, inner) => match eval(inner, ctx)? {
            Val::Int { v, .. } => eval_ctype(v, ty),
            other => other, // (void *)array, (char *)__get_str(...)
        },
        Expr::Index(base, index) => {
            let (i, _) = eval(index, ctx)?.as_int()?;
            match eval(base, ctx)? {
                Val::Bytes {
                    bytes,
                    elem,
                    signed,
                } => {
                    let elem = elem.max(1);
                    let start = usize::try_from(i)
                        .ok()
                        .and_then(|i| i.checked_mul(elem))
                        .ok_or("index out of range")?;
                    let v = ctx
                        .endian
                        .read_uint(&bytes, start, elem)
                        .ok_or("index out of range")?;
                    int(if signed { sign_extend(v, elem) } else { v }, signed)
                }
                _ => return Err("indexing a non-array".to_string()),
            }
        }
        Expr::Sizeof(ty) => int(ty.size as u64, false),
        Expr::List(_) => return Err("a { } list outside a helper".to_string()),
        Expr::Call(name, args) => eval_call(name, args, ctx)?,
    })
}

fn arg<'e>(args: &'e [Expr], i: usize, name: &str) -> Res<&'e Expr> {
    args.get(i)
        .ok_or_else(|| format!("{name}: missing argument {}", i + 1))
}

/// `{ value, "name" }` pairs of `__print_flags` and `__print_symbolic`.
/// A pair whose name is not a string (`{ 0, ((void *)0) }`, `{ -1, 0 }`)
/// ends the table, as the NULL sentinel of the kernel's arrays does.
fn pairs<'a>(items: &[Expr], ctx: &RenderContext<'a>) -> Res<Vec<(u64, String)>> {
    let mut out = Vec::new();
    for item in items {
        let Expr::List(pair) = item else {
            return Err("expected a { value, \"name\" } pair".to_string());
        };
        let [value, name] = pair.as_slice() else {
            return Err("expected a { value, \"name\" } pair".to_string());
        };
        // An enum name the kernel left unexpanded has no known value: it
        // matches nothing (libtraceevent's `eval_flag` gives it -1), bar the
        // few libtraceevent knows by name.
        let v = match value {
            Expr::Ident(ident) => {
                match ctx.resolver.enum_value(ident).or_else(|| known_enum(ident)) {
                    Some(v) => v,
                    None => continue,
                }
            }
            _ => eval(value, ctx)?.as_int()?.0,
        };
        match eval(name, ctx)? {
            Val::Str(s) => out.push((v, s.into_owned())),
            _ => break,
        }
    }
    Ok(out)
}

/// The enum names libtraceevent resolves itself (`flags[]` in its
/// event-parse.c): softirq vectors and hrtimer restart codes.
fn known_enum(name: &str) -> Option<u64> {
    Some(match name {
        "HI_SOFTIRQ" | "HRTIMER_NORESTART" => 0,
        "TIMER_SOFTIRQ" | "HRTIMER_RESTART" => 1,
        "NET_TX_SOFTIRQ" => 2,
        "NET_RX_SOFTIRQ" => 3,
        "BLOCK_SOFTIRQ" => 4,
        "IRQ_POLL_SOFTIRQ" | "BLOCK_IOPOLL_SOFTIRQ" => 5,
        "TASKLET_SOFTIRQ" => 6,
        "SCHED_SOFTIRQ" => 7,
        "HRTIMER_SOFTIRQ" => 8,
        "RCU_SOFTIRQ" => 9,
        _ => return None,
    })
}

fn eval_call<'a>(name: &str, args: &[Expr], ctx: &RenderContext<'a>) -> Res<Val<'a>> {
    let field_bytes = |i: usize| -> Res<(Cow<'a, [u8]>, usize, bool)> {
        // `__get_str(name)` names the field bare.
        let value = match arg(args, i, name)? {
            Expr::Ident(field) => eval(&Expr::Field(field.clone()), ctx)?,
            other => eval(other, ctx)?,
        };
        match value {
            Val::Bytes {
                bytes,
                elem,
                signed,
            } => Ok((bytes, elem, signed)),
            _ => Err(format!("{name}: argument is not an array")),
        }
    };
    Ok(match name {
        "__get_str" | "__get_rel_str" => {
            let (bytes, ..) = field_bytes(0)?;
            Val::Str(Cow::Owned(c_string(&bytes)))
        }
        "__get_dynamic_array"
        | "__get_rel_dynamic_array"
        | "__get_sockaddr"
        | "__get_rel_sockaddr" => {
            let (bytes, elem, signed) = field_bytes(0)?;
            Val::Bytes {
                bytes,
                elem,
                signed,
            }
        }
        "__get_dynamic_array_len" | "__get_rel_dynamic_array_len" => {
            int(field_bytes(0)?.0.len() as u64, false)
        }
        "__get_bitmask" | "__get_rel_bitmask" | "__get_cpumask" | "__get_rel_cpumask" => {
            let (bytes, ..) = field_bytes(0)?;
            Val::Str(Cow::Owned(bitmask(&bytes, ctx.endian)))
        }
        "__print_flags" | "__print_flags_u64" => {
            let (mut v, _) = eval(arg(args, 0, name)?, ctx)?.as_int()?;
            let delim = match eval(arg(args, 1, name)?, ctx)? {
                Val::Str(s) => s.into_owned(),
                _ => return Err("__print_flags: delimiter is not a string".to_string()),
            };
            let mut out = String::new();
            for (flag, text) in pairs(args.get(2..).unwrap_or(&[]), ctx)? {
                // As the kernel's trace_print_flags_seq: nothing for 0.
                if flag != 0 && v & flag == flag {
                    if !out.is_empty() {
                        out.push_str(&delim);
                    }
                    out.push_str(&text);
                    v &= !flag;
                }
            }
            if v != 0 {
                if !out.is_empty() {
                    out.push_str(&delim);
                }
                let _ = write!(out, "0x{v:x}");
            }
            Val::Str(Cow::Owned(out))
        }
        "__print_symbolic" | "__print_symbolic_u64" => {
            let (v, _) = eval(arg(args, 0, name)?, ctx)?.as_int()?;
            let found = pairs(args.get(1..).unwrap_or(&[]), ctx)?
                .into_iter()
                .find(|(value, _)| *value == v);
            Val::Str(Cow::Owned(match found {
                Some((_, text)) => text,
                None => format!("0x{v:x}"),
            }))
        }
        "__print_hex" | "__print_hex_str" => {
            let (bytes, ..) = field_bytes(0)?;
            let (len, _) = eval(arg(args, 1, name)?, ctx)?.as_int()?;
            let n = usize::try_from(len).unwrap_or(usize::MAX).min(bytes.len());
            let sep = if name == "__print_hex" { " " } else { "" };
            Val::Str(Cow::Owned(
                bytes[..n]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(sep),
            ))
        }
        "__print_array" => {
            let (bytes, ..) = field_bytes(0)?;
            let (count, _) = eval(arg(args, 1, name)?, ctx)?.as_int()?;
            let (size, _) = eval(arg(args, 2, name)?, ctx)?.as_int()?;
            let size = usize::try_from(size).unwrap_or(0);
            if !matches!(size, 1 | 2 | 4 | 8) {
                return Err(format!("__print_array: element size {size}"));
            }
            let mut out = String::from("{");
            for i in 0..usize::try_from(count).unwrap_or(0).min(bytes.len() / size) {
                let v = ctx.endian.read_uint(&bytes, i * size, size).unwrap_or(0);
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "0x{v:x}");
            }
            out.push('}');
            Val::Str(Cow::Owned(out))
        }
        _ => return Err(format!("unknown helper {name}()")),
    })
}

/// A bitmask as the kernel's `%*pb` prints it: 32-bit hex groups, most
/// significant first, separated by commas.
fn bitmask(bytes: &[u8], endian: Endian) -> String {
    let words: Vec<u64> = bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u64::from(match endian {
                Endian::Little => u32::from_le_bytes(w),
                Endian::Big => u32::from_be_bytes(w),
            })
        })
        .collect();
    words
        .iter()
        .rev()
        .map(|w| format!("{w:08x}"))
        .collect::<Vec<_>>()
        .join(",")
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
