//! Code generation: one probe's block to BPF instructions, and the
//! statements, map updates and events of it (expressions are in `expr`).
//!
//! Register use: `r6` holds the context for the whole program; every
//! value an expression computes ends in `r0` (integers) or in a stack
//! buffer (strings); a left operand waiting for its right one is spilled
//! to a stack slot, so helper calls (which clobber `r1`-`r5`) may happen
//! anywhere. Stack: variables get a slot for the whole probe, temporaries
//! are released after each statement; more than 512 bytes is an error
//! naming the statement. Every map lookup is followed by its null check.
//!
//! The same generator runs twice: first to discover the maps (their kinds,
//! key types and string sizes, with placeholder descriptors), then with
//! the maps created, to emit the code that is loaded.

use std::collections::HashMap;

use super::ast::{BinOp, Expr, ExprKind, Stmt};
use super::btf::{KernelTypes, Signature};
use super::error::{LangError, Span};
use super::insn::*;
pub(crate) use super::registry::{PrintfSpec, Registry, event_kind, intern};
use super::types::{MapInfo, MapKind, Ty, str_size};
use crate::event::format::EventFormat;

/// The BPF stack limit.
pub(crate) const STACK_LIMIT: usize = 512;

/// The kind of program a probe becomes, which decides its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProgKind {
    /// BEGIN and END, run once with BPF_PROG_TEST_RUN.
    RawTracepoint,
    Tracepoint,
    /// profile, interval, software: `struct bpf_perf_event_data`.
    PerfEvent,
    /// uprobe/uretprobe, kprobe/kretprobe: `struct pt_regs`.
    Kprobe,
    /// fentry/fexit: the function's arguments, a u64 each, then (fexit)
    /// its return value.
    Tracing,
}

/// The probe being compiled.
pub(crate) struct ProbeEnv<'a> {
    pub(crate) kind: ProgKind,
    pub(crate) format: Option<&'a EventFormat>,
    /// The index of the probe's name in `Registry::probe_names`.
    pub(crate) probe_id: u64,
    pub(crate) is_return: bool,
    /// CLOCK_MONOTONIC at start, for `elapsed`.
    pub(crate) start_ns: u64,
    /// The function a uprobe, kprobe or fentry is on, for `func`.
    pub(crate) func: Option<&'a str>,
    /// An fentry/fexit function's parameters and return type (BTF).
    pub(crate) signature: Option<&'a Signature>,
    /// Compiling the one program of a kprobe.multi link: `probe` is the
    /// attach cookie (the probe's index) and `func` the name `Fds::funcs`
    /// holds at it, a string of this many bytes. None: both are constants.
    pub(crate) shared: Option<usize>,
    /// The kernel's types and constants, read when first needed.
    pub(crate) types: &'a KernelTypes,
    /// A process whose events the probe drops (scry's own, on uprobes).
    pub(crate) skip_tgid: Option<u32>,
    /// `-c`'s command's pid, for `cpid` (None: no command).
    pub(crate) cpid: Option<u32>,
}

/// Descriptors the code refers to (placeholders in the discovery pass).
#[derive(Clone, Debug, Default)]
pub(crate) struct Fds {
    pub(crate) maps: Vec<i32>,
    pub(crate) events: i32,
    pub(crate) stacks: i32,
    /// The per-CPU count of records the ring buffer had no room for.
    pub(crate) lost: i32,
    /// The function names of kprobe.multi links' probes, by probe index
    /// (an array map; 0 when no block has one).
    pub(crate) funcs: i32,
}

/// Where a value is after its code ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loc {
    R0,
    /// A buffer at this offset from the frame pointer.
    Stack(i16),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Val {
    pub(crate) ty: Ty,
    pub(crate) loc: Loc,
}

impl Val {
    pub(crate) fn int() -> Val {
        Val {
            ty: Ty::Int,
            loc: Loc::R0,
        }
    }

    /// An integer in r0, signed or not.
    pub(crate) fn int_of(signed: bool) -> Val {
        Val {
            ty: if signed { Ty::Int } else { Ty::Uint },
            loc: Loc::R0,
        }
    }
}

/// A compiled probe: instructions and the span each came from.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) insns: Vec<Insn>,
    pub(crate) spans: Vec<Span>,
}

pub(crate) struct Gen<'a> {
    pub(crate) asm: Asm,
    pub(crate) reg: &'a mut Registry,
    pub(crate) env: &'a ProbeEnv<'a>,
    pub(crate) fds: &'a Fds,
    /// The first pass: maps are being discovered.
    pub(crate) discover: bool,
    pub(crate) vars: HashMap<String, (Ty, i16)>,
    pub(crate) stack: usize,
    /// Set when a `kstack`/`ustack` is taken.
    pub(crate) exit_label: Option<Label>,
    /// The innermost `while`'s (continue, break) labels.
    pub(crate) loops: Vec<(Label, Label)>,
    /// Bytes of the integer the last field, cast or variable read held
    /// (8 after anything else), for `bswap()`.
    pub(crate) int_bytes: usize,
    /// Bytes of the integer each variable was first given, if it came
    /// from a field or a cast.
    pub(crate) var_bytes: HashMap<String, usize>,
}

/// Compiles one probe's predicate and block.
pub(crate) fn compile_probe(
    reg: &mut Registry,
    env: &ProbeEnv<'_>,
    fds: &Fds,
    discover: bool,
    predicate: Option<&Expr>,
    body: &[Stmt],
) -> Result<Compiled, LangError> {
    let mut g = Gen {
        asm: Asm::default(),
        reg,
        env,
        fds,
        discover,
        vars: HashMap::new(),
        // The top 8 bytes are scratch for the lost-record count's key.
        stack: 8,
        exit_label: None,
        loops: Vec::new(),
        int_bytes: 8,
        var_bytes: HashMap::new(),
    };
    let end = g.asm.label();
    g.exit_label = Some(end);
    if let Some(tgid) = env.skip_tgid {
        g.asm.emit(call(helper::GET_CURRENT_PID_TGID));
        g.asm.emit(alu_imm(Alu::Rsh, R0, 32));
        g.asm.jump_if_imm(Jmp::Eq, R0, tgid as i32, end);
    }
    if let Some(pred) = predicate {
        g.asm.span = pred.span;
        let mark = g.stack;
        let v = g.expr(pred)?;
        g.want_int(v, pred)?;
        g.asm.jump_if_imm(Jmp::Eq, R0, 0, end);
        g.stack = mark;
    }
    g.block(body)?;
    g.asm.bind(end);
    g.asm.emit(mov_imm(R0, 0));
    g.asm.emit(exit());
    let var_slots: Vec<(i16, usize)> = g.vars.values().map(|(ty, off)| (*off, ty.size())).collect();
    let (body_insns, body_spans) = g
        .asm
        .finish()
        .map_err(|e| LangError::new(Span::default(), e.to_string()))?;
    // The prologue, placed once the variables are known: the context in
    // r6, every variable zeroed (a variable set in one branch of an `if`
    // is still initialized for the verifier on the other).
    let mut insns = vec![mov_reg(R6, R1)];
    for (off, size) in var_slots {
        for i in (0..size).step_by(8) {
            insns.push(store_imm(Size::DW, FP, off + i as i16, 0));
        }
    }
    let mut spans = vec![Span::default(); insns.len()];
    insns.extend(body_insns);
    spans.extend(body_spans);
    Ok(Compiled { insns, spans })
}

impl Gen<'_> {
    /// A stack buffer of `size` bytes (rounded to 8), or the error naming
    /// the limit.
    pub(crate) fn alloc(&mut self, size: usize) -> Result<i16, LangError> {
        self.stack += size.div_ceil(8) * 8;
        if self.stack > STACK_LIMIT {
            return Err(LangError::new(
                self.asm.span,
                format!(
                    "this needs more than the {STACK_LIMIT} bytes of BPF stack a probe has \
                     ({} bytes so far)",
                    self.stack
                ),
            ));
        }
        Ok(-(self.stack as i16))
    }

    pub(crate) fn fp_addr(&mut self, reg: Reg, off: i16) {
        self.asm.emit(mov_reg(reg, FP));
        self.asm.emit(alu_imm(Alu::Add, reg, off as i32));
    }

    pub(crate) fn const_int(&mut self, reg: Reg, value: i64) {
        match i32::try_from(value) {
            Ok(v) => self.asm.emit(mov_imm(reg, v)),
            Err(_) => self.asm.emit_all(&ld_imm64(reg, 0, value as u64)),
        }
    }

    pub(crate) fn map_fd(&mut self, reg: Reg, map: usize) {
        let fd = self.fds.maps.get(map).copied().unwrap_or(0);
        self.asm
            .emit_all(&ld_imm64(reg, BPF_PSEUDO_MAP_FD, fd as u32 as u64));
    }

    pub(crate) fn zero(&mut self, off: i16, size: usize) {
        for i in (0..size).step_by(8) {
            self.asm.emit(store_imm(Size::DW, FP, off + i as i16, 0));
        }
    }

    /// Copies `size` bytes (a multiple of 8) between stack buffers.
    pub(crate) fn copy(&mut self, dst: i16, src: i16, size: usize) {
        for i in (0..size).step_by(8) {
            let i = i as i16;
            self.asm.emit(load(Size::DW, R1, FP, src + i));
            self.asm.emit(store(Size::DW, FP, dst + i, R1));
        }
    }

    /// Writes a value into a buffer slot of type `slot`.
    pub(crate) fn store_val(&mut self, val: Val, dst: i16, slot: Ty) {
        match val.loc {
            Loc::R0 => self.asm.emit(store(Size::DW, FP, dst, R0)),
            Loc::Stack(src) => {
                let n = val.ty.size().min(slot.size());
                self.copy(dst, src, n);
                if slot.size() > n {
                    self.zero(dst + n as i16, slot.size() - n);
                }
            }
        }
    }

    /// A value kept in a stack slot across further code (a spilled r0).
    pub(crate) fn spill(&mut self) -> Result<i16, LangError> {
        let off = self.alloc(8)?;
        self.asm.emit(store(Size::DW, FP, off, R0));
        Ok(off)
    }

    pub(crate) fn want_int(&self, v: Val, e: &Expr) -> Result<(), LangError> {
        if v.ty.is_int() {
            Ok(())
        } else {
            Err(LangError::new(
                e.span,
                format!("expected an integer here, got '{}'", v.ty),
            ))
        }
    }

    pub(crate) fn block(&mut self, stmts: &[Stmt]) -> Result<(), LangError> {
        for stmt in stmts {
            let mark = self.stack;
            self.stmt(stmt)?;
            self.stack = mark.max(self.vars_end());
        }
        Ok(())
    }

    /// The stack variables take (they are never released).
    fn vars_end(&self) -> usize {
        self.vars
            .values()
            .map(|(_, off)| off.unsigned_abs() as usize)
            .max()
            .unwrap_or(0)
    }

    fn stmt(&mut self, stmt: &Stmt) -> Result<(), LangError> {
        match stmt {
            Stmt::Expr(e) => {
                self.asm.span = e.span;
                match &e.kind {
                    ExprKind::Call { name, args } if self.is_statement_call(name) => {
                        self.statement_call(e, name, args)
                    }
                    ExprKind::Call { name, .. } if aggregation(name) => Err(LangError::new(
                        e.span,
                        format!("{name}() should be assigned to a map"),
                    )),
                    _ => self.expr(e).map(|_| ()),
                }
            }
            Stmt::Assign {
                target,
                op,
                value,
                span,
            } => {
                self.asm.span = *span;
                match (&target.kind, op) {
                    (ExprKind::Var(name), None) => self.assign_var(name, value),
                    (ExprKind::Var(_), Some(op)) => {
                        self.update_int(target, *op, Some(value), false).map(|_| ())
                    }
                    (ExprKind::Map { name, keys }, None) => self.assign_map(name, keys, value),
                    (ExprKind::Map { .. }, Some(op)) => {
                        self.update_int(target, *op, Some(value), false).map(|_| ())
                    }
                    _ => Err(LangError::new(target.span, "cannot assign to this")),
                }
            }
            Stmt::If {
                cond,
                then,
                otherwise,
            } => {
                self.asm.span = cond.span;
                let v = self.expr(cond)?;
                self.want_int(v, cond)?;
                let other = self.asm.label();
                let end = self.asm.label();
                self.asm.jump_if_imm(Jmp::Eq, R0, 0, other);
                self.block(then)?;
                self.asm.jump(end);
                self.asm.bind(other);
                self.block(otherwise)?;
                self.asm.bind(end);
                Ok(())
            }
            Stmt::While { cond, body } => {
                // The verifier walks the loop (kernels from 5.3 take
                // bounded loops) and refuses it if it does not end.
                let top = self.asm.label();
                let end = self.asm.label();
                self.asm.bind(top);
                self.asm.span = cond.span;
                let mark = self.stack;
                let v = self.expr(cond)?;
                self.want_int(v, cond)?;
                self.stack = mark;
                self.asm.jump_if_imm(Jmp::Eq, R0, 0, end);
                self.loops.push((top, end));
                let result = self.block(body);
                self.loops.pop();
                result?;
                self.asm.span = cond.span;
                self.asm.jump(top);
                self.asm.bind(end);
                Ok(())
            }
            Stmt::Unroll { count, body, span } => {
                self.asm.span = *span;
                for _ in 0..*count {
                    self.block(body)?;
                }
                Ok(())
            }
            Stmt::Break(span) | Stmt::Continue(span) => {
                let Some(&(top, end)) = self.loops.last() else {
                    return Err(LangError::new(
                        *span,
                        "break and continue are only allowed in a while loop",
                    ));
                };
                self.asm.span = *span;
                let to = if matches!(stmt, Stmt::Break(_)) {
                    end
                } else {
                    top
                };
                self.asm.jump(to);
                Ok(())
            }
        }
    }

    fn assign_var(&mut self, name: &str, value: &Expr) -> Result<(), LangError> {
        let v = self.expr(value)?;
        if !self.vars.contains_key(name) {
            let bytes = self.width_of(value);
            self.var_bytes.insert(name.to_string(), bytes);
        }
        let slot = match self.vars.get(name) {
            Some((ty, off)) => {
                if !ty.compatible(v.ty) {
                    return Err(LangError::new(
                        value.span,
                        format!(
                            "Type mismatch for ${name}: trying to assign value of type '{}' \
                             when variable already contains a value of type '{ty}'",
                            v.ty
                        ),
                    ));
                }
                (*ty, *off)
            }
            None => {
                // A variable outlives the statement: its slot is placed
                // below everything in use now, and never released.
                let off = self.alloc(v.ty.size())?;
                self.vars.insert(name.to_string(), (v.ty, off));
                (v.ty, off)
            }
        };
        self.store_val(v, slot.1, slot.0);
        Ok(())
    }

    /// The map `name` with a use of `keys` and `kind`: registered in the
    /// discovery pass, checked against its first use otherwise.
    pub(crate) fn map_for(
        &mut self,
        name: &str,
        key_tys: &[Ty],
        kind: Option<MapKind>,
        span: Span,
    ) -> Result<usize, LangError> {
        let full = format!("@{name}");
        if key_tys.iter().any(|t| matches!(t, Ty::Tuple { .. })) {
            return Err(LangError::new(
                span,
                "tuple cannot be used as a map key. Try a multi-key associative array instead \
                 (eg `@map[$1, $2] = ...)`.",
            ));
        }
        let Some(i) = self.reg.map_index(&full) else {
            let Some(kind) = kind else {
                if self.discover {
                    // Read before any assignment seen so far: assume an
                    // integer map; the second pass checks.
                    self.reg.maps.push(MapInfo {
                        name: full,
                        kind: MapKind::Value(Ty::Int),
                        keys: key_tys.to_vec(),
                    });
                    return Ok(self.reg.maps.len() - 1);
                }
                return Err(LangError::new(span, format!("Undefined map: {full}")));
            };
            self.reg.maps.push(MapInfo {
                name: full,
                kind,
                keys: key_tys.to_vec(),
            });
            return Ok(self.reg.maps.len() - 1);
        };
        let discover = self.discover;
        let map = &mut self.reg.maps[i];
        if let Some(kind) = kind {
            let same = match (map.kind, kind) {
                (MapKind::Value(a), MapKind::Value(b)) => a.compatible(b),
                (a, b) => a == b,
            };
            if !same {
                return Err(LangError::new(
                    span,
                    format!(
                        "Type mismatch for {}: trying to assign value of type '{}' when map \
                         already contains a value of type '{}'",
                        map.name,
                        kind.name(),
                        map.kind.name()
                    ),
                ));
            }
            if let (MapKind::Value(a), MapKind::Value(b)) = (map.kind, kind)
                && discover
            {
                map.kind = MapKind::Value(a.merge(b));
            }
        }
        let keys_match = map.keys.len() == key_tys.len()
            && map.keys.iter().zip(key_tys).all(|(a, b)| a.compatible(*b));
        if !keys_match {
            let show = |tys: &[Ty]| {
                tys.iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(LangError::new(
                span,
                format!(
                    "Argument mismatch for {}: trying to access with arguments: [{}] when map \
                     expects arguments: [{}]",
                    map.name,
                    show(key_tys),
                    show(&map.keys)
                ),
            ));
        }
        if discover {
            for (a, b) in map.keys.iter_mut().zip(key_tys) {
                *a = a.merge(*b);
            }
        }
        Ok(i)
    }

    /// Evaluates the keys into a fresh key buffer of map `map` (with room
    /// for a bucket at the end when the map has one).
    pub(crate) fn build_key(&mut self, map: usize, keys: &[Expr]) -> Result<i16, LangError> {
        let info = self.reg.maps[map].clone();
        let off = self.alloc(info.key_size())?;
        if keys.is_empty() {
            self.asm.emit(store_imm(Size::DW, FP, off, 0));
            return Ok(off);
        }
        let mut at = off;
        for (k, ty) in keys.iter().zip(&info.keys) {
            let v = self.expr(k)?;
            self.store_val(v, at, *ty);
            at += ty.size() as i16;
        }
        Ok(off)
    }

    /// The types of key expressions, evaluated for their types only (the
    /// code is thrown away).
    pub(crate) fn key_types(&mut self, keys: &[Expr]) -> Result<Vec<Ty>, LangError> {
        let saved = std::mem::take(&mut self.asm);
        self.asm.span = saved.span;
        let stack = self.stack;
        let mut tys = Vec::new();
        let mut result = Ok(());
        for k in keys {
            match self.expr(k) {
                Ok(v) => tys.push(v.ty),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let span = self.asm.span;
        self.asm = saved;
        self.asm.span = span;
        self.stack = stack;
        result.map(|_| tys)
    }

    pub(crate) fn lookup(&mut self, map: usize, key: i16) {
        self.map_fd(R1, map);
        self.fp_addr(R2, key);
        self.asm.emit(call(helper::MAP_LOOKUP_ELEM));
    }

    pub(crate) fn update(&mut self, map: usize, key: i16, value: i16, flags: i32) {
        self.map_fd(R1, map);
        self.fp_addr(R2, key);
        self.fp_addr(R3, value);
        self.asm.emit(mov_imm(R4, flags));
        self.asm.emit(call(helper::MAP_UPDATE_ELEM));
    }

    fn assign_map(&mut self, name: &str, keys: &[Expr], value: &Expr) -> Result<(), LangError> {
        if let ExprKind::Call { name: func, args } = &value.kind
            && aggregation(func)
        {
            return self.aggregate(name, keys, func, args, value.span);
        }
        let key_tys = self.key_types(keys)?;
        let v = self.expr(value)?;
        let held = match v.loc {
            Loc::R0 => Val {
                ty: v.ty,
                loc: Loc::Stack(self.spill()?),
            },
            Loc::Stack(_) => v,
        };
        let map = self.map_for(name, &key_tys, Some(MapKind::Value(v.ty)), value.span)?;
        let key = self.build_key(map, keys)?;
        let MapKind::Value(slot) = self.reg.maps[map].kind else {
            return Err(LangError::new(value.span, "not a value map"));
        };
        let val = self.alloc(slot.size())?;
        self.store_val(held, val, slot);
        self.update(map, key, val, 0);
        Ok(())
    }
}

/// The aggregation functions (`@m = count()`).
pub(crate) fn aggregation(name: &str) -> bool {
    matches!(
        name,
        "count" | "sum" | "min" | "max" | "avg" | "stats" | "hist" | "lhist"
    )
}

/// The ALU operation of an arithmetic operator.
pub(crate) fn alu_of(op: BinOp) -> Option<Alu> {
    Some(match op {
        BinOp::Add => Alu::Add,
        BinOp::Sub => Alu::Sub,
        BinOp::Mul => Alu::Mul,
        BinOp::Div => Alu::Div,
        BinOp::Mod => Alu::Mod,
        BinOp::And => Alu::And,
        BinOp::Or => Alu::Or,
        BinOp::Xor => Alu::Xor,
        BinOp::Shl => Alu::Lsh,
        BinOp::Shr => Alu::Rsh,
        _ => return None,
    })
}

/// String sizes of `str()` and literals.
pub(crate) fn literal_size(text: &str) -> usize {
    str_size(text.len() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::parser::parse;

    fn compile(src: &str) -> Result<(Registry, Compiled), LangError> {
        let program = parse(src)?;
        let probe = &program.probes[0];
        let mut reg = Registry::default();
        let env = ProbeEnv {
            kind: ProgKind::RawTracepoint,
            format: None,
            probe_id: 0,
            is_return: false,
            start_ns: 0,
            func: None,
            shared: None,
            signature: None,
            types: &KernelTypes::default(),
            skip_tgid: None,
            cpid: None,
        };
        let fds = Fds::default();
        compile_probe(
            &mut reg,
            &env,
            &fds,
            true,
            probe.predicate.as_ref(),
            &probe.body,
        )?;
        reg.printfs.clear();
        let code = compile_probe(
            &mut reg,
            &env,
            &fds,
            false,
            probe.predicate.as_ref(),
            &probe.body,
        )?;
        Ok((reg, code))
    }

    #[test]
    fn maps_are_discovered_with_their_layout() {
        let (reg, code) = compile(
            "BEGIN { @h[comm, 1] = hist(5); @s[\"a\"] = \"xy\"; @s[\"longer string\"] = comm; $v = @s[\"a\"]; @c++; }",
        )
        .expect("compiles");
        let names: Vec<_> = reg.maps.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["@h", "@s", "@c"]);
        assert_eq!(reg.maps[0].key_size(), 16 + 8 + 8);
        // The string key and value take the widest use.
        assert_eq!(reg.maps[1].keys, [Ty::Str(16)]);
        assert_eq!(reg.maps[1].kind, MapKind::Value(Ty::Str(16)));
        assert_eq!(reg.maps[2].kind, MapKind::Value(Ty::Int));
        // Ends with `r0 = 0; exit`.
        let last = code.insns.len() - 1;
        assert_eq!(code.insns[last], exit());
        assert_eq!(code.insns[last - 1], mov_imm(R0, 0));
    }

    #[test]
    fn every_lookup_is_null_checked() {
        let (_, code) = compile("BEGIN { @a = count(); $x = @b; @b = 1; }").expect("compiles");
        for (i, insn) in code.insns.iter().enumerate() {
            if *insn == call(helper::MAP_LOOKUP_ELEM) {
                let next = code.insns[i + 1];
                assert_eq!((next.code, next.dst, next.imm), (0x15, 0, 0), "at {i}");
            }
        }
    }

    #[test]
    fn the_stack_limit_is_an_error_at_the_statement() {
        let args = vec!["comm"; 40].join(", ");
        let fmt = "%s".repeat(40);
        let src = format!("BEGIN {{ printf(\"{fmt}\", {args}); }}");
        let err = compile(&src).expect_err("too big");
        assert!(err.message.contains("512 bytes"), "{}", err.message);
        assert_eq!(err.span.start, 8);
    }

    #[test]
    fn type_errors_name_both_types() {
        let err = compile("BEGIN { $x = comm; $x = 1; }").expect_err("mismatch");
        assert!(
            err.message.contains("Type mismatch for $x"),
            "{}",
            err.message
        );
        let err = compile("BEGIN { @x = hist(1); @x = count(); }").expect_err("mismatch");
        assert!(
            err.message
                .contains("'count' when map already contains a value of type 'hist'"),
            "{}",
            err.message
        );
        let err = compile("BEGIN { @m[1] = 1; @m[\"a\"] = 2; }").expect_err("keys");
        assert!(
            err.message.starts_with("Argument mismatch for @m"),
            "{}",
            err.message
        );
        let err = compile("BEGIN { $y = retval; }").expect_err("retval");
        assert!(err.message.contains("uretprobe"), "{}", err.message);
    }
}
