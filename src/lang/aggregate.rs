//! Code generation of map updates: the aggregations (`count`, `sum`,
//! `min`, `max`, `avg`, `stats`, `hist`, `lhist`) on per-CPU maps, their
//! buckets, and `x++`/`x += v` on variables and integer maps.
//!
//! Aggregations need no atomics: each CPU updates its own slot of a
//! per-CPU map, and the slots are combined when the map is printed. A
//! missing element is created with the first value (`min`/`max` keep a
//! "set" word next to the value, as a CPU's empty slot reads 0).

use super::ast::{BinOp, Expr, ExprKind};
use super::codegen::{Gen, Loc, Val, alu_of};
use super::error::{LangError, Span};
use super::insn::*;
use super::types::{MapKind, Ty};

impl Gen<'_> {
    /// `@m[k] = count()` and the other aggregations, on a per-CPU map.
    pub(crate) fn aggregate(
        &mut self,
        name: &str,
        keys: &[Expr],
        func: &str,
        args: &[Expr],
        span: Span,
    ) -> Result<(), LangError> {
        let want = |n: usize| -> Result<(), LangError> {
            if args.len() == n {
                Ok(())
            } else {
                Err(LangError::new(
                    span,
                    format!(
                        "{func}() requires {n} argument{}",
                        if n == 1 { "" } else { "s" }
                    ),
                ))
            }
        };
        let kind = match func {
            "count" => {
                want(0)?;
                MapKind::Count
            }
            "sum" => MapKind::Sum,
            "min" => MapKind::Min,
            "max" => MapKind::Max,
            "avg" => MapKind::Avg,
            "stats" => MapKind::Stats,
            "hist" => MapKind::Hist,
            _ => {
                want(4)?;
                let lit = |e: &Expr| match e.kind {
                    ExprKind::Int(v) => Ok(v),
                    _ => Err(LangError::new(
                        e.span,
                        "lhist() min, max and step must be integer literals",
                    )),
                };
                let (min, max, step) = (lit(&args[1])?, lit(&args[2])?, lit(&args[3])?);
                if step <= 0 || max <= min || (max - min) / step > 1000 {
                    return Err(LangError::new(
                        span,
                        "lhist() needs step > 0, max > min and at most 1000 buckets",
                    ));
                }
                MapKind::Lhist { min, max, step }
            }
        };
        if kind != MapKind::Count && !matches!(kind, MapKind::Lhist { .. }) {
            want(1)?;
        }
        let key_tys = self.key_types(keys)?;
        let map = self.map_for(name, &key_tys, Some(kind), span)?;
        let key = self.build_key(map, keys)?;
        let arg = match args.first() {
            Some(a) => {
                let v = self.expr(a)?;
                self.want_int(v, a)?;
                Some(self.spill()?)
            }
            None => None,
        };
        let bucket_at = key + self.reg.maps[map].user_key_size() as i16;
        match kind {
            MapKind::Hist => {
                self.asm.emit(load(Size::DW, R1, FP, arg.unwrap_or(key)));
                self.log2_bucket();
                self.asm.emit(store(Size::DW, FP, bucket_at, R0));
            }
            MapKind::Lhist { min, max, step } => {
                self.asm.emit(load(Size::DW, R1, FP, arg.unwrap_or(key)));
                self.linear_bucket(min, max, step);
                self.asm.emit(store(Size::DW, FP, bucket_at, R0));
            }
            _ => {}
        }
        let val = self.alloc(16)?;
        let init = self.asm.label();
        let done = self.asm.label();
        let arg_or_one = |g: &mut Self, reg: Reg| match (kind, arg) {
            (MapKind::Count | MapKind::Hist | MapKind::Lhist { .. }, _) | (_, None) => {
                g.asm.emit(mov_imm(reg, 1))
            }
            (_, Some(a)) => g.asm.emit(load(Size::DW, reg, FP, a)),
        };
        self.lookup(map, key);
        self.asm.jump_if_imm(Jmp::Eq, R0, 0, init);
        match kind {
            MapKind::Min | MapKind::Max => {
                let set = self.asm.label();
                self.asm.emit(load(Size::DW, R1, R0, 8));
                self.asm.jump_if_imm(Jmp::Eq, R1, 0, set);
                self.asm.emit(load(Size::DW, R1, R0, 0));
                arg_or_one(self, R2);
                let keep = if kind == MapKind::Min {
                    Jmp::Sle
                } else {
                    Jmp::Sge
                };
                self.asm.jump_if_reg(keep, R1, R2, done);
                self.asm.bind(set);
                arg_or_one(self, R2);
                self.asm.emit(store(Size::DW, R0, 0, R2));
                self.asm.emit(store_imm(Size::DW, R0, 8, 1));
            }
            MapKind::Avg | MapKind::Stats => {
                self.asm.emit(load(Size::DW, R1, R0, 0));
                self.asm.emit(alu_imm(Alu::Add, R1, 1));
                self.asm.emit(store(Size::DW, R0, 0, R1));
                self.asm.emit(load(Size::DW, R1, R0, 8));
                arg_or_one(self, R2);
                self.asm.emit(alu_reg(Alu::Add, R1, R2));
                self.asm.emit(store(Size::DW, R0, 8, R1));
            }
            _ => {
                self.asm.emit(load(Size::DW, R1, R0, 0));
                arg_or_one(self, R2);
                self.asm.emit(alu_reg(Alu::Add, R1, R2));
                self.asm.emit(store(Size::DW, R0, 0, R1));
            }
        }
        self.asm.jump(done);
        self.asm.bind(init);
        match kind {
            MapKind::Min | MapKind::Max => {
                arg_or_one(self, R1);
                self.asm.emit(store(Size::DW, FP, val, R1));
                self.asm.emit(store_imm(Size::DW, FP, val + 8, 1));
            }
            MapKind::Avg | MapKind::Stats => {
                self.asm.emit(store_imm(Size::DW, FP, val, 1));
                arg_or_one(self, R1);
                self.asm.emit(store(Size::DW, FP, val + 8, R1));
            }
            _ => {
                arg_or_one(self, R1);
                self.asm.emit(store(Size::DW, FP, val, R1));
                self.asm.emit(store_imm(Size::DW, FP, val + 8, 0));
            }
        }
        self.update(map, key, val, 0);
        self.asm.bind(done);
        Ok(())
    }

    /// r0 = bpftrace's log2 bucket of r1: 0 for negatives, 1 for 0, then
    /// 2 + floor(log2(v)). Clobbers r1-r3.
    pub(crate) fn log2_bucket(&mut self) {
        let done = self.asm.label();
        let positive = self.asm.label();
        self.asm.emit(mov_imm(R0, 0));
        self.asm.jump_if_imm(Jmp::Slt, R1, 0, done);
        self.asm.emit(mov_imm(R0, 1));
        self.asm.jump_if_imm(Jmp::Eq, R1, 0, done);
        self.asm.jump(positive);
        self.asm.bind(positive);
        self.asm.emit(mov_imm(R0, 2));
        for shift in [32, 16, 8, 4, 2, 1] {
            let skip = self.asm.label();
            self.asm.emit(mov_reg(R3, R1));
            self.asm.emit(alu_imm(Alu::Rsh, R3, shift));
            self.asm.jump_if_imm(Jmp::Eq, R3, 0, skip);
            self.asm.emit(mov_reg(R1, R3));
            self.asm.emit(alu_imm(Alu::Add, R0, shift));
            self.asm.bind(skip);
        }
        self.asm.bind(done);
    }

    /// r0 = the `lhist` bucket of r1: 0 below min, buckets + 1 from max
    /// on, else (v - min) / step + 1.
    pub(crate) fn linear_bucket(&mut self, min: i64, max: i64, step: i64) {
        let done = self.asm.label();
        self.asm.emit(mov_imm(R0, 0));
        self.const_int(R2, min);
        self.asm.jump_if_reg(Jmp::Slt, R1, R2, done);
        self.const_int(R0, MapKind::lhist_buckets(min, max, step) + 1);
        self.const_int(R2, max);
        self.asm.jump_if_reg(Jmp::Sge, R1, R2, done);
        self.asm.emit(mov_reg(R0, R1));
        self.const_int(R2, min);
        self.asm.emit(alu_reg(Alu::Sub, R0, R2));
        self.const_int(R2, step);
        self.asm.emit(alu_reg(Alu::Div, R0, R2));
        self.asm.emit(alu_imm(Alu::Add, R0, 1));
        self.asm.bind(done);
    }

    /// `x OP= v`, `x++`, `++x` on a variable or an integer map; r0 holds
    /// the expression's value (the new value, or the old for `x++`).
    pub(crate) fn update_int(
        &mut self,
        target: &Expr,
        op: BinOp,
        value: Option<&Expr>,
        post: bool,
    ) -> Result<Val, LangError> {
        let delta = match value {
            Some(v) => {
                let val = self.expr(v)?;
                self.want_int(val, v)?;
                self.spill()?
            }
            None => {
                let off = self.alloc(8)?;
                self.asm.emit(store_imm(Size::DW, FP, off, 1));
                off
            }
        };
        let alu = alu_of(op).ok_or_else(|| {
            LangError::new(
                target.span,
                format!("'{}=' is not an assignment", op.symbol()),
            )
        })?;
        match &target.kind {
            ExprKind::Var(name) => {
                let (ty, slot) = match self.vars.get(name) {
                    Some(v) => *v,
                    None => {
                        let off = self.alloc(8)?;
                        self.vars.insert(name.clone(), (Ty::Int, off));
                        (Ty::Int, off)
                    }
                };
                if !matches!(ty, Ty::Int | Ty::Uint) {
                    return Err(LangError::new(
                        target.span,
                        format!("Type mismatch for '{}': ${name} is '{ty}'", op.symbol()),
                    ));
                }
                self.asm.emit(load(Size::DW, R0, FP, slot));
                self.asm.emit(load(Size::DW, R2, FP, delta));
                self.asm.emit(mov_reg(R1, R0));
                self.asm.emit(alu_reg(alu, R1, R2));
                self.asm.emit(store(Size::DW, FP, slot, R1));
                if !post {
                    self.asm.emit(mov_reg(R0, R1));
                }
                Ok(Val { ty, loc: Loc::R0 })
            }
            ExprKind::Map { name, keys } => {
                let key_tys = self.key_types(keys)?;
                let map =
                    self.map_for(name, &key_tys, Some(MapKind::Value(Ty::Int)), target.span)?;
                let key = self.build_key(map, keys)?;
                let old = self.alloc(8)?;
                let new = self.alloc(8)?;
                let have = self.asm.label();
                self.asm.emit(mov_imm(R1, 0));
                self.lookup(map, key);
                self.asm.emit(mov_imm(R1, 0));
                self.asm.jump_if_imm(Jmp::Eq, R0, 0, have);
                self.asm.emit(load(Size::DW, R1, R0, 0));
                self.asm.bind(have);
                self.asm.emit(store(Size::DW, FP, old, R1));
                self.asm.emit(load(Size::DW, R2, FP, delta));
                self.asm.emit(alu_reg(alu, R1, R2));
                self.asm.emit(store(Size::DW, FP, new, R1));
                self.update(map, key, new, 0);
                self.asm
                    .emit(load(Size::DW, R0, FP, if post { old } else { new }));
                Ok(Val::int())
            }
            _ => Err(LangError::new(
                target.span,
                "only variables and maps can be incremented",
            )),
        }
    }
}
