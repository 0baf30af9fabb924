//! Code generation of expressions: literals, variables, map reads,
//! builtins (a name that is none is a kernel constant: `TASK_RUNNING`),
//! operators, ternaries and tuples (`(a, b)`, `t.0`). Integers end in `r0`; strings in a stack
//! buffer (see `codegen`). Fields and casts are in `fields`, functions in
//! `calls`. Comparisons are signed only when both sides are signed, as
//! bpftrace's: `pid`, `nsecs`, `retval`, `arg0` and unsigned fields and
//! casts are unsigned, literals signed.

use super::ast::{BinOp, Expr, ExprKind, UnOp};
use super::codegen::{Gen, Loc, ProgKind, Val, alu_of, literal_size};
use super::error::LangError;
use super::insn::*;
use super::stacks::MAX_DEPTH;
use super::types::{MapKind, Ty};

/// `str()`'s default size, bpftrace's `BPFTRACE_STRLEN`.
pub(crate) const STRLEN: usize = 64;

/// x86-64 `struct pt_regs` offsets of the argument registers and rax.
const PT_REGS_ARGS: [i16; 6] = [112, 104, 96, 88, 72, 64];
const PT_REGS_RAX: i16 = 80;

impl Gen<'_> {
    pub(crate) fn expr(&mut self, e: &Expr) -> Result<Val, LangError> {
        self.int_bytes = 8;
        match &e.kind {
            ExprKind::Int(v) => {
                self.const_int(R0, *v);
                Ok(Val::int())
            }
            ExprKind::Str(s) => {
                let size = literal_size(s);
                let off = self.alloc(size)?;
                let mut bytes = s.as_bytes().to_vec();
                bytes.resize(size, 0);
                for (i, chunk) in bytes.chunks(4).enumerate() {
                    let word = i32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
                    self.asm
                        .emit(store_imm(Size::W, FP, off + 4 * i as i16, word));
                }
                Ok(Val {
                    ty: Ty::Str(size),
                    loc: Loc::Stack(off),
                })
            }
            ExprKind::Var(name) => {
                let Some((ty, off)) = self.vars.get(name).copied() else {
                    return Err(LangError::new(
                        e.span,
                        format!("Undefined or undeclared variable: ${name}"),
                    ));
                };
                self.int_bytes = self.var_bytes.get(name).copied().unwrap_or(8);
                if ty.in_stack() {
                    return Ok(Val {
                        ty,
                        loc: Loc::Stack(off),
                    });
                }
                self.asm.emit(load(Size::DW, R0, FP, off));
                Ok(Val { ty, loc: Loc::R0 })
            }
            ExprKind::Map { name, keys } => self.map_read(e, name, keys),
            ExprKind::Ident(name) => self.builtin(e, name),
            ExprKind::Field { base, field } => self.field(e, base, field),
            ExprKind::Call { name, args } => self.call_expr(e, name, args),
            ExprKind::Cast { ty, expr } => self.cast(e, ty, expr),
            ExprKind::Unary { op, expr } => {
                if *op == UnOp::Deref {
                    return self.deref(e, expr);
                }
                let v = self.expr(expr)?;
                self.want_int(v, expr)?;
                // `-x` and `~x` keep x's type, `!x` is unsigned.
                let ty = if v.ty.is_signed() { Ty::Int } else { Ty::Uint };
                match op {
                    UnOp::Neg => self.asm.emit(alu_imm(Alu::Neg, R0, 0)),
                    UnOp::BitNot => self.asm.emit(alu_imm(Alu::Xor, R0, -1)),
                    UnOp::Not | UnOp::Deref => {
                        let zero = self.asm.label();
                        self.asm.emit(mov_reg(R1, R0));
                        self.asm.emit(mov_imm(R0, 1));
                        self.asm.jump_if_imm(Jmp::Eq, R1, 0, zero);
                        self.asm.emit(mov_imm(R0, 0));
                        self.asm.bind(zero);
                        return Ok(Val::int_of(false));
                    }
                }
                Ok(Val { ty, loc: Loc::R0 })
            }
            ExprKind::Binary { op, lhs, rhs } => self.binary(e, *op, lhs, rhs),
            ExprKind::Tuple(elems) => self.tuple(elems),
            ExprKind::Ternary {
                cond,
                then,
                otherwise,
            } => self.ternary(cond, then, otherwise),
            ExprKind::IncDec {
                target,
                increment,
                prefix,
            } => {
                let op = if *increment { BinOp::Add } else { BinOp::Sub };
                self.update_int(target, op, None, !prefix)
            }
        }
    }

    fn map_read(&mut self, e: &Expr, name: &str, keys: &[Expr]) -> Result<Val, LangError> {
        let key_tys = self.key_types(keys)?;
        let map = self.map_for(name, &key_tys, None, e.span)?;
        let MapKind::Value(ty) = self.reg.maps[map].kind else {
            return Err(LangError::new(
                e.span,
                format!(
                    "reading the aggregation @{name} ({}) in the kernel is not supported",
                    self.reg.maps[map].kind.name()
                ),
            ));
        };
        let key = self.build_key(map, keys)?;
        let missing = self.asm.label();
        let end = self.asm.label();
        if let Ty::Str(size) = ty {
            let buf = self.alloc(size)?;
            self.zero(buf, size);
            self.lookup(map, key);
            self.asm.jump_if_imm(Jmp::Eq, R0, 0, missing);
            for i in (0..size).step_by(8) {
                self.asm.emit(load(Size::DW, R1, R0, i as i16));
                self.asm.emit(store(Size::DW, FP, buf + i as i16, R1));
            }
            self.asm.bind(missing);
            self.asm.bind(end);
            return Ok(Val {
                ty,
                loc: Loc::Stack(buf),
            });
        }
        self.lookup(map, key);
        self.asm.jump_if_imm(Jmp::Eq, R0, 0, missing);
        self.asm.emit(load(Size::DW, R0, R0, 0));
        self.asm.jump(end);
        self.asm.bind(missing);
        self.asm.emit(mov_imm(R0, 0));
        self.asm.bind(end);
        Ok(Val { ty, loc: Loc::R0 })
    }

    fn builtin(&mut self, e: &Expr, name: &str) -> Result<Val, LangError> {
        let shift_out_high = |g: &mut Self| {
            g.asm.emit(alu_imm(Alu::Lsh, R0, 32));
            g.asm.emit(alu_imm(Alu::Rsh, R0, 32));
        };
        match name {
            "pid" | "tid" => {
                self.asm.emit(call(helper::GET_CURRENT_PID_TGID));
                if name == "pid" {
                    self.asm.emit(alu_imm(Alu::Rsh, R0, 32));
                } else {
                    shift_out_high(self);
                }
            }
            "username" => {
                self.asm.emit(call(helper::GET_CURRENT_UID_GID));
                shift_out_high(self);
                return Ok(Val {
                    ty: Ty::Username,
                    loc: Loc::R0,
                });
            }
            "uid" | "gid" => {
                self.asm.emit(call(helper::GET_CURRENT_UID_GID));
                if name == "gid" {
                    self.asm.emit(alu_imm(Alu::Rsh, R0, 32));
                } else {
                    shift_out_high(self);
                }
            }
            "cpu" => self.asm.emit(call(helper::GET_SMP_PROCESSOR_ID)),
            "nsecs" => self.asm.emit(call(helper::KTIME_GET_NS)),
            "elapsed" => {
                self.asm.emit(call(helper::KTIME_GET_NS));
                self.asm.emit_all(&ld_imm64(R1, 0, self.env.start_ns));
                self.asm.emit(alu_reg(Alu::Sub, R0, R1));
            }
            "cgroup" => self.asm.emit(call(helper::GET_CURRENT_CGROUP_ID)),
            "rand" => self.asm.emit(call(helper::GET_PRANDOM_U32)),
            "numaid" => self.asm.emit(call(helper::GET_NUMA_NODE_ID)),
            "cpid" => match self.env.cpid {
                Some(cpid) => self.asm.emit(mov_imm(R0, cpid as i32)),
                None => {
                    return Err(LangError::new(
                        e.span,
                        "cpid cannot be used without child command",
                    ));
                }
            },
            "curtask" => return Ok(self.curtask()),
            "func" => {
                if let Some(size) = self.env.shared {
                    return self.cookie_func(size);
                }
                let Some(func) = self.env.func else {
                    return Err(LangError::new(
                        e.span,
                        "The func builtin can only be used with kprobe and uprobe probes",
                    ));
                };
                return self.expr(&Expr {
                    kind: ExprKind::Str(func.to_string()),
                    span: e.span,
                });
            }
            "comm" => {
                let off = self.alloc(16)?;
                self.fp_addr(R1, off);
                self.asm.emit(mov_imm(R2, 16));
                self.asm.emit(call(helper::GET_CURRENT_COMM));
                return Ok(Val {
                    ty: Ty::Str(16),
                    loc: Loc::Stack(off),
                });
            }
            "probe" => {
                if self.env.shared.is_some() {
                    self.attach_cookie();
                } else {
                    self.const_int(R0, self.env.probe_id as i64);
                }
                return Ok(Val {
                    ty: Ty::Probe,
                    loc: Loc::R0,
                });
            }
            "retval" => {
                if let (Some(sig), true) = (self.env.signature, self.env.is_return) {
                    return self.context_word(e, sig.params.len(), sig.ret);
                }
                if !(self.env.kind == ProgKind::Kprobe && self.env.is_return) {
                    return Err(LangError::new(
                        e.span,
                        "The retval builtin can only be used with kretprobe, uretprobe and fexit probes",
                    ));
                }
                self.asm.emit(load(Size::DW, R0, R6, PT_REGS_RAX));
                return Ok(Val::int_of(false));
            }
            "kstack" | "ustack" => return self.stack_builtin(e, name == "ustack", MAX_DEPTH),
            "args" => {
                return Err(LangError::new(
                    e.span,
                    "args must be followed by a field: args.NAME",
                ));
            }
            _ => {
                if let Some(n) = name
                    .strip_prefix("arg")
                    .and_then(|n| n.parse::<usize>().ok())
                {
                    if let Some(sig) = self.env.signature
                        && let Some((_, ty)) = sig.params.get(n)
                    {
                        return self.context_word(e, n, *ty);
                    }
                    if self.env.kind != ProgKind::Kprobe || self.env.is_return || n >= 6 {
                        return Err(LangError::new(
                            e.span,
                            format!(
                                "The {name} builtin can only be used with kprobe and uprobe probes (arg0-arg5)"
                            ),
                        ));
                    }
                    self.asm.emit(load(Size::DW, R0, R6, PT_REGS_ARGS[n]));
                    return Ok(Val::int_of(false));
                }
                // A kernel enum's constant, or a header's (TASK_RUNNING).
                let Some(value) = self.env.types.constant(name) else {
                    return Err(LangError::new(
                        e.span,
                        format!("Unknown identifier: '{name}'"),
                    ));
                };
                self.const_int(R0, value);
                return Ok(Val::int());
            }
        }
        // pid, tid, uid, gid, cpu, nsecs, elapsed, cgroup, rand, numaid.
        Ok(Val::int_of(false))
    }

    /// The attach cookie (a kprobe.multi link's index of the probe) in r0.
    fn attach_cookie(&mut self) {
        self.asm.emit(mov_reg(R1, R6));
        self.asm.emit(call(helper::GET_ATTACH_COOKIE));
    }

    /// `func` in a kprobe.multi link's program: the name `Fds::funcs` holds
    /// at the attach cookie, copied to a stack string of `size` bytes
    /// (zeros if the map has none).
    fn cookie_func(&mut self, size: usize) -> Result<Val, LangError> {
        let off = self.alloc(size)?;
        let words = (size / 8) as i16;
        for i in 0..words {
            self.asm.emit(store_imm(Size::DW, FP, off + 8 * i, 0));
        }
        let key = self.alloc(8)?;
        self.attach_cookie();
        self.asm.emit(store(Size::W, FP, key, R0));
        self.asm.emit_all(&ld_imm64(
            R1,
            BPF_PSEUDO_MAP_FD,
            self.fds.funcs as u32 as u64,
        ));
        self.fp_addr(R2, key);
        self.asm.emit(call(helper::MAP_LOOKUP_ELEM));
        let done = self.asm.label();
        self.asm.jump_if_imm(Jmp::Eq, R0, 0, done);
        for i in 0..words {
            self.asm.emit(load(Size::DW, R1, R0, 8 * i));
            self.asm.emit(store(Size::DW, FP, off + 8 * i, R1));
        }
        self.asm.bind(done);
        Ok(Val {
            ty: Ty::Str(size),
            loc: Loc::Stack(off),
        })
    }

    pub(crate) fn stack_builtin(
        &mut self,
        e: &Expr,
        user: bool,
        depth: usize,
    ) -> Result<Val, LangError> {
        if self.env.kind == ProgKind::RawTracepoint {
            return Err(LangError::new(
                e.span,
                "stacks are not available in BEGIN and END",
            ));
        }
        self.reg.uses_stacks = true;
        const BPF_F_USER_STACK: i32 = 1 << 8;
        self.asm.emit(mov_reg(R1, R6));
        self.asm.emit_all(&ld_imm64(
            R2,
            BPF_PSEUDO_MAP_FD,
            self.fds.stacks as u32 as u64,
        ));
        self.asm
            .emit(mov_imm(R3, if user { BPF_F_USER_STACK } else { 0 }));
        self.asm.emit(call(helper::GET_STACKID));
        // The id in the low half, the depth to print in the high one.
        self.asm.emit(alu_imm(Alu::Lsh, R0, 32));
        self.asm.emit(alu_imm(Alu::Rsh, R0, 32));
        self.asm.emit_all(&ld_imm64(R1, 0, (depth as u64) << 32));
        self.asm.emit(alu_reg(Alu::Or, R0, R1));
        if !user {
            return Ok(Val {
                ty: Ty::Kstack,
                loc: Loc::R0,
            });
        }
        self.with_pid(Ty::Ustack)
    }

    /// r0 and the current process id in a 16-byte buffer: a value of
    /// type `ty` (a user stack or address) named later in that process.
    pub(crate) fn with_pid(&mut self, ty: Ty) -> Result<Val, LangError> {
        let off = self.alloc(16)?;
        self.asm.emit(store(Size::DW, FP, off, R0));
        self.asm.emit(call(helper::GET_CURRENT_PID_TGID));
        self.asm.emit(alu_imm(Alu::Rsh, R0, 32));
        self.asm.emit(store(Size::DW, FP, off + 8, R0));
        Ok(Val {
            ty,
            loc: Loc::Stack(off),
        })
    }

    fn binary(&mut self, e: &Expr, op: BinOp, lhs: &Expr, rhs: &Expr) -> Result<Val, LangError> {
        if matches!(op, BinOp::LogAnd | BinOp::LogOr) {
            let short = self.asm.label();
            let end = self.asm.label();
            // && stops at the first 0, || at the first non-zero.
            let (stop_on, stop_value) = if op == BinOp::LogAnd {
                (Jmp::Eq, 0)
            } else {
                (Jmp::Ne, 1)
            };
            let mut ty = Ty::Int;
            for side in [lhs, rhs] {
                let v = self.expr(side)?;
                self.want_int(v, side)?;
                ty = ty.arith(v.ty);
                self.asm.jump_if_imm(stop_on, R0, 0, short);
            }
            self.asm.emit(mov_imm(R0, 1 - stop_value));
            self.asm.jump(end);
            self.asm.bind(short);
            self.asm.emit(mov_imm(R0, stop_value));
            self.asm.bind(end);
            return Ok(Val { ty, loc: Loc::R0 });
        }
        let l = self.expr(lhs)?;
        let l_slot = match l.loc {
            Loc::R0 => Some(self.spill()?),
            Loc::Stack(_) => None,
        };
        let r = self.expr(rhs)?;
        let mismatch = || {
            LangError::new(
                e.span,
                format!(
                    "Type mismatch for '{}': comparing '{}' with '{}'",
                    op.symbol(),
                    l.ty,
                    r.ty
                ),
            )
        };
        if let (Ty::Str(a), Ty::Str(b), Loc::Stack(la), Loc::Stack(rb)) = (l.ty, r.ty, l.loc, r.loc)
        {
            if !matches!(op, BinOp::Eq | BinOp::Ne) {
                return Err(mismatch());
            }
            self.str_equal(la, rb, a.min(b), op == BinOp::Eq);
            return Ok(Val::int());
        }
        let int_like = |t: Ty| t.is_int() || t == Ty::Probe;
        if !int_like(l.ty) || !int_like(r.ty) {
            return Err(mismatch());
        }
        let l_slot = l_slot.ok_or_else(mismatch)?;
        self.asm.emit(load(Size::DW, R1, FP, l_slot));
        let ty = l.ty.arith(r.ty);
        let result = Val { ty, loc: Loc::R0 };
        if let Some(alu) = alu_of(op) {
            self.asm.emit(alu_reg(alu, R1, R0));
            self.asm.emit(mov_reg(R0, R1));
            return Ok(result);
        }
        let signed = ty.is_signed();
        let jmp = match op {
            BinOp::Eq => Jmp::Eq,
            BinOp::Ne => Jmp::Ne,
            BinOp::Lt if signed => Jmp::Slt,
            BinOp::Le if signed => Jmp::Sle,
            BinOp::Gt if signed => Jmp::Sgt,
            BinOp::Ge if signed => Jmp::Sge,
            BinOp::Lt => Jmp::Lt,
            BinOp::Le => Jmp::Le,
            BinOp::Gt => Jmp::Gt,
            _ => Jmp::Ge,
        };
        let yes = self.asm.label();
        self.asm.emit(mov_reg(R2, R0));
        self.asm.emit(mov_imm(R0, 1));
        self.asm.jump_if_reg(jmp, R1, R2, yes);
        self.asm.emit(mov_imm(R0, 0));
        self.asm.bind(yes);
        Ok(result)
    }

    /// r0 = whether the strings at `a` and `b` are equal over their first
    /// `n` bytes or up to a common NUL (`want_equal`), or differ.
    pub(super) fn str_equal(&mut self, a: i16, b: i16, n: usize, want_equal: bool) {
        let differ = self.asm.label();
        let same = self.asm.label();
        let end = self.asm.label();
        for i in 0..n as i16 {
            self.asm.emit(load(Size::B, R1, FP, a + i));
            self.asm.emit(load(Size::B, R2, FP, b + i));
            self.asm.jump_if_reg(Jmp::Ne, R1, R2, differ);
            self.asm.jump_if_imm(Jmp::Eq, R1, 0, same);
        }
        self.asm.bind(same);
        self.asm.emit(mov_imm(R0, want_equal as i32));
        self.asm.jump(end);
        self.asm.bind(differ);
        self.asm.emit(mov_imm(R0, !want_equal as i32));
        self.asm.bind(end);
    }

    fn ternary(&mut self, cond: &Expr, then: &Expr, otherwise: &Expr) -> Result<Val, LangError> {
        let c = self.expr(cond)?;
        self.want_int(c, cond)?;
        let tys = self.key_types(&[then.clone(), otherwise.clone()])?;
        let (a, b) = (tys[0], tys[1]);
        if !a.compatible(b) {
            return Err(LangError::new(
                then.span.to(otherwise.span),
                format!("Ternary operator branches have different types: '{a}' and '{b}'"),
            ));
        }
        let ty = a.merge(b);
        let result = match ty {
            t if t.in_stack() => Some(self.alloc(ty.size())?),
            _ => None,
        };
        let other = self.asm.label();
        let end = self.asm.label();
        self.asm.jump_if_imm(Jmp::Eq, R0, 0, other);
        for (i, branch) in [then, otherwise].into_iter().enumerate() {
            let v = self.expr(branch)?;
            if let Some(buf) = result {
                self.store_val(v, buf, ty);
            }
            if i == 0 {
                self.asm.jump(end);
                self.asm.bind(other);
            }
        }
        self.asm.bind(end);
        Ok(Val {
            ty,
            loc: result.map_or(Loc::R0, Loc::Stack),
        })
    }
}

impl Gen<'_> {
    /// `(a, b, ...)`: the values one after another in a stack buffer,
    /// typed by the registry's tuple of the same element types.
    fn tuple(&mut self, elems: &[Expr]) -> Result<Val, LangError> {
        let tys = self.key_types(elems)?;
        if let Some((t, e)) = tys
            .iter()
            .zip(elems)
            .find(|(t, _)| matches!(t, Ty::Record(_)))
        {
            return Err(LangError::new(
                e.span,
                format!("a tuple cannot hold a '{t}'"),
            ));
        }
        let size: usize = tys.iter().map(|t| t.size()).sum();
        let id = match self.reg.tuples.iter().position(|t| *t == tys) {
            Some(i) => i,
            None => {
                self.reg.tuples.push(tys.clone());
                self.reg.tuples.len() - 1
            }
        };
        let buf = self.alloc(size)?;
        let mut at = buf;
        for (elem, ty) in elems.iter().zip(&tys) {
            let v = self.expr(elem)?;
            self.store_val(v, at, *ty);
            at += ty.size() as i16;
        }
        Ok(Val {
            ty: Ty::Tuple {
                id: id as u32,
                size: size as u32,
            },
            loc: Loc::Stack(buf),
        })
    }

    /// `t.N`: element N of tuple `t` (of registry type `id`).
    pub(super) fn tuple_element(
        &mut self,
        e: &Expr,
        t: Val,
        id: u32,
        field: &str,
    ) -> Result<Val, LangError> {
        let tys = self
            .reg
            .tuples
            .get(id as usize)
            .cloned()
            .unwrap_or_default();
        let (Some(index), Loc::Stack(base)) = (field.parse::<usize>().ok(), t.loc) else {
            return Err(LangError::new(
                e.span,
                format!("a tuple has no field '{field}'"),
            ));
        };
        let Some(&ty) = tys.get(index) else {
            return Err(LangError::new(
                e.span,
                format!(
                    "Invalid tuple index: {index}. Found max: {}",
                    tys.len().saturating_sub(1)
                ),
            ));
        };
        let at = base + tys[..index].iter().map(|t| t.size()).sum::<usize>() as i16;
        if ty.in_stack() {
            return Ok(Val {
                ty,
                loc: Loc::Stack(at),
            });
        }
        self.asm.emit(load(Size::DW, R0, FP, at));
        Ok(Val { ty, loc: Loc::R0 })
    }
}
