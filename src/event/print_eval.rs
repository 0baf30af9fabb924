//! Evaluating a print fmt's expressions against a record's bytes, for
//! `print_render`: fields (scalars, arrays, `__data_loc` strings), C
//! arithmetic on 64 bits (wrapping; division by zero is an error), casts,
//! and the kernel's helpers (`__get_str`, `__print_flags`,
//! `__print_symbolic`, `__print_hex`, `__print_array`, ...). The rules
//! that match libtraceevent are listed in `print_render`'s doc.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::format::{Endian, FieldValue, c_string, sign_extend};
use super::print_fmt::{BinaryOp, CType, Expr, UnaryOp};
use super::print_render::{RenderContext, RenderError, Res, needs};

#[derive(Clone, Debug)]
pub(super) enum Val<'a> {
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

pub(super) fn int(v: u64, signed: bool) -> Val<'static> {
    Val::Int {
        v,
        signed,
        pointer_field: false,
    }
}

impl Val<'_> {
    pub(super) fn as_int(&self) -> Res<(u64, bool)> {
        match self {
            Val::Int { v, signed, .. } => Ok((*v, *signed)),
            _ => Err(needs("a string operand", "to be a number")),
        }
    }
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

pub(super) fn eval<'a>(expr: &Expr, ctx: &RenderContext<'a>) -> Res<Val<'a>> {
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
                .ok_or_else(|| RenderError::NoField(name.clone()))?;
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
                None => return Err(RenderError::OutsideRecord(name.clone())),
            }
        }
        Expr::Unary(op, inner) => {
            let v = eval(inner, ctx)?;
            match op {
                UnaryOp::AddrOf => v,
                UnaryOp::Deref => return Err(RenderError::Unsupported("pointer dereference")),
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
                    return Err(RenderError::DivisionByZero);
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
                        .ok_or(RenderError::IndexOutOfRange)?;
                    let v = ctx
                        .endian
                        .read_uint(&bytes, start, elem)
                        .ok_or(RenderError::IndexOutOfRange)?;
                    int(if signed { sign_extend(v, elem) } else { v }, signed)
                }
                _ => return Err(needs("indexing", "an array")),
            }
        }
        Expr::Sizeof(ty) => int(ty.size as u64, false),
        Expr::List(_) => return Err(RenderError::Unsupported("a { } list outside a helper")),
        Expr::Call(name, args) => eval_call(name, args, ctx)?,
    })
}

fn arg<'e>(args: &'e [Expr], i: usize, name: &str) -> Res<&'e Expr> {
    args.get(i).ok_or_else(|| needs(name, "more arguments"))
}

/// `{ value, "name" }` pairs of `__print_flags` and `__print_symbolic`.
/// A pair whose name is not a string (`{ 0, ((void *)0) }`, `{ -1, 0 }`)
/// ends the table, as the NULL sentinel of the kernel's arrays does.
fn pairs<'a>(items: &[Expr], ctx: &RenderContext<'a>) -> Res<Vec<(u64, String)>> {
    let mut out = Vec::new();
    for item in items {
        let Expr::List(pair) = item else {
            return Err(needs("a flag or symbol table", "{ value, \"name\" } pairs"));
        };
        let [value, name] = pair.as_slice() else {
            return Err(needs("a flag or symbol table", "{ value, \"name\" } pairs"));
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
            _ => Err(needs(name, "an array argument")),
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
                _ => return Err(needs("__print_flags", "a string delimiter")),
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
                return Err(needs("__print_array", "an element size of 1, 2, 4 or 8"));
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
        _ => return Err(RenderError::UnknownHelper(name.to_string())),
    })
}

/// A bitmask as the kernel's `%*pb` prints it: 32-bit hex groups, most
/// significant first, separated by commas.
pub(super) fn bitmask(bytes: &[u8], endian: Endian) -> String {
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
