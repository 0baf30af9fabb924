//! Code generation of fields and casts: tracepoint arguments
//! (`args.NAME`, from the event's format), kernel structs through BTF
//! (`$task->real_parent->pid`, `args->rqtp->tv_sec`), `(struct X *)`
//! and integer casts, `*ptr`, and `curtask`.
//!
//! Tracepoint fields are read from the context directly when the
//! verifier allows it (8 bytes past the start, aligned to their size),
//! otherwise through `bpf_probe_read_kernel` into the stack; char arrays
//! become strings. A struct pointer field (`struct __kernel_timespec *`)
//! gets the BTF type of its struct, so `->` goes on through it.
//!
//! Kernel memory is read with `bpf_probe_read`, which on x86-64 reads
//! user pointers too (syscall arguments), as bpftrace's generated code
//! does. A struct is not read: its value is its address, and only the
//! scalar, pointer or char array at the end of a `->` chain is copied.

use super::ast::{CastTy, Expr, ExprKind};
use super::btf::Kind;
use super::codegen::{Gen, Loc, Val};
use super::error::LangError;
use super::expr::STRLEN;
use super::insn::*;
use super::types::{Ty, str_size};
use crate::event::format::FieldKind;

impl Gen<'_> {
    pub(super) fn field(&mut self, e: &Expr, base: &Expr, field: &str) -> Result<Val, LangError> {
        if base.kind != ExprKind::Ident("args".into()) {
            let v = self.expr(base)?;
            if let Ty::Tuple { id, .. } = v.ty {
                return self.tuple_element(e, v, id, field);
            }
            return self.btf_field(e, v, field);
        }
        if let Some(sig) = self.env.signature {
            let Some(i) = sig.params.iter().position(|(name, _)| name == field) else {
                return Err(LangError::new(
                    e.span,
                    format!(
                        "Can't find function parameter {field} of {} (it has: {})",
                        self.env.func.unwrap_or(""),
                        sig.params
                            .iter()
                            .map(|(n, _)| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            return self.context_word(e, i, sig.params[i].1);
        }
        let Some(format) = self.env.format else {
            return Err(LangError::new(
                base.span,
                "The args builtin can only be used with tracepoint and fentry/fexit probes",
            ));
        };
        let Some(f) = format.fields.iter().find(|f| f.name == field) else {
            return Err(LangError::new(
                e.span,
                format!(
                    "Struct/union of type 'struct _tracepoint_{}_{}' does not contain a field named '{field}'",
                    format.system, format.name
                ),
            ));
        };
        let off = i16::try_from(f.offset)
            .map_err(|_| LangError::new(e.span, "field offset out of range"))?;
        match f.kind {
            FieldKind::Scalar => {
                let size = Size::of(f.size).ok_or_else(|| {
                    LangError::new(
                        e.span,
                        format!("field {field} of {} bytes is not supported", f.size),
                    )
                })?;
                if f.offset >= 8 && f.offset % f.size == 0 {
                    self.asm.emit(load(size, R0, R6, off));
                } else {
                    let tmp = self.alloc(8)?;
                    self.asm.emit(store_imm(Size::DW, FP, tmp, 0));
                    self.fp_addr(R1, tmp);
                    self.asm.emit(mov_imm(R2, f.size as i32));
                    self.asm.emit(mov_reg(R3, R6));
                    self.asm.emit(alu_imm(Alu::Add, R3, off as i32));
                    self.asm.emit(call(helper::PROBE_READ_KERNEL));
                    self.asm.emit(load(Size::DW, R0, FP, tmp));
                }
                if f.signed && f.size < 8 {
                    self.extend(f.size, true);
                }
                self.int_bytes = f.size;
                let int = Val::int_of(f.signed).ty;
                Ok(Val {
                    ty: self.pointee_of(&f.type_name).map_or(int, Ty::Ptr),
                    loc: Loc::R0,
                })
            }
            FieldKind::Array { .. } if f.is_string() => {
                let size = str_size(f.size);
                let buf = self.alloc(size)?;
                self.zero(buf, size);
                self.fp_addr(R1, buf);
                self.asm.emit(mov_imm(R2, f.size as i32));
                self.asm.emit(mov_reg(R3, R6));
                self.asm.emit(alu_imm(Alu::Add, R3, off as i32));
                self.asm.emit(call(helper::PROBE_READ_KERNEL));
                Ok(Val {
                    ty: Ty::Str(size),
                    loc: Loc::Stack(buf),
                })
            }
            FieldKind::DataLoc { .. } if f.is_string() => {
                let buf = self.alloc(STRLEN)?;
                self.zero(buf, STRLEN);
                self.asm.emit(load(Size::W, R3, R6, off));
                self.asm.emit(alu_imm(Alu::And, R3, 0xffff));
                self.asm.emit(alu_reg(Alu::Add, R3, R6));
                self.fp_addr(R1, buf);
                self.asm.emit(mov_imm(R2, STRLEN as i32));
                self.asm.emit(call(helper::PROBE_READ_STR));
                Ok(Val {
                    ty: Ty::Str(STRLEN),
                    loc: Loc::Stack(buf),
                })
            }
            _ => Err(LangError::new(
                e.span,
                format!("the array field {field} is not supported"),
            )),
        }
    }

    /// r0 = u64 number `index` of an fentry/fexit context (an argument, or
    /// the return value after them), typed by its BTF type: an integer
    /// extended from its size, a pointer to its pointee.
    pub(super) fn context_word(
        &mut self,
        e: &Expr,
        index: usize,
        type_id: u32,
    ) -> Result<Val, LangError> {
        let off = i16::try_from(index * 8)
            .map_err(|_| LangError::new(e.span, "argument number out of range"))?;
        self.asm.emit(load(Size::DW, R0, R6, off));
        let btf = self.need_btf(e)?;
        Ok(match btf.kind(type_id) {
            Kind::Int { size, signed } | Kind::Enum { size, signed } => {
                self.extend(size, signed);
                Val::int_of(signed)
            }
            Kind::Ptr(to) => Val {
                ty: Ty::Ptr(btf.resolve(to)),
                loc: Loc::R0,
            },
            _ => Val::int(),
        })
    }

    /// Sign- or zero-extends the low `bytes` of r0 to 64 bits.
    pub(crate) fn extend(&mut self, bytes: usize, signed: bool) {
        self.int_bytes = bytes.clamp(1, 8);
        if bytes >= 8 {
            return;
        }
        let bits = 64 - 8 * bytes as i32;
        self.asm.emit(alu_imm(Alu::Lsh, R0, bits));
        let shift = if signed { Alu::Arsh } else { Alu::Rsh };
        self.asm.emit(alu_imm(shift, R0, bits));
    }

    /// The BTF id of the struct a tracepoint field of C type `type_name`
    /// points to (`struct __kernel_timespec *`), if it is one.
    fn pointee_of(&self, type_name: &str) -> Option<u32> {
        let t = type_name.trim().trim_start_matches("const ").trim();
        let inner = t.strip_suffix('*')?.trim();
        let name = inner
            .strip_prefix("struct ")
            .or_else(|| inner.strip_prefix("union "))?
            .trim();
        self.env.types.btf()?.find_struct(name)
    }

    /// The kernel's types, or the error saying they are missing.
    fn need_btf(&self, e: &Expr) -> Result<&super::btf::Btf, LangError> {
        self.env.types.btf().ok_or_else(|| {
            LangError::new(
                e.span,
                "kernel struct types need BTF (/sys/kernel/btf/vmlinux is missing)",
            )
        })
    }

    /// `base->field` or `base.field` of a kernel struct (a pointer to it,
    /// or the struct itself held by its address in r0).
    fn btf_field(&mut self, e: &Expr, base: Val, field: &str) -> Result<Val, LangError> {
        let (Ty::Ptr(id) | Ty::Record(id)) = base.ty else {
            return Err(LangError::new(
                e.span,
                format!(
                    "'{}' has no fields: cast it to a struct pointer first",
                    base.ty
                ),
            ));
        };
        let btf = self.need_btf(e)?;
        let Some(m) = btf.member(id, field) else {
            return Err(LangError::new(
                e.span,
                format!(
                    "Struct/union of type 'struct {}' does not contain a field named '{field}'",
                    btf.name(id)
                ),
            ));
        };
        let kind = btf.kind(m.type_id);
        let byte = (m.bit_offset / 8) as i32;
        self.asm.emit(alu_imm(Alu::Add, R0, byte));
        if m.bits > 0 {
            // A bitfield: 8 bytes from its first byte, shifted down.
            let signed = matches!(kind, Kind::Int { signed: true, .. });
            self.read_at_r0(8)?;
            let low = m.bit_offset % 8;
            self.asm
                .emit(alu_imm(Alu::Lsh, R0, (64 - low - m.bits) as i32));
            let shift = if signed { Alu::Arsh } else { Alu::Rsh };
            self.asm.emit(alu_imm(shift, R0, (64 - m.bits) as i32));
            return Ok(Val::int_of(signed));
        }
        self.value_at_r0(e, m.type_id, kind)
    }

    /// The value of BTF type `type_id` at the address in r0.
    fn value_at_r0(&mut self, e: &Expr, type_id: u32, kind: Kind) -> Result<Val, LangError> {
        let btf = self.need_btf(e)?;
        match kind {
            Kind::Struct { .. } => Ok(Val {
                ty: Ty::Record(btf.resolve(type_id)),
                loc: Loc::R0,
            }),
            Kind::Int { size, signed } | Kind::Enum { size, signed } if size <= 8 => {
                self.read_at_r0(size)?;
                self.extend(size, signed);
                Ok(Val::int_of(signed))
            }
            Kind::Ptr(to) => {
                let to = btf.resolve(to);
                self.read_at_r0(8)?;
                Ok(Val {
                    ty: Ty::Ptr(to),
                    loc: Loc::R0,
                })
            }
            Kind::Array { elem, len } if btf.size(elem) == 1 => {
                let size = str_size(len.clamp(1, STRLEN * 4) + 1);
                let buf = self.alloc(size)?;
                self.zero(buf, size);
                self.asm.emit(mov_reg(R3, R0));
                self.fp_addr(R1, buf);
                self.asm.emit(mov_imm(R2, len.clamp(1, STRLEN * 4) as i32));
                self.asm.emit(call(helper::PROBE_READ));
                Ok(Val {
                    ty: Ty::Str(size),
                    loc: Loc::Stack(buf),
                })
            }
            _ => Err(LangError::new(
                e.span,
                format!("reading a '{}' is not supported", btf.name(type_id)),
            )),
        }
    }

    /// r0 = the `size` bytes (1-8) at the address in r0.
    fn read_at_r0(&mut self, size: usize) -> Result<(), LangError> {
        let tmp = self.alloc(8)?;
        self.asm.emit(mov_reg(R3, R0));
        self.asm.emit(store_imm(Size::DW, FP, tmp, 0));
        self.fp_addr(R1, tmp);
        self.asm.emit(mov_imm(R2, size as i32));
        self.asm.emit(call(helper::PROBE_READ));
        self.asm.emit(load(Size::DW, R0, FP, tmp));
        Ok(())
    }

    /// `*e`: the value `e` points to (8 bytes for a plain integer).
    pub(super) fn deref(&mut self, e: &Expr, inner: &Expr) -> Result<Val, LangError> {
        let v = self.expr(inner)?;
        self.want_int(v, inner)?;
        match v.ty {
            Ty::Ptr(id) if id != 0 => {
                let kind = self.need_btf(e)?.kind(id);
                self.value_at_r0(e, id, kind)
            }
            _ => {
                self.read_at_r0(8)?;
                Ok(Val::int())
            }
        }
    }

    /// `(TYPE)e`.
    pub(super) fn cast(&mut self, e: &Expr, ty: &CastTy, inner: &Expr) -> Result<Val, LangError> {
        let v = self.expr(inner)?;
        self.want_int(v, inner)?;
        match ty {
            CastTy::Int { bytes, signed } => {
                self.extend(*bytes, *signed);
                Ok(Val::int_of(*signed))
            }
            CastTy::StructPtr(name) => {
                let id = self.need_btf(e)?.find_struct(name).ok_or_else(|| {
                    LangError::new(e.span, format!("Unknown struct/union: 'struct {name}'"))
                })?;
                Ok(Val {
                    ty: Ty::Ptr(id),
                    loc: Loc::R0,
                })
            }
        }
    }

    /// `curtask`: the current `struct task_struct *`.
    pub(super) fn curtask(&mut self) -> Val {
        self.asm.emit(call(helper::GET_CURRENT_TASK));
        let id = self
            .env
            .types
            .btf()
            .and_then(|b| b.find_struct("task_struct"))
            .unwrap_or(0);
        Val {
            ty: Ty::Ptr(id),
            loc: Loc::R0,
        }
    }
}
