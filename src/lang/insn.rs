//! The BPF instruction encoder: registers, the ALU, jumps, loads and
//! stores, 64-bit immediates (map file descriptors through
//! `BPF_PSEUDO_MAP_FD`), helper calls; and an assembler of labels, so code
//! generation jumps forward to places not yet written.
//!
//! Each instruction remembers the source span it was generated for, so a
//! verifier rejection naming an instruction is mapped back to the line of
//! the program.

use super::error::Span;

/// A register, `r0`..`r10` (`r10` is the read-only frame pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reg(pub(crate) u8);

pub(crate) const R0: Reg = Reg(0);
pub(crate) const R1: Reg = Reg(1);
pub(crate) const R2: Reg = Reg(2);
pub(crate) const R3: Reg = Reg(3);
pub(crate) const R4: Reg = Reg(4);
pub(crate) const R6: Reg = Reg(6);
pub(crate) const R7: Reg = Reg(7);
pub(crate) const FP: Reg = Reg(10);

// Instruction classes, sizes, modes and sources (linux/bpf_common.h, bpf.h).
const BPF_LD: u8 = 0x00;
const BPF_LDX: u8 = 0x01;
const BPF_ST: u8 = 0x02;
const BPF_STX: u8 = 0x03;
const BPF_JMP: u8 = 0x05;
const BPF_ALU64: u8 = 0x07;
const BPF_IMM: u8 = 0x00;
const BPF_MEM: u8 = 0x60;
const BPF_K: u8 = 0x00;
const BPF_X: u8 = 0x08;
const BPF_CALL: u8 = 0x80;
const BPF_EXIT: u8 = 0x90;
const BPF_JA: u8 = 0x00;
/// `src_reg` of a 64-bit immediate that holds a map's file descriptor.
pub(crate) const BPF_PSEUDO_MAP_FD: u8 = 1;

/// Access width of a load or store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    B = 0x10,
    H = 0x08,
    W = 0x00,
    DW = 0x18,
}

impl Size {
    /// The width of `bytes` (1, 2, 4, 8).
    pub(crate) fn of(bytes: usize) -> Option<Size> {
        Some(match bytes {
            1 => Size::B,
            2 => Size::H,
            4 => Size::W,
            8 => Size::DW,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    Div = 0x30,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Neg = 0x80,
    Mod = 0x90,
    Xor = 0xa0,
    Mov = 0xb0,
    Arsh = 0xc0,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Jmp {
    Eq = 0x10,
    Ne = 0x50,
    Gt = 0x20,
    Ge = 0x30,
    Lt = 0xa0,
    Le = 0xb0,
    Sgt = 0x60,
    Sge = 0x70,
    Slt = 0xc0,
    Sle = 0xd0,
}

/// One 8-byte instruction, as the kernel reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    pub(crate) code: u8,
    pub(crate) dst: u8,
    pub(crate) src: u8,
    pub(crate) off: i16,
    pub(crate) imm: i32,
}

impl Insn {
    fn new(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            dst: dst.0,
            src: src.0,
            off,
            imm,
        }
    }

    /// The little-endian bytes of `struct bpf_insn`.
    pub(crate) fn to_bytes(self) -> [u8; 8] {
        let off = self.off.to_le_bytes();
        let imm = self.imm.to_le_bytes();
        [
            self.code,
            (self.src << 4) | (self.dst & 0x0f),
            off[0],
            off[1],
            imm[0],
            imm[1],
            imm[2],
            imm[3],
        ]
    }
}

pub(crate) fn alu_imm(op: Alu, dst: Reg, imm: i32) -> Insn {
    Insn::new(BPF_ALU64 | op as u8 | BPF_K, dst, Reg(0), 0, imm)
}

pub(crate) fn alu_reg(op: Alu, dst: Reg, src: Reg) -> Insn {
    Insn::new(BPF_ALU64 | op as u8 | BPF_X, dst, src, 0, 0)
}

pub(crate) fn mov_imm(dst: Reg, imm: i32) -> Insn {
    alu_imm(Alu::Mov, dst, imm)
}

pub(crate) fn mov_reg(dst: Reg, src: Reg) -> Insn {
    alu_reg(Alu::Mov, dst, src)
}

/// `dst = *(size *)(src + off)`
pub(crate) fn load(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
    Insn::new(BPF_LDX | BPF_MEM | size as u8, dst, src, off, 0)
}

/// `*(size *)(dst + off) = src`
pub(crate) fn store(size: Size, dst: Reg, off: i16, src: Reg) -> Insn {
    Insn::new(BPF_STX | BPF_MEM | size as u8, dst, src, off, 0)
}

/// `*(size *)(dst + off) = imm`
pub(crate) fn store_imm(size: Size, dst: Reg, off: i16, imm: i32) -> Insn {
    Insn::new(BPF_ST | BPF_MEM | size as u8, dst, Reg(0), off, imm)
}

/// The two slots of `dst = imm64`; `src` is 0 or `BPF_PSEUDO_MAP_FD`.
pub(crate) fn ld_imm64(dst: Reg, src: u8, imm: u64) -> [Insn; 2] {
    [
        Insn::new(
            BPF_LD | BPF_IMM | Size::DW as u8,
            dst,
            Reg(src),
            0,
            imm as u32 as i32,
        ),
        Insn::new(0, Reg(0), Reg(0), 0, (imm >> 32) as u32 as i32),
    ]
}

/// `dst` = the low `bits` (16, 32, 64) of `dst` with their bytes swapped,
/// zero-extended (BPF_END to big endian, on a little-endian machine).
pub(crate) fn bswap(dst: Reg, bits: i32) -> Insn {
    const BPF_ALU: u8 = 0x04;
    const BPF_END: u8 = 0xd0;
    const BPF_TO_BE: u8 = 0x08;
    Insn::new(BPF_ALU | BPF_END | BPF_TO_BE, dst, Reg(0), 0, bits)
}

pub(crate) fn call(helper: i32) -> Insn {
    Insn::new(BPF_JMP | BPF_CALL, Reg(0), Reg(0), 0, helper)
}

pub(crate) fn exit() -> Insn {
    Insn::new(BPF_JMP | BPF_EXIT, Reg(0), Reg(0), 0, 0)
}

/// Helper function ids (linux/bpf.h, `__BPF_FUNC_MAPPER`).
pub(crate) mod helper {
    pub(crate) const MAP_LOOKUP_ELEM: i32 = 1;
    pub(crate) const MAP_UPDATE_ELEM: i32 = 2;
    pub(crate) const MAP_DELETE_ELEM: i32 = 3;
    pub(crate) const KTIME_GET_NS: i32 = 5;
    pub(crate) const GET_PRANDOM_U32: i32 = 7;
    pub(crate) const GET_SMP_PROCESSOR_ID: i32 = 8;
    pub(crate) const GET_NUMA_NODE_ID: i32 = 42;
    pub(crate) const GET_CURRENT_PID_TGID: i32 = 14;
    pub(crate) const GET_CURRENT_UID_GID: i32 = 15;
    pub(crate) const GET_CURRENT_COMM: i32 = 16;
    pub(crate) const PROBE_READ: i32 = 4;
    pub(crate) const GET_CURRENT_TASK: i32 = 35;
    pub(crate) const GET_STACKID: i32 = 27;
    pub(crate) const PROBE_READ_STR: i32 = 45;
    pub(crate) const PROBE_READ_KERNEL: i32 = 113;
    pub(crate) const RINGBUF_OUTPUT: i32 = 130;
    pub(crate) const RINGBUF_RESERVE: i32 = 131;
    pub(crate) const RINGBUF_SUBMIT: i32 = 132;
    pub(crate) const GET_CURRENT_CGROUP_ID: i32 = 80;
    pub(crate) const GET_ATTACH_COOKIE: i32 = 174;
}

/// A place in the code, bound later with `Asm::bind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Label(usize);

/// Instructions with labels, and the source span of each.
#[derive(Debug, Default)]
pub(crate) struct Asm {
    pub(crate) insns: Vec<Insn>,
    pub(crate) spans: Vec<Span>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label)>,
    /// The span the next instructions are generated for.
    pub(crate) span: Span,
}

impl Asm {
    pub(crate) fn emit(&mut self, insn: Insn) {
        self.insns.push(insn);
        self.spans.push(self.span);
    }

    pub(crate) fn emit_all(&mut self, insns: &[Insn]) {
        for insn in insns {
            self.emit(*insn);
        }
    }

    pub(crate) fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// The label points at the next instruction.
    pub(crate) fn bind(&mut self, label: Label) {
        self.labels[label.0] = Some(self.insns.len());
    }

    /// An unconditional jump; none right after another unconditional
    /// jump or an exit where no label points (the verifier refuses
    /// unreachable instructions: `if (c) { exit(); }`, `continue`).
    pub(crate) fn jump(&mut self, to: Label) {
        let here = self.insns.len();
        let after_jump = self
            .insns
            .last()
            .is_some_and(|i| i.code == BPF_JMP | BPF_JA || i.code == BPF_JMP | BPF_EXIT);
        if after_jump && !self.labels.contains(&Some(here)) {
            return;
        }
        self.fixups.push((self.insns.len(), to));
        self.emit(Insn::new(BPF_JMP | BPF_JA, Reg(0), Reg(0), 0, 0));
    }

    pub(crate) fn jump_if_imm(&mut self, op: Jmp, reg: Reg, imm: i32, to: Label) {
        self.fixups.push((self.insns.len(), to));
        self.emit(Insn::new(BPF_JMP | op as u8 | BPF_K, reg, Reg(0), 0, imm));
    }

    pub(crate) fn jump_if_reg(&mut self, op: Jmp, dst: Reg, src: Reg, to: Label) {
        self.fixups.push((self.insns.len(), to));
        self.emit(Insn::new(BPF_JMP | op as u8 | BPF_X, dst, src, 0, 0));
    }

    /// Resolves the jumps; a label never bound, or a jump out of `i16`
    /// range, is an error naming it.
    pub(crate) fn finish(self) -> Result<(Vec<Insn>, Vec<Span>), JumpError> {
        let mut insns = self.insns;
        for (at, label) in self.fixups {
            let target = self.labels[label.0].ok_or(JumpError::Unplaced)?;
            let off = target as i64 - at as i64 - 1;
            insns[at].off = i16::try_from(off).map_err(|_| JumpError::TooFar)?;
        }
        Ok((insns, self.spans))
    }
}

/// A jump the assembler cannot resolve.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JumpError {
    #[error("a jump to a label never placed")]
    Unplaced,
    #[error("a jump too far for BPF")]
    TooFar,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_match_the_kernel() {
        // r0 = 0; exit (the smallest valid program).
        assert_eq!(mov_imm(R0, 0).to_bytes(), [0xb7, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(exit().to_bytes(), [0x95, 0, 0, 0, 0, 0, 0, 0]);
        // r1 = r10; r1 += -8
        assert_eq!(mov_reg(R1, FP).to_bytes(), [0xbf, 0xa1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            alu_imm(Alu::Add, R1, -8).to_bytes(),
            [0x07, 0x01, 0, 0, 0xf8, 0xff, 0xff, 0xff]
        );
        // *(u64 *)(r10 - 8) = r0
        assert_eq!(
            store(Size::DW, FP, -8, R0).to_bytes(),
            [0x7b, 0x0a, 0xf8, 0xff, 0, 0, 0, 0]
        );
        // r0 = *(u32 *)(r6 + 16)
        assert_eq!(
            load(Size::W, R0, R6, 16).to_bytes(),
            [0x61, 0x60, 16, 0, 0, 0, 0, 0]
        );
        // *(u8 *)(r10 - 1) = 7
        assert_eq!(
            store_imm(Size::B, FP, -1, 7).to_bytes(),
            [0x72, 0x0a, 0xff, 0xff, 7, 0, 0, 0]
        );
        assert_eq!(
            call(helper::MAP_LOOKUP_ELEM).to_bytes(),
            [0x85, 0, 0, 0, 1, 0, 0, 0]
        );
        let [a, b] = ld_imm64(R1, BPF_PSEUDO_MAP_FD, 5);
        assert_eq!(a.to_bytes(), [0x18, 0x11, 0, 0, 5, 0, 0, 0]);
        assert_eq!(b.to_bytes(), [0; 8]);
        let [a, b] = ld_imm64(R2, 0, 0x1_0000_0002);
        assert_eq!((a.imm, b.imm), (2, 1));
    }

    #[test]
    fn labels_resolve_forward_and_back() {
        let mut asm = Asm::default();
        let top = asm.label();
        let end = asm.label();
        asm.bind(top);
        asm.jump_if_imm(Jmp::Eq, R0, 0, end); // 0 -> 3: off 2
        asm.emit(mov_imm(R0, 1));
        asm.jump(top); // 2 -> 0: off -3
        asm.bind(end);
        asm.emit(exit());
        let (insns, spans) = asm.finish().expect("resolves");
        assert_eq!(insns[0].off, 2);
        assert_eq!(insns[0].code, 0x15);
        assert_eq!(insns[2].off, -3);
        assert_eq!(spans.len(), 4);
    }

    #[test]
    fn no_jump_right_after_a_jump() {
        let mut asm = Asm::default();
        let a = asm.label();
        let b = asm.label();
        asm.jump(a);
        asm.jump(b); // unreachable: dropped
        asm.bind(a);
        asm.jump(b); // a label points here: kept
        asm.bind(b);
        asm.emit(exit());
        let (insns, _) = asm.finish().expect("resolves");
        assert_eq!(insns.len(), 3);
    }

    #[test]
    fn unbound_label_is_an_error() {
        let mut asm = Asm::default();
        let nowhere = asm.label();
        asm.jump(nowhere);
        assert!(asm.finish().is_err());
    }
}
