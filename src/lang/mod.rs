//! `scry run`'s language: bpftrace's programs compiled straight to BPF
//! instructions, with no LLVM and no clang at run time.
//!
//! The stages: `lexer` and `parser` make the syntax tree (`ast`); `probe`
//! reads probe names and `resolve` finds them in the kernel; `codegen`, `expr`, `fields` (with `btf`), `calls`, `actions` and
//! `aggregate` emit instructions (`insn`) while checking names and types;
//! `run` creates the maps, loads and (through `attach`) attaches the programs and prints what they send (`printf`) and what
//! they leave in maps (`output`), as bpftrace prints them.
//!
//! The decision that shapes it: the code generator runs twice, once to
//! discover the maps a program uses (their kinds, keys and string sizes)
//! and once, with the maps created, to emit the code the kernel loads; so
//! there is one walk of the tree that both checks and generates, and no
//! type checker to keep in step with it.

pub mod actions;
pub mod aggregate;
pub mod ast;
pub(crate) mod attach;
pub mod btf;
pub mod calls;
pub mod codegen;
pub mod error;
pub mod expr;
pub mod fields;
pub mod insn;
pub mod lexer;
pub mod output;
pub mod parser;
pub mod printf;
pub mod probe;
pub(crate) mod resolve;
pub mod run;
pub mod stacks;
pub mod types;
