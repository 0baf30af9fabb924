//! Code generation of the statements that talk to user space: `printf`,
//! `exit`, `print`, `clear`, `zero`, `time` (events in the BPF ring
//! buffer, a u64 kind and an index first), and `delete`.

use super::ast::{Expr, ExprKind};
use super::codegen::{Gen, PrintfSpec, event_kind, intern};
use super::error::LangError;
use super::insn::*;
use super::types::Ty;

impl Gen<'_> {
    pub(crate) fn is_statement_call(&self, name: &str) -> bool {
        matches!(
            name,
            "printf" | "exit" | "print" | "clear" | "zero" | "delete" | "time" | "join" | "cat"
        )
    }

    pub(crate) fn events_fd(&mut self, reg: Reg) {
        self.asm.emit_all(&ld_imm64(
            reg,
            BPF_PSEUDO_MAP_FD,
            self.fds.events as u32 as u64,
        ));
    }

    /// Sends an event of `size` bytes from the stack buffer at `off`; a
    /// full ring buffer counts it lost.
    pub(crate) fn output(&mut self, off: i16, size: usize) {
        self.events_fd(R1);
        self.fp_addr(R2, off);
        self.asm.emit(mov_imm(R3, size as i32));
        self.asm.emit(mov_imm(R4, 0));
        self.asm.emit(call(helper::RINGBUF_OUTPUT));
        let sent = self.asm.label();
        self.asm.jump_if_imm(Jmp::Eq, R0, 0, sent);
        self.count_lost();
        self.asm.bind(sent);
    }

    /// Adds one to this CPU's count of lost records (the one element of
    /// a per-CPU array, read by user space as bpftrace reads its perf
    /// buffer's lost count). Clobbers r0-r5.
    pub(crate) fn count_lost(&mut self) {
        let done = self.asm.label();
        self.asm.emit(store_imm(Size::W, FP, -4, 0));
        self.asm.emit_all(&ld_imm64(
            R1,
            BPF_PSEUDO_MAP_FD,
            self.fds.lost as u32 as u64,
        ));
        self.fp_addr(R2, -4);
        self.asm.emit(call(helper::MAP_LOOKUP_ELEM));
        self.asm.jump_if_imm(Jmp::Eq, R0, 0, done);
        self.asm.emit(load(Size::DW, R1, R0, 0));
        self.asm.emit(alu_imm(Alu::Add, R1, 1));
        self.asm.emit(store(Size::DW, R0, 0, R1));
        self.asm.bind(done);
    }

    /// An event of two u64s: its kind and an index.
    pub(crate) fn small_event(&mut self, kind: u64, index: u64) -> Result<(), LangError> {
        let off = self.alloc(16)?;
        self.asm.emit(store_imm(Size::DW, FP, off, kind as i32));
        self.asm
            .emit(store_imm(Size::DW, FP, off + 8, index as u32 as i32));
        self.asm.emit(store_imm(
            Size::W,
            FP,
            off + 12,
            (index >> 32) as u32 as i32,
        ));
        self.output(off, 16);
        Ok(())
    }

    pub(crate) fn map_arg(&mut self, call: &Expr, args: &[Expr]) -> Result<usize, LangError> {
        match args {
            [
                Expr {
                    kind: ExprKind::Map { name, keys },
                    span,
                },
            ] if keys.is_empty() => self.map_for(name, &[], None, *span).or_else(|e| {
                // print(@m) of a keyed map names it without keys.
                let full = format!("@{name}");
                self.reg.map_index(&full).ok_or(e)
            }),
            _ => Err(LangError::new(
                call.span,
                "expected a map argument, e.g. @name",
            )),
        }
    }

    pub(crate) fn statement_call(
        &mut self,
        e: &Expr,
        name: &str,
        args: &[Expr],
    ) -> Result<(), LangError> {
        match name {
            "printf" => self.printf(e, args, false),
            // The file is read when the event is printed, as bpftrace's
            // cat() reads it in user space.
            "cat" => self.printf(e, args, true),
            "join" => self.join(e, args),
            "exit" => {
                self.small_event(event_kind::EXIT, 0)?;
                let exit = self
                    .exit_label
                    .ok_or_else(|| LangError::new(e.span, "exit"))?;
                self.asm.jump(exit);
                Ok(())
            }
            "print" | "clear" | "zero" => {
                if name == "print"
                    && let [value] = args
                    && !matches!(value.kind, ExprKind::Map { .. })
                {
                    return self.print_value(e, value);
                }
                // print(@m, N): the top N elements only.
                let top = match args.get(1) {
                    None => 0,
                    Some(Expr {
                        kind: ExprKind::Int(n),
                        ..
                    }) if name == "print" && (0..=u32::MAX as i64).contains(n) => *n as u64,
                    Some(other) => {
                        return Err(LangError::new(
                            other.span,
                            format!("{name}(): unexpected argument"),
                        ));
                    }
                };
                let map = self.map_arg(e, args.get(..1).unwrap_or(&[]))?;
                let kind = match name {
                    "print" => event_kind::PRINT,
                    "clear" => event_kind::CLEAR,
                    _ => event_kind::ZERO,
                };
                self.small_event(kind, map as u64 | top << 32)
            }
            "delete" => {
                let [
                    Expr {
                        kind: ExprKind::Map { name, keys },
                        span,
                    },
                ] = args
                else {
                    return Err(LangError::new(
                        e.span,
                        "delete() expects a map element, e.g. @m[k]",
                    ));
                };
                let key_tys = self.key_types(keys)?;
                let map = self.map_for(name, &key_tys, None, *span)?;
                if self.reg.maps[map].kind.has_bucket() {
                    return Err(LangError::new(
                        e.span,
                        "delete() of a histogram element is not supported",
                    ));
                }
                let key = self.build_key(map, keys)?;
                self.map_fd(R1, map);
                self.fp_addr(R2, key);
                self.asm.emit(call(helper::MAP_DELETE_ELEM));
                Ok(())
            }
            _ => {
                let format = match args {
                    [] => "%H:%M:%S\n".to_string(),
                    [
                        Expr {
                            kind: ExprKind::Str(s),
                            ..
                        },
                    ] => s.clone(),
                    _ => return Err(LangError::new(e.span, "time() takes one string literal")),
                };
                let id = intern(&mut self.reg.time_formats, format) as u64;
                self.small_event(event_kind::TIME, id)
            }
        }
    }

    /// `print(value)` of a value that is no map: the value and a newline,
    /// as bpftrace prints it (a printf of `%ld`, `%lu` or `%s`).
    fn print_value(&mut self, e: &Expr, value: &Expr) -> Result<(), LangError> {
        let ty = self.key_types(std::slice::from_ref(value))?[0];
        let format = match ty {
            Ty::Int | Ty::Ptr(_) => "%ld\n",
            Ty::Uint => "%lu\n",
            Ty::Record(_) => {
                return Err(LangError::new(
                    value.span,
                    "print() of a struct is not supported",
                ));
            }
            _ => "%s\n",
        };
        let format = Expr {
            kind: ExprKind::Str(format.into()),
            span: e.span,
        };
        self.printf(e, &[format, value.clone()], false)
    }

    /// `printf`, or with `cat` the file the formatted text names.
    pub(crate) fn printf(&mut self, e: &Expr, args: &[Expr], cat: bool) -> Result<(), LangError> {
        let Some(Expr {
            kind: ExprKind::Str(format),
            ..
        }) = args.first()
        else {
            return Err(LangError::new(
                e.span,
                "printf() expects a format string first",
            ));
        };
        let specs = super::printf::conversions(format)
            .map_err(|m| LangError::new(e.span, m.to_string()))?;
        let values = &args[1..];
        if specs.len() != values.len() {
            let why = if specs.len() > values.len() {
                "Not enough"
            } else {
                "Too many"
            };
            return Err(LangError::new(
                e.span,
                format!(
                    "printf: {why} arguments for format string ({} supplied, {} expected)",
                    values.len(),
                    specs.len()
                ),
            ));
        }
        // Types first (to size the event), then the code.
        let tys = self.key_types(values)?;
        for ((conv, ty), v) in specs.iter().zip(&tys).zip(values) {
            let is_str = matches!(ty, Ty::Str(_) | Ty::Buf(_));
            let wants_str = matches!(conv, 's' | 'r');
            if wants_str != is_str
                && !(wants_str
                    && matches!(
                        ty,
                        Ty::Probe
                            | Ty::Kstack
                            | Ty::Ustack
                            | Ty::Ksym
                            | Ty::Usym
                            | Ty::Inet
                            | Ty::MacAddr
                            | Ty::Username
                            | Ty::Strftime(_)
                            | Ty::Tuple { .. }
                    ))
            {
                return Err(LangError::new(
                    v.span,
                    format!(
                        "printf: %{conv} specifier expects a value of type {}, got '{ty}'",
                        if wants_str { "string" } else { "integer" }
                    ),
                ));
            }
        }
        let size = 16 + tys.iter().map(|t| t.size()).sum::<usize>();
        let off = self.alloc(size)?;
        let spec = PrintfSpec {
            format: format.clone(),
            args: tys.clone(),
            cat,
        };
        let id = intern(&mut self.reg.printfs, spec) as u64;
        self.asm
            .emit(store_imm(Size::DW, FP, off, event_kind::PRINTF as i32));
        self.asm.emit(store_imm(Size::DW, FP, off + 8, id as i32));
        let mut at = off + 16;
        for (v, ty) in values.iter().zip(&tys) {
            let val = self.expr(v)?;
            self.store_val(val, at, *ty);
            at += ty.size() as i16;
        }
        self.output(off, size);
        Ok(())
    }
}
