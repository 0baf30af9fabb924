//! `scry run`'s language: bpftrace's programs compiled straight to BPF
//! instructions, with no LLVM and no clang at run time.
//!
//! The stages: `lexer` and `parser` make the syntax tree (`ast`); `probe`
//! reads probe names and `resolve` finds them in the kernel; `codegen`, `expr` (with tuples), `fields` (with `btf`), `calls`, `actions` and
//! `aggregate` emit instructions (`insn`) while checking names and types;
//! `run` creates the maps, loads and (through `attach`) attaches the programs and prints what they send (`printf`) and what
//! they leave in maps (`output`), as bpftrace prints them.
//!
//! The decision that shapes it: the code generator runs twice, once to
//! discover the maps a program uses (their kinds, keys and string sizes)
//! and once, with the maps created, to emit the code the kernel loads; so
//! there is one walk of the tree that both checks and generates, and no
//! type checker to keep in step with it.

pub(crate) mod actions;
pub(crate) mod aggregate;
pub(crate) mod ast;
pub(crate) mod attach;
pub(crate) mod btf;
pub(crate) mod calls;
pub(crate) mod codegen;
pub(crate) mod error;
pub(crate) mod expr;
pub(crate) mod fields;
pub(crate) mod insn;
pub(crate) mod lexer;
pub(crate) mod output;
pub(crate) mod parser;
pub(crate) mod positional;
pub(crate) mod printf;
pub(crate) mod probe;
pub(crate) mod registry;
pub(crate) mod resolve;
pub(crate) mod run;
pub(crate) mod runtime;
pub(crate) mod stacks;
pub(crate) mod types;
