//! The syntax tree of a program: probes (several attach points may share
//! one block), an optional predicate, statements and expressions. Every
//! node keeps its span for the error messages of the later passes.

use super::error::Span;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Program {
    pub(crate) probes: Vec<Probe>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Probe {
    pub(crate) attach: Vec<AttachPoint>,
    pub(crate) predicate: Option<Expr>,
    pub(crate) body: Vec<Stmt>,
}

/// One probe name as written (`tracepoint:sched:sched_switch`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct AttachPoint {
    pub(crate) text: String,
    pub(crate) span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stmt {
    Expr(Expr),
    /// `target = value`, or `target OP= value` when `op` is set.
    Assign {
        target: Expr,
        op: Option<BinOp>,
        value: Expr,
        span: Span,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        otherwise: Vec<Stmt>,
    },
    /// `while (cond) { ... }`: a loop the verifier must see end.
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    /// `unroll (N) { ... }`: the block N times (1-100).
    Unroll {
        count: i64,
        body: Vec<Stmt>,
        span: Span,
    },
    /// `break` and `continue` in a `while`.
    Break(Span),
    Continue(Span),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogAnd,
    LogOr,
}

impl BinOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::LogAnd => "&&",
            BinOp::LogOr => "||",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Not,
    BitNot,
    /// `*ptr`: the value at an address.
    Deref,
}

/// The type of a cast: `(uint32)x`, `(struct task_struct *)p`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CastTy {
    Int {
        bytes: usize,
        signed: bool,
    },
    /// A pointer to the struct or union of this name.
    StructPtr(String),
}

impl CastTy {
    /// bpftrace's integer type names.
    pub(crate) fn int(name: &str) -> Option<CastTy> {
        let (signed, bits) = match name.strip_prefix('u') {
            Some(rest) => (false, rest.strip_prefix("int")?),
            None => (true, name.strip_prefix("int")?),
        };
        let bytes = match bits {
            "8" => 1,
            "16" => 2,
            "32" => 4,
            "64" => 8,
            _ => return None,
        };
        Some(CastTy::Int { bytes, signed })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expr {
    pub(crate) kind: ExprKind,
    pub(crate) span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ExprKind {
    Int(i64),
    Str(String),
    /// `$name`
    Var(String),
    /// `@name` or `@name[k1, k2]`
    Map {
        name: String,
        keys: Vec<Expr>,
    },
    /// A bare name: a builtin (`pid`, `comm`, `args`).
    Ident(String),
    /// `base.field` or `base->field`
    Field {
        base: Box<Expr>,
        field: String,
    },
    Call {
        name: String,
        args: Vec<Expr>,
    },
    Unary {
        op: UnOp,
        expr: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Ternary {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Cast {
        ty: CastTy,
        expr: Box<Expr>,
    },
    /// `(a, b, ...)`: two or more values; `t.0` reads one (a `Field`
    /// named by its index).
    Tuple(Vec<Expr>),
    /// `x++`, `++x`, `x--`, `--x`
    IncDec {
        target: Box<Expr>,
        increment: bool,
        prefix: bool,
    },
}
