//! A recursive-descent parser for bpftrace's grammar: probes, predicates,
//! blocks, statements, and expressions with C's precedence.
//!
//! Probe names are read as raw text up to a blank, `,`, `{` or (outside
//! uprobe paths) `/`; everything after is tokens. Errors say what was
//! unexpected, as bpftrace does (`syntax error, unexpected ;`).

use super::ast::*;
use super::error::{LangError, Span};
use super::lexer::{Lexer, Tok};

/// Parses a program without positional parameters (`$1` is 0): tests.
#[cfg(test)]
pub(crate) fn parse(src: &str) -> Result<Program, LangError> {
    parse_with(src, &[])
}

/// Parses a program whose positional parameters (`$1`, ...) are `params`.
pub(crate) fn parse_with(src: &str, params: &[String]) -> Result<Program, LangError> {
    let mut p = Parser {
        lexer: Lexer::new(src, 0),
        src,
        tok: Tok::Eof,
        span: Span::default(),
        in_predicate: false,
        params,
        str_arg: false,
        str_param: None,
    };
    let mut probes = Vec::new();
    loop {
        p.lexer.skip_blank()?;
        if p.lexer.pos >= src.len() {
            break;
        }
        if src[p.lexer.pos..].starts_with("struct ") {
            p.skip_struct()?;
            continue;
        }
        probes.push(p.probe()?);
    }
    if probes.is_empty() {
        return Err(LangError::new(Span::new(0, 0), "no probes in the program"));
    }
    Ok(Program { probes })
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    src: &'a str,
    tok: Tok,
    span: Span,
    /// Inside `/.../` (outside parentheses), `/` ends the predicate.
    in_predicate: bool,
    /// The positional parameters, `$1` first.
    params: &'a [String],
    /// Parsing `str()`'s first argument: a positional parameter there is
    /// its text (bpftrace's `str($1)`).
    str_arg: bool,
    /// The parameter (`$1`) `str()`'s first argument took as text.
    str_param: Option<String>,
}

impl<'a> Parser<'a> {
    fn bump(&mut self) -> Result<(Tok, Span), LangError> {
        let (tok, span) = self.lexer.next_token()?;
        let prev = std::mem::replace(&mut self.tok, tok);
        let prev_span = std::mem::replace(&mut self.span, span);
        Ok((prev, prev_span))
    }

    fn unexpected(&self) -> LangError {
        LangError::new(
            self.span,
            format!("syntax error, unexpected {}", self.tok.describe()),
        )
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.tok, Tok::Punct(q) if q == p)
    }

    fn expect(&mut self, p: &str) -> Result<Span, LangError> {
        if self.is(p) {
            Ok(self.bump()?.1)
        } else {
            let mut err = self.unexpected();
            err.message.push_str(&format!(", expecting {p}"));
            Err(err)
        }
    }

    /// A C struct definition at the top (what bpftrace's clang reads
    /// when the kernel has no BTF; scry takes struct types from BTF):
    /// skipped to its closing `};`.
    fn skip_struct(&mut self) -> Result<(), LangError> {
        let start = self.lexer.pos;
        let mut depth = 0usize;
        for (i, c) in self.src[start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        let rest = &self.src[start + i + 1..];
                        let semi = rest.len() - rest.trim_start().len();
                        self.lexer.pos = start + i + 1 + semi;
                        if self.src[self.lexer.pos..].starts_with(';') {
                            self.lexer.pos += 1;
                        }
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        Err(LangError::new(
            Span::new(start, start + 6),
            "unterminated struct definition",
        ))
    }

    fn probe(&mut self) -> Result<Probe, LangError> {
        let mut attach = Vec::new();
        loop {
            self.lexer.skip_blank()?;
            let start = self.lexer.pos;
            let rest = &self.src[start..];
            let is_uprobe = rest.starts_with("uprobe:")
                || rest.starts_with("uretprobe:")
                || rest.starts_with("u:")
                || rest.starts_with("ur:");
            let len = rest
                .find(|c: char| {
                    c.is_whitespace() || c == ',' || c == '{' || (c == '/' && !is_uprobe)
                })
                .unwrap_or(rest.len());
            let span = Span::new(start, start + len);
            if len == 0 {
                self.bump()?;
                return Err(self.unexpected());
            }
            attach.push(AttachPoint {
                text: rest[..len].to_string(),
                span,
            });
            self.lexer.pos = start + len;
            self.lexer.skip_blank()?;
            if self.src[self.lexer.pos..].starts_with(',') {
                self.lexer.pos += 1;
                continue;
            }
            break;
        }
        self.bump()?;
        let predicate = if self.is("/") {
            self.bump()?;
            self.in_predicate = true;
            let e = self.expr()?;
            self.in_predicate = false;
            self.expect("/")?;
            Some(e)
        } else {
            None
        };
        let body = self.block()?;
        // The lexer has read one token past the block; probes start over
        // from raw text, so step back to it.
        self.lexer.pos = self.span.start;
        Ok(Probe {
            attach,
            predicate,
            body,
        })
    }

    fn block(&mut self) -> Result<Vec<Stmt>, LangError> {
        self.expect("{")?;
        let mut stmts = Vec::new();
        loop {
            if self.is("}") {
                self.bump()?;
                return Ok(stmts);
            }
            if self.is(";") {
                self.bump()?;
                continue;
            }
            let stmt = self.stmt()?;
            let ends_in_block = matches!(
                stmt,
                Stmt::If { .. } | Stmt::While { .. } | Stmt::Unroll { .. }
            );
            stmts.push(stmt);
            if !ends_in_block && !self.is("}") {
                self.expect(";")?;
            }
        }
    }

    fn stmt(&mut self) -> Result<Stmt, LangError> {
        let word = match &self.tok {
            Tok::Ident(w) => w.clone(),
            _ => String::new(),
        };
        match word.as_str() {
            "while" | "unroll" => {
                let start = self.span;
                self.bump()?;
                self.expect("(")?;
                let cond = self.expr()?;
                let end = self.expect(")")?;
                let body = self.block()?;
                if word == "while" {
                    return Ok(Stmt::While { cond, body });
                }
                let span = start.to(end);
                return match cond.kind {
                    ExprKind::Int(count) if (1..=100).contains(&count) => {
                        Ok(Stmt::Unroll { count, body, span })
                    }
                    _ => Err(LangError::new(
                        cond.span,
                        "unroll takes an integer literal from 1 to 100",
                    )),
                };
            }
            "break" | "continue" => {
                let (_, span) = self.bump()?;
                return Ok(if word == "break" {
                    Stmt::Break(span)
                } else {
                    Stmt::Continue(span)
                });
            }
            _ => {}
        }
        if self.tok == Tok::Ident("if".into()) {
            self.bump()?;
            self.expect("(")?;
            let cond = self.expr()?;
            self.expect(")")?;
            let then = self.block()?;
            let otherwise = if self.tok == Tok::Ident("else".into()) {
                self.bump()?;
                if self.tok == Tok::Ident("if".into()) {
                    vec![self.stmt()?]
                } else {
                    self.block()?
                }
            } else {
                Vec::new()
            };
            return Ok(Stmt::If {
                cond,
                then,
                otherwise,
            });
        }
        let target = self.expr()?;
        let op = match &self.tok {
            Tok::Punct("=") => None,
            Tok::Punct(p) => match compound_op(p) {
                Some(op) => Some(op),
                None => return Ok(Stmt::Expr(target)),
            },
            _ => return Ok(Stmt::Expr(target)),
        };
        if !matches!(target.kind, ExprKind::Var(_) | ExprKind::Map { .. }) {
            return Err(LangError::new(
                target.span,
                "only variables and maps can be assigned to",
            ));
        }
        self.bump()?;
        let value = self.expr()?;
        let span = target.span.to(value.span);
        Ok(Stmt::Assign {
            target,
            op,
            value,
            span,
        })
    }

    fn expr(&mut self) -> Result<Expr, LangError> {
        let cond = self.binary(0)?;
        if !self.is("?") {
            return Ok(cond);
        }
        self.bump()?;
        let then = self.expr()?;
        self.expect(":")?;
        let otherwise = self.expr()?;
        let span = cond.span.to(otherwise.span);
        Ok(Expr {
            kind: ExprKind::Ternary {
                cond: Box::new(cond),
                then: Box::new(then),
                otherwise: Box::new(otherwise),
            },
            span,
        })
    }

    /// Precedence climbing over the binary operators.
    fn binary(&mut self, min_level: u8) -> Result<Expr, LangError> {
        let mut lhs = self.unary()?;
        loop {
            let Some((op, level)) = (match &self.tok {
                Tok::Punct(p) => binary_op(p),
                _ => None,
            }) else {
                return Ok(lhs);
            };
            if level < min_level || (op == BinOp::Div && self.in_predicate) {
                return Ok(lhs);
            }
            self.bump()?;
            let rhs = self.binary(level + 1)?;
            let span = lhs.span.to(rhs.span);
            lhs = Expr {
                kind: ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            };
        }
    }

    fn unary(&mut self) -> Result<Expr, LangError> {
        let start = self.span;
        let op = match self.tok {
            Tok::Punct("-") => Some(UnOp::Neg),
            Tok::Punct("!") => Some(UnOp::Not),
            Tok::Punct("~") => Some(UnOp::BitNot),
            Tok::Punct("*") => Some(UnOp::Deref),
            _ => None,
        };
        if let Some(op) = op {
            self.bump()?;
            let expr = self.unary()?;
            let span = start.to(expr.span);
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op,
                    expr: Box::new(expr),
                },
                span,
            });
        }
        if self.is("++") || self.is("--") {
            let increment = self.is("++");
            self.bump()?;
            let target = self.postfix()?;
            let span = start.to(target.span);
            return Ok(Expr {
                kind: ExprKind::IncDec {
                    target: Box::new(target),
                    increment,
                    prefix: true,
                },
                span,
            });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> Result<Expr, LangError> {
        let mut e = self.primary()?;
        loop {
            if self.is(".") || self.is("->") {
                self.bump()?;
                let (tok, span) = self.bump()?;
                let field = match tok {
                    Tok::Ident(field) => field,
                    // `t.0`: a tuple's element.
                    Tok::Int(n) if n >= 0 => n.to_string(),
                    tok => {
                        self.tok = tok;
                        self.span = span;
                        return Err(self.unexpected());
                    }
                };
                let span = e.span.to(span);
                e = Expr {
                    kind: ExprKind::Field {
                        base: Box::new(e),
                        field,
                    },
                    span,
                };
            } else if self.is("++") || self.is("--") {
                let increment = self.is("++");
                let (_, span) = self.bump()?;
                let span = e.span.to(span);
                e = Expr {
                    kind: ExprKind::IncDec {
                        target: Box::new(e),
                        increment,
                        prefix: false,
                    },
                    span,
                };
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, LangError> {
        let (tok, span) = match &self.tok {
            Tok::Eof | Tok::Punct(_) if !self.is("(") => return Err(self.unexpected()),
            _ => self.bump()?,
        };
        let kind = match tok {
            Tok::Int(v) => ExprKind::Int(v),
            Tok::Str(s) => ExprKind::Str(s),
            Tok::Var(name) if name == "#" => ExprKind::Int(self.params.len() as i64),
            Tok::Var(name) if name.bytes().all(|b| b.is_ascii_digit()) => {
                if self.str_arg {
                    self.str_param = Some(format!("${name}"));
                }
                super::positional::value(self.params, &name, self.str_arg, span)?
            }
            Tok::Var(name) => ExprKind::Var(name),
            Tok::Map(name) => {
                let mut keys = Vec::new();
                let mut end = span;
                if self.is("[") {
                    self.bump()?;
                    keys = self.list("]")?;
                    end = self.expect("]")?;
                }
                return Ok(Expr {
                    kind: ExprKind::Map { name, keys },
                    span: span.to(end),
                });
            }
            Tok::Ident(name) => {
                if self.is("(") {
                    self.bump()?;
                    if name == "sizeof"
                        && let Some(ty) = self.record_name()?
                    {
                        let end = self.expect(")")?;
                        return Ok(Expr {
                            kind: ExprKind::Call {
                                name,
                                args: vec![ty],
                            },
                            span: span.to(end),
                        });
                    }
                    let outer = std::mem::replace(&mut self.in_predicate, false);
                    self.str_arg = name == "str";
                    let mut args = self.list(")")?;
                    self.str_arg = false;
                    self.in_predicate = outer;
                    let end = self.expect(")")?;
                    if name == "str" {
                        let param = self.str_param.take();
                        super::positional::fold_offset(&mut args, param.as_deref())?;
                    }
                    return Ok(Expr {
                        kind: ExprKind::Call { name, args },
                        span: span.to(end),
                    });
                }
                ExprKind::Ident(name)
            }
            Tok::Punct(_) | Tok::Eof => {
                if let Some(ty) = self.cast_type()? {
                    let expr = self.unary()?;
                    let span = span.to(expr.span);
                    return Ok(Expr {
                        kind: ExprKind::Cast {
                            ty,
                            expr: Box::new(expr),
                        },
                        span,
                    });
                }
                let outer = std::mem::replace(&mut self.in_predicate, false);
                let e = self.expr()?;
                if !self.is(",") {
                    self.in_predicate = outer;
                    self.expect(")")?;
                    return Ok(e);
                }
                self.bump()?;
                let mut elems = vec![e];
                elems.extend(self.list(")")?);
                self.in_predicate = outer;
                let end = self.expect(")")?;
                return Ok(Expr {
                    kind: ExprKind::Tuple(elems),
                    span: span.to(end),
                });
            }
        };
        Ok(Expr { kind, span })
    }

    /// After a `(`: the type of a cast and its `)`, or None (a
    /// parenthesized expression follows).
    fn cast_type(&mut self) -> Result<Option<CastTy>, LangError> {
        let Tok::Ident(word) = &self.tok else {
            return Ok(None);
        };
        if let Some(ty) = CastTy::int(word) {
            self.bump()?;
            self.expect(")")?;
            return Ok(Some(ty));
        }
        if word != "struct" && word != "union" {
            return Ok(None);
        }
        self.bump()?;
        let Tok::Ident(name) = self.tok.clone() else {
            return Err(self.unexpected());
        };
        self.bump()?;
        let mut stars = 0;
        while self.is("*") {
            self.bump()?;
            stars += 1;
        }
        if stars != 1 {
            return Err(LangError::new(
                self.span,
                "only casts to a struct pointer (struct NAME *) are supported",
            ));
        }
        self.expect(")")?;
        Ok(Some(CastTy::StructPtr(name)))
    }

    /// `struct NAME` or `union NAME` (in `sizeof`), as an identifier
    /// holding both words; None when something else follows.
    fn record_name(&mut self) -> Result<Option<Expr>, LangError> {
        let Tok::Ident(word) = self.tok.clone() else {
            return Ok(None);
        };
        if word != "struct" && word != "union" {
            return Ok(None);
        }
        let (_, start) = self.bump()?;
        let (Tok::Ident(name), end) = self.bump()? else {
            return Err(self.unexpected());
        };
        Ok(Some(Expr {
            kind: ExprKind::Ident(format!("{word} {name}")),
            span: start.to(end),
        }))
    }

    /// Comma-separated expressions up to (not including) `close`.
    fn list(&mut self, close: &str) -> Result<Vec<Expr>, LangError> {
        let mut out = Vec::new();
        if self.is(close) {
            return Ok(out);
        }
        loop {
            out.push(self.expr()?);
            if !self.is(",") {
                return Ok(out);
            }
            // Only str()'s first argument takes a parameter's text.
            self.str_arg = false;
            self.bump()?;
        }
    }
}

fn compound_op(p: &str) -> Option<BinOp> {
    Some(match p {
        "+=" => BinOp::Add,
        "-=" => BinOp::Sub,
        "*=" => BinOp::Mul,
        "/=" => BinOp::Div,
        "%=" => BinOp::Mod,
        "&=" => BinOp::And,
        "|=" => BinOp::Or,
        "^=" => BinOp::Xor,
        "<<=" => BinOp::Shl,
        ">>=" => BinOp::Shr,
        _ => return None,
    })
}

/// The operator and its level (higher binds tighter), C's order.
fn binary_op(p: &str) -> Option<(BinOp, u8)> {
    Some(match p {
        "||" => (BinOp::LogOr, 1),
        "&&" => (BinOp::LogAnd, 2),
        "|" => (BinOp::Or, 3),
        "^" => (BinOp::Xor, 4),
        "&" => (BinOp::And, 5),
        "==" => (BinOp::Eq, 6),
        "!=" => (BinOp::Ne, 6),
        "<" => (BinOp::Lt, 7),
        "<=" => (BinOp::Le, 7),
        ">" => (BinOp::Gt, 7),
        ">=" => (BinOp::Ge, 7),
        "<<" => (BinOp::Shl, 8),
        ">>" => (BinOp::Shr, 8),
        "+" => (BinOp::Add, 9),
        "-" => (BinOp::Sub, 9),
        "*" => (BinOp::Mul, 10),
        "/" => (BinOp::Div, 10),
        "%" => (BinOp::Mod, 10),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str) -> Probe {
        let prog = parse(src).expect("parses");
        assert_eq!(prog.probes.len(), 1);
        prog.probes.into_iter().next().expect("one probe")
    }

    #[test]
    fn probes_sharing_a_block_with_predicate() {
        let p = one("tracepoint:a:b, tracepoint:c:d /pid == 42/ { @[comm] = count(); }");
        let names: Vec<_> = p.attach.iter().map(|a| a.text.as_str()).collect();
        assert_eq!(names, ["tracepoint:a:b", "tracepoint:c:d"]);
        assert!(matches!(
            p.predicate.as_ref().map(|e| &e.kind),
            Some(ExprKind::Binary { op: BinOp::Eq, .. })
        ));
        assert_eq!(p.body.len(), 1);
    }

    #[test]
    fn several_probes_and_uprobe_paths() {
        let prog = parse("BEGIN { printf(\"hi\\n\"); } uprobe:/bin/bash:readline { @x++ } END{}")
            .expect("parses");
        assert_eq!(prog.probes.len(), 3);
        assert_eq!(prog.probes[1].attach[0].text, "uprobe:/bin/bash:readline");
        assert!(prog.probes[2].body.is_empty());
    }

    #[test]
    fn precedence() {
        let p = one("BEGIN { $x = 1 + 2 * 3 == 7 && !0 ? 1 : 2; }");
        let Stmt::Assign { value, .. } = &p.body[0] else {
            panic!("assignment");
        };
        let ExprKind::Ternary { cond, .. } = &value.kind else {
            panic!("ternary: {value:?}");
        };
        let ExprKind::Binary { op, lhs, .. } = &cond.kind else {
            panic!("binary");
        };
        assert_eq!(*op, BinOp::LogAnd);
        let ExprKind::Binary { op, lhs, .. } = &lhs.kind else {
            panic!("binary");
        };
        assert_eq!(*op, BinOp::Eq);
        assert!(matches!(&lhs.kind, ExprKind::Binary { op: BinOp::Add, .. }));
    }

    #[test]
    fn statements() {
        let p = one(
            "k:f { if (args->x > 1) { @a[1, comm] += 2; } else if ($y) { $y--; } else { delete(@a[1, comm]) } @b = args.y }",
        );
        assert_eq!(p.body.len(), 2);
        let Stmt::If {
            then, otherwise, ..
        } = &p.body[0]
        else {
            panic!("if");
        };
        assert!(matches!(
            then[0],
            Stmt::Assign {
                op: Some(BinOp::Add),
                ..
            }
        ));
        assert!(matches!(otherwise[0], Stmt::If { .. }));
    }

    #[test]
    fn syntax_error_names_the_token() {
        let err = parse("BEGIN { @x = 1 +; }").expect_err("fails");
        assert_eq!(err.message, "syntax error, unexpected ;");
        assert_eq!(err.span.start, 16);
        let err = parse("BEGIN { @x = 1 ").expect_err("fails");
        assert!(err.message.contains("end of file"), "{}", err.message);
        let err = parse("BEGIN { 1 = 2; }").expect_err("fails");
        assert!(err.message.contains("assigned"), "{}", err.message);
    }
}
