//! The syntax tree of a program: probes (several attach points may share
//! one block), an optional predicate, statements and expressions. Every
//! node keeps its span for the error messages of the later passes.

use super::error::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub probes: Vec<Probe>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub attach: Vec<AttachPoint>,
    pub predicate: Option<Expr>,
    pub body: Vec<Stmt>,
}

/// One probe name as written (`tracepoint:sched:sched_switch`).
#[derive(Clone, Debug, PartialEq)]
pub struct AttachPoint {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
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
pub enum BinOp {
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
    pub fn symbol(self) -> &'static str {
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

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
    BitNot,
    /// `*ptr`: the value at an address.
    Deref,
}

/// The type of a cast: `(uint32)x`, `(struct task_struct *)p`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CastTy {
    Int {
        bytes: usize,
        signed: bool,
    },
    /// A pointer to the struct or union of this name.
    StructPtr(String),
}

impl CastTy {
    /// bpftrace's integer type names.
    pub fn int(name: &str) -> Option<CastTy> {
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
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
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
    /// `x++`, `++x`, `x--`, `--x`
    IncDec {
        target: Box<Expr>,
        increment: bool,
        prefix: bool,
    },
}
