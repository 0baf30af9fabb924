//! Code generation of the functions that make a value: `str()`, `ksym()`,
//! `usym()`, `kaddr()`, `kstack()`/`ustack()` with a depth, `ntop()`,
//! `bswap()`; and `join()`, which prints a NULL-ended array of strings
//! (`args.argv`).
//!
//! `bswap()` swaps as many bytes as its integer has: bpftrace's integers
//! keep their C size, scry's are all 64 bits, so the size of a field, a
//! cast or a variable first set from one is remembered (`int_bytes`).
//!
//! Symbols are named in user space when the value is printed: the program
//! only keeps the address (and the process id for `usym`), so no table
//! goes into the kernel. `join()` writes its strings straight into a
//! record reserved in the ring buffer (16 strings of 1,024 bytes, as
//! bpftrace's defaults): they would not fit the 512-byte stack.

use super::ast::{Expr, ExprKind, UnOp};
use super::codegen::{Gen, Loc, Val, aggregation, event_kind};
use super::error::LangError;
use super::expr::STRLEN;
use super::insn::*;
use super::stacks::MAX_DEPTH;
use super::types::{Ty, str_size};

/// Strings `join()` prints at most, and the bytes each may take.
pub(crate) const JOIN_ARGS: usize = 16;
pub(crate) const JOIN_ARGSIZE: usize = 1024;
/// Bytes before a join record's strings: kind, delimiter id, count.
pub(crate) const JOIN_HEADER: usize = 24;

impl Gen<'_> {
    pub(super) fn call_expr(
        &mut self,
        e: &Expr,
        name: &str,
        args: &[Expr],
    ) -> Result<Val, LangError> {
        match name {
            "kstack" | "ustack" => {
                let depth = match args {
                    [
                        Expr {
                            kind: ExprKind::Int(n),
                            ..
                        },
                    ] if (1..=MAX_DEPTH as i64).contains(n) => *n as usize,
                    _ => {
                        return Err(LangError::new(
                            e.span,
                            format!("{name}() takes a literal depth (1-{MAX_DEPTH})"),
                        ));
                    }
                };
                self.stack_builtin(e, name == "ustack", depth)
            }
            "str" => self.str_call(e, args),
            // kptr()/uptr(): bpftrace's address-space annotations, the
            // value itself.
            "ksym" | "usym" | "kptr" | "uptr" => {
                let [arg] = args else {
                    return Err(LangError::new(
                        e.span,
                        format!("{name}() takes one address"),
                    ));
                };
                let v = self.expr(arg)?;
                self.want_int(v, arg)?;
                if matches!(name, "kptr" | "uptr") {
                    return Ok(v);
                }
                if name == "ksym" {
                    return Ok(Val {
                        ty: Ty::Ksym,
                        loc: Loc::R0,
                    });
                }
                self.with_pid(Ty::Usym)
            }
            "kaddr" => {
                let [
                    Expr {
                        kind: ExprKind::Str(symbol),
                        ..
                    },
                ] = args
                else {
                    return Err(LangError::new(
                        e.span,
                        "kaddr() takes a symbol name as a string literal",
                    ));
                };
                let addr = kernel_address(symbol).ok_or_else(|| {
                    LangError::new(e.span, format!("Failed to resolve kernel symbol: {symbol}"))
                })?;
                self.asm.emit_all(&ld_imm64(R0, 0, addr));
                Ok(Val::int())
            }
            "ntop" => self.ntop(e, args),
            "macaddr" => self.macaddr(e, args),
            "strftime" => {
                let [
                    Expr {
                        kind: ExprKind::Str(format),
                        ..
                    },
                    nsecs,
                ] = args
                else {
                    return Err(LangError::new(
                        e.span,
                        "strftime() takes a format string literal and nanoseconds",
                    ));
                };
                let v = self.expr(nsecs)?;
                self.want_int(v, nsecs)?;
                let id = super::codegen::intern(&mut self.reg.time_formats, format.clone()) as u32;
                Ok(Val {
                    ty: Ty::Strftime(id),
                    loc: Loc::R0,
                })
            }
            "buf" => self.buf_call(e, args),
            "sizeof" => {
                let bytes = self.size_of(e, args)?;
                self.const_int(R0, bytes as i64);
                Ok(Val::int_of(false))
            }
            "strncmp" => self.strncmp(e, args),
            "bswap" => {
                let [arg] = args else {
                    return Err(LangError::new(e.span, "bswap() takes one integer"));
                };
                let v = self.expr(arg)?;
                self.want_int(v, arg)?;
                let bits = 8 * self.width_of(arg).max(2);
                self.asm.emit(bswap(R0, bits as i32));
                self.int_bytes = bits / 8;
                Ok(Val::int())
            }
            _ if aggregation(name) => Err(LangError::new(
                e.span,
                format!("{name}() should be assigned to a map"),
            )),
            "printf" | "exit" | "print" | "clear" | "zero" | "delete" | "time" | "join" | "cat" => {
                Err(LangError::new(
                    e.span,
                    format!("{name}() should be used as a statement"),
                ))
            }
            _ => Err(LangError::new(e.span, format!("Unknown function: {name}"))),
        }
    }

    /// `strncmp(a, b, n)`: 0 when the strings agree over their first `n`
    /// bytes (or up to a common NUL), 1 when not, as bpftrace's; `n` a
    /// literal.
    fn strncmp(&mut self, e: &Expr, args: &[Expr]) -> Result<Val, LangError> {
        let usage = || LangError::new(e.span, "strncmp() takes two strings and a literal length");
        let [
            a,
            b,
            Expr {
                kind: ExprKind::Int(n),
                ..
            },
        ] = args
        else {
            return Err(usage());
        };
        let n = usize::try_from(*n).map_err(|_| usage())?;
        let (l, r) = (self.expr(a)?, self.expr(b)?);
        let (Ty::Str(x), Ty::Str(y), Loc::Stack(la), Loc::Stack(rb)) = (l.ty, r.ty, l.loc, r.loc)
        else {
            return Err(usage());
        };
        self.str_equal(la, rb, x.min(y).min(n), false);
        Ok(Val::int())
    }

    /// `str(ptr)`: the string at a pointer, 63 bytes at most and its NUL
    /// (bpftrace's 64); `str(ptr, len)`: `len` bytes at most and the NUL,
    /// as bpftrace reads them. A literal length sizes the buffer, a
    /// computed one is bounded by 64.
    fn str_call(&mut self, e: &Expr, args: &[Expr]) -> Result<Val, LangError> {
        let (ptr, len) = match args {
            [p] => (p, None),
            [p, l] => (p, Some(l)),
            _ => {
                return Err(LangError::new(
                    e.span,
                    "str() takes a pointer and an optional length",
                ));
            }
        };
        let literal = match len.map(|l| &l.kind) {
            None => Some(STRLEN as i64),
            Some(ExprKind::Int(n)) => Some(*n),
            Some(_) => None,
        };
        if let Some(n) = literal
            && !(1..=STRLEN as i64 * 4).contains(&n)
        {
            return Err(LangError::new(e.span, "str(): the length must be 1-256"));
        }
        let v = self.expr(ptr)?;
        if matches!(v.ty, Ty::Str(_)) && len.is_none() {
            // A string already (a __data_loc field): as it is.
            return Ok(v);
        }
        self.want_int(v, ptr)?;
        // The bytes read, with the NUL.
        let read = match (literal, len) {
            (Some(n), Some(_)) => n as usize + 1,
            _ => STRLEN,
        };
        let size = str_size(read);
        let ptr_slot = self.spill()?;
        let buf = self.alloc(size)?;
        self.zero(buf, size);
        match (literal, len) {
            (None, Some(l)) => {
                // The verifier needs the length bounded: 0..=size.
                let v = self.expr(l)?;
                self.want_int(v, l)?;
                let low = self.asm.label();
                let ok = self.asm.label();
                self.asm.emit(mov_reg(R2, R0));
                self.asm.emit(alu_imm(Alu::Add, R2, 1));
                self.asm.jump_if_imm(Jmp::Sge, R2, 1, low);
                self.asm.emit(mov_imm(R2, 1));
                self.asm.bind(low);
                self.asm.jump_if_imm(Jmp::Sle, R2, size as i32, ok);
                self.asm.emit(mov_imm(R2, size as i32));
                self.asm.bind(ok);
            }
            _ => self.asm.emit(mov_imm(R2, read as i32)),
        }
        self.fp_addr(R1, buf);
        self.asm.emit(load(Size::DW, R3, FP, ptr_slot));
        self.asm.emit(call(helper::PROBE_READ_STR));
        Ok(Val {
            ty: Ty::Str(size),
            loc: Loc::Stack(buf),
        })
    }

    /// `join(array[, delimiter])`: the strings of a NULL-ended array of
    /// pointers, sent as one record and printed on one line.
    pub(crate) fn join(&mut self, e: &Expr, args: &[Expr]) -> Result<(), LangError> {
        let (array, delim) = match args {
            [a] => (a, " ".to_string()),
            [
                a,
                Expr {
                    kind: ExprKind::Str(d),
                    ..
                },
            ] => (a, d.clone()),
            _ => {
                return Err(LangError::new(
                    e.span,
                    "join() takes an array of strings and an optional delimiter literal",
                ));
            }
        };
        let v = self.expr(array)?;
        self.want_int(v, array)?;
        let base = self.spill()?;
        let tmp = self.alloc(8)?;
        let id = super::codegen::intern(&mut self.reg.join_delims, delim) as i32;
        let size = JOIN_HEADER + JOIN_ARGS * JOIN_ARGSIZE;
        let lost = self.asm.label();
        let end = self.asm.label();
        self.events_fd(R1);
        self.asm.emit(mov_imm(R2, size as i32));
        self.asm.emit(mov_imm(R3, 0));
        self.asm.emit(call(helper::RINGBUF_RESERVE));
        self.asm.jump_if_imm(Jmp::Eq, R0, 0, lost);
        // r7 (kept across helper calls) holds the record.
        self.asm.emit(mov_reg(R7, R0));
        self.asm
            .emit(store_imm(Size::DW, R7, 0, event_kind::JOIN as i32));
        self.asm.emit(store_imm(Size::DW, R7, 8, id));
        let done = self.asm.label();
        for i in 0..JOIN_ARGS {
            self.asm.emit(store_imm(Size::DW, R7, 16, i as i32));
            self.fp_addr(R1, tmp);
            self.asm.emit(mov_imm(R2, 8));
            self.asm.emit(load(Size::DW, R3, FP, base));
            self.asm.emit(alu_imm(Alu::Add, R3, 8 * i as i32));
            self.asm.emit(call(helper::PROBE_READ));
            self.asm.emit(load(Size::DW, R3, FP, tmp));
            self.asm.jump_if_imm(Jmp::Eq, R3, 0, done);
            self.asm.emit(mov_reg(R1, R7));
            self.asm.emit(alu_imm(
                Alu::Add,
                R1,
                (JOIN_HEADER + i * JOIN_ARGSIZE) as i32,
            ));
            self.asm.emit(mov_imm(R2, JOIN_ARGSIZE as i32));
            self.asm.emit(call(helper::PROBE_READ_STR));
        }
        self.asm.emit(store_imm(Size::DW, R7, 16, JOIN_ARGS as i32));
        self.asm.bind(done);
        self.asm.emit(mov_reg(R1, R7));
        self.asm.emit(mov_imm(R2, 0));
        self.asm.emit(call(helper::RINGBUF_SUBMIT));
        self.asm.jump(end);
        self.asm.bind(lost);
        self.count_lost();
        self.asm.bind(end);
        Ok(())
    }
}

impl Gen<'_> {
    /// `buf(data, len)`: `len` bytes of a string or at a pointer, with
    /// their count first. A literal length (1-256) sizes the buffer; a
    /// computed one is bounded by 64, as bpftrace's.
    fn buf_call(&mut self, e: &Expr, args: &[Expr]) -> Result<Val, LangError> {
        let [data, len] = args else {
            return Err(LangError::new(e.span, "buf() takes data and a length"));
        };
        let literal = match len.kind {
            ExprKind::Int(n) if (1..=STRLEN as i64 * 4).contains(&n) => Some(n as usize),
            ExprKind::Int(_) => {
                return Err(LangError::new(len.span, "buf(): the length must be 1-256"));
            }
            _ => None,
        };
        let cap = str_size(literal.unwrap_or(STRLEN));
        let v = self.expr(data)?;
        let held = match v.loc {
            Loc::R0 => {
                self.want_int(v, data)?;
                Loc::Stack(self.spill()?)
            }
            stack => stack,
        };
        let buf = self.alloc(8 + cap)?;
        self.zero(buf, 8 + cap);
        match literal {
            Some(n) => self.asm.emit(mov_imm(R2, n as i32)),
            None => {
                let l = self.expr(len)?;
                self.want_int(l, len)?;
                let ok = self.asm.label();
                self.asm.emit(mov_reg(R2, R0));
                self.asm.jump_if_imm(Jmp::Le, R2, cap as i32, ok);
                self.asm.emit(mov_imm(R2, cap as i32));
                self.asm.bind(ok);
            }
        }
        match (v.ty, held) {
            (Ty::Str(size), Loc::Stack(src)) => {
                // A string on the stack: its bytes, as many as asked.
                let n = size.min(cap);
                self.copy(buf + 8, src, n);
                let fits = self.asm.label();
                self.asm.jump_if_imm(Jmp::Le, R2, n as i32, fits);
                self.asm.emit(mov_imm(R2, n as i32));
                self.asm.bind(fits);
            }
            (_, Loc::Stack(ptr)) => {
                self.asm.emit(store(Size::DW, FP, buf, R2));
                self.fp_addr(R1, buf + 8);
                self.asm.emit(load(Size::DW, R3, FP, ptr));
                self.asm.emit(call(helper::PROBE_READ));
                self.asm.emit(load(Size::DW, R2, FP, buf));
            }
            _ => {}
        }
        self.asm.emit(store(Size::DW, FP, buf, R2));
        Ok(Val {
            ty: Ty::Buf(cap),
            loc: Loc::Stack(buf),
        })
    }

    /// `sizeof(TYPE)` or `sizeof(expr)`: bytes of an integer type, a
    /// kernel struct (BTF), or the value of an expression (a field, cast
    /// or variable keeps its C size; a string its buffer's).
    fn size_of(&mut self, e: &Expr, args: &[Expr]) -> Result<usize, LangError> {
        let [arg] = args else {
            return Err(LangError::new(
                e.span,
                "sizeof() takes a type or an expression",
            ));
        };
        if let ExprKind::Ident(name) = &arg.kind {
            if let Some(super::ast::CastTy::Int { bytes, .. }) = super::ast::CastTy::int(name) {
                return Ok(bytes);
            }
            if let Some(record) = name
                .strip_prefix("struct ")
                .or_else(|| name.strip_prefix("union "))
            {
                let btf = self.env.types.btf().ok_or_else(|| {
                    LangError::new(
                        arg.span,
                        "kernel struct types need BTF (/sys/kernel/btf/vmlinux is missing)",
                    )
                })?;
                let id = btf.find_struct(record).ok_or_else(|| {
                    LangError::new(arg.span, format!("Unknown struct/union: '{name}'"))
                })?;
                return Ok(btf.size(id));
            }
        }
        let ty = self.key_types(std::slice::from_ref(arg))?[0];
        Ok(if ty.is_int() {
            self.width_of(arg)
        } else {
            ty.size()
        })
    }
}

/// The address families `ntop()` makes.
const AF_INET: i32 = 2;
const AF_INET6: i32 = 10;

impl Gen<'_> {
    /// Bytes of the integer `e` evaluated to (just now): a field's, a
    /// cast's or a variable's size, 8 for anything computed.
    pub(crate) fn width_of(&self, e: &Expr) -> usize {
        match &e.kind {
            ExprKind::Field { .. }
            | ExprKind::Cast { .. }
            | ExprKind::Var(_)
            | ExprKind::Ident(_)
            | ExprKind::Unary {
                op: UnOp::Deref, ..
            } => self.int_bytes,
            ExprKind::Call { name, .. } if name == "bswap" => self.int_bytes,
            _ => 8,
        }
    }

    /// `ntop([family,] address)`: an IPv4 address from an integer (its
    /// bytes as they lie in memory: network order) or a 4-byte array, an
    /// IPv6 one from a 16-byte array (a tracepoint's `__u8 saddr_v6[16]`,
    /// BTF's `in6_u.u6_addr8`); printed as `inet_ntop` prints it.
    fn ntop(&mut self, e: &Expr, args: &[Expr]) -> Result<Val, LangError> {
        let (family, addr) = match args {
            [a] => (None, a),
            [f, a] => (Some(f), a),
            _ => {
                return Err(LangError::new(
                    e.span,
                    "ntop() takes an address and optionally its family first",
                ));
            }
        };
        let buf = self.alloc(Ty::Inet.size())?;
        self.zero(buf, Ty::Inet.size());
        let bytes = match self.array_field(addr) {
            Some((offset, size @ (4 | 16))) => {
                self.fp_addr(R1, buf + 8);
                self.asm.emit(mov_imm(R2, size as i32));
                self.asm.emit(mov_reg(R3, R6));
                self.asm.emit(alu_imm(Alu::Add, R3, offset as i32));
                self.asm.emit(call(helper::PROBE_READ_KERNEL));
                size
            }
            _ => {
                let v = self.expr(addr)?;
                match (v.ty, v.loc) {
                    (Ty::Str(n), Loc::Stack(src)) => {
                        let size = if n >= 16 { 16 } else { 8 };
                        self.copy(buf + 8, src, size);
                        if n >= 16 { 16 } else { 4 }
                    }
                    (t, Loc::R0) if t.is_int() => {
                        self.asm.emit(store(Size::W, FP, buf + 8, R0));
                        4
                    }
                    _ => {
                        return Err(LangError::new(
                            addr.span,
                            format!(
                                "ntop() expects an integer or an array of 4 or 16 bytes, got '{}'",
                                v.ty
                            ),
                        ));
                    }
                }
            }
        };
        let family_value = if bytes == 16 { AF_INET6 } else { AF_INET };
        match family {
            Some(f) => {
                let v = self.expr(f)?;
                self.want_int(v, f)?;
                self.asm.emit(store(Size::DW, FP, buf, R0));
            }
            None => self.asm.emit(store_imm(Size::DW, FP, buf, family_value)),
        }
        Ok(Val {
            ty: Ty::Inet,
            loc: Loc::Stack(buf),
        })
    }

    /// `macaddr(address)`: the 6 bytes of a tracepoint's array field, of a
    /// string, or at a pointer (kernel or user memory: `bpf_probe_read`),
    /// printed as bpftrace prints them (`2F:65:74:63:2F:6C`).
    fn macaddr(&mut self, e: &Expr, args: &[Expr]) -> Result<Val, LangError> {
        let [addr] = args else {
            return Err(LangError::new(e.span, "macaddr() takes one address"));
        };
        let size = Ty::MacAddr.size();
        let buf = self.alloc(size)?;
        self.zero(buf, size);
        if let Some((offset, 6..)) = self.array_field(addr) {
            self.fp_addr(R1, buf);
            self.asm.emit(mov_imm(R2, 6));
            self.asm.emit(mov_reg(R3, R6));
            self.asm.emit(alu_imm(Alu::Add, R3, offset as i32));
            self.asm.emit(call(helper::PROBE_READ_KERNEL));
        } else {
            let v = self.expr(addr)?;
            match (v.ty, v.loc) {
                (Ty::Str(n), Loc::Stack(src)) if n >= 8 => {
                    self.copy(buf, src, 8);
                    self.asm.emit(store_imm(Size::H, FP, buf + 6, 0));
                }
                (t, Loc::R0) if t.is_int() => {
                    self.asm.emit(mov_reg(R3, R0));
                    self.fp_addr(R1, buf);
                    self.asm.emit(mov_imm(R2, 6));
                    self.asm.emit(call(helper::PROBE_READ));
                }
                _ => {
                    return Err(LangError::new(
                        addr.span,
                        format!(
                            "macaddr() expects an array of 6 bytes or a pointer, got '{}'",
                            v.ty
                        ),
                    ));
                }
            }
        }
        Ok(Val {
            ty: Ty::MacAddr,
            loc: Loc::Stack(buf),
        })
    }

    /// The offset and size of a tracepoint's array field that is not a
    /// string (`args.saddr`, `__u8 saddr[4]`).
    fn array_field(&self, e: &Expr) -> Option<(usize, usize)> {
        let ExprKind::Field { base, field } = &e.kind else {
            return None;
        };
        if base.kind != ExprKind::Ident("args".into()) {
            return None;
        }
        let f = self.env.format?.fields.iter().find(|f| &f.name == field)?;
        (matches!(f.kind, crate::event::format::FieldKind::Array { .. }) && !f.is_string())
            .then_some((f.offset, f.size))
    }
}

/// The address of `symbol` in /proc/kallsyms (0 when addresses are
/// hidden: `kptr_restrict`), or None when it is not there.
fn kernel_address(symbol: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.split_whitespace();
        let addr = parts.next()?;
        let _kind = parts.next()?;
        (parts.next()? == symbol).then(|| u64::from_str_radix(addr, 16).ok())?
    })
}
