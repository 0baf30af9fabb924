//! The `print fmt:` of a tracepoint, parsed: a C format string and the C
//! expressions that feed it (`REC->field`, casts, arithmetic, ternaries,
//! `__get_str`, `__print_flags`, `__print_symbolic`, `__print_hex`, ...).
//! `print_render` evaluates the result against a record's bytes.
//!
//! Decisions:
//! - A small C expression grammar (precedence climbing), not a macro
//!   expander: the kernel has already expanded its macros, so what remains
//!   is literals, identifiers, operators, casts and calls.
//! - A parenthesized list of identifiers (and `*`) is a cast when it reads
//!   as a C type (`unsigned long`, `u64`, `pid_t`, `struct page *`,
//!   `( gfp_t)`); otherwise it is a parenthesized expression.
//! - Calls keep their name; which helpers exist is the renderer's business,
//!   so an unknown helper still parses (and then renders as the
//!   `field=value` fallback).
//!
//! Invariants: `parse` never panics and never recurses deeper than
//! `MAX_DEPTH` (hostile input cannot overflow the stack).

use super::format::type_size;

/// Nesting limit for parenthesized or nested expressions.
const MAX_DEPTH: usize = 200;

/// Why a print fmt does not parse, and where (a byte of the text, or a
/// token's index).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PrintFmtError {
    /// A character no token starts with.
    #[error("unexpected character '{ch}' at byte {at}")]
    UnexpectedChar {
        /// The character found.
        ch: char,
        /// Its byte offset in the print fmt text.
        at: usize,
    },
    /// A string or character literal without its closing quote.
    #[error("unterminated literal starting at byte {at}")]
    Unterminated {
        /// Byte offset of the opening quote in the print fmt text.
        at: usize,
    },
    /// A numeric literal that does not parse as a 64-bit number; holds its
    /// text.
    #[error("bad number '{0}'")]
    BadNumber(String),
    /// The grammar wanted one token and found another.
    #[error("expected {want} at token {at}, found {found}")]
    Expected {
        /// What the parser wanted (e.g. "an operand").
        want: String,
        /// Index of the offending token, from 0.
        at: usize,
        /// The token found instead.
        found: String,
    },
    /// Parentheses or operators nested past the parser's depth limit.
    #[error("expression nested too deeply (over {MAX_DEPTH} levels)")]
    TooDeep,
    /// The print fmt's first token is not the format string literal.
    #[error("print fmt does not start with a string: {found}")]
    NoFormat {
        /// The token found first instead.
        found: String,
    },
    /// Tokens left after the last argument.
    #[error("unexpected {found} after argument {after}")]
    Trailing {
        /// The first token left over.
        found: String,
        /// How many arguments after the format string were parsed.
        after: usize,
    },
}

/// A parsed print fmt.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintFmt {
    /// The format string, escapes resolved (`\n` is a newline).
    pub(crate) format: String,
    pub(crate) args: Vec<Expr>,
}

/// A C type in a cast or `sizeof`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CType {
    /// As written, words joined by one space (`unsigned long`, `struct page *`).
    pub(crate) name: String,
    /// Bytes; pointers and unknown named types are 8.
    pub(crate) size: usize,
    pub(crate) signed: bool,
    pub(crate) pointer: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    Neg,
    Not,
    BitNot,
    /// `&x`: the address of a field (its bytes, for `%pI4` and friends).
    AddrOf,
    /// `*x`
    Deref,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

/// One C expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    Num(u64),
    Str(String),
    /// `REC->name`
    Field(String),
    /// A bare identifier (an enum constant the kernel did not expand).
    Ident(String),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(CType, Box<Expr>),
    Index(Box<Expr>, Box<Expr>),
    /// `name(args)`, e.g. `__print_flags(...)`.
    Call(String, Vec<Expr>),
    /// `{ a, b }` (the pairs of `__print_flags` / `__print_symbolic`).
    List(Vec<Expr>),
    Sizeof(CType),
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Num(u64),
    Str(String),
    Ident(String),
    Punct(&'static str),
}

const PUNCTS: &[&str] = &[
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "[", "]", "{", "}", ",", "?",
    ":", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "!", "~", ".",
];

fn lex(text: &str) -> Result<Vec<Token>, PrintFmtError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let (s, next) = lex_string(text, i + 1)?;
            // Adjacent literals concatenate, as in C.
            if let Some(Token::Str(prev)) = tokens.last_mut() {
                prev.push_str(&s);
            } else {
                tokens.push(Token::Str(s));
            }
            i = next;
        } else if c == b'\'' {
            let (s, next) = lex_string_until(text, i + 1, b'\'')?;
            let value = s.chars().next().map_or(0, |ch| ch as u64);
            tokens.push(Token::Num(value));
            i = next;
        } else if c.is_ascii_digit() {
            let start = i;
            while bytes
                .get(i)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                i += 1;
            }
            tokens.push(Token::Num(parse_number(&text[start..i])?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while bytes
                .get(i)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                i += 1;
            }
            tokens.push(Token::Ident(text[start..i].to_string()));
        } else {
            let rest = &text[i..];
            let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) else {
                return Err(PrintFmtError::UnexpectedChar {
                    ch: c as char,
                    at: i,
                });
            };
            tokens.push(Token::Punct(p));
            i += p.len();
        }
    }
    Ok(tokens)
}

fn lex_string(text: &str, start: usize) -> Result<(String, usize), PrintFmtError> {
    lex_string_until(text, start, b'"')
}

/// A C literal body starting at `start`, up to the closing `quote`; returns
/// the text (escapes resolved) and the index after the quote.
fn lex_string_until(text: &str, start: usize, quote: u8) -> Result<(String, usize), PrintFmtError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = start;
    loop {
        match bytes.get(i) {
            None => return Err(PrintFmtError::Unterminated { at: start }),
            Some(&b) if b == quote => {
                return Ok((String::from_utf8_lossy(&out).into_owned(), i + 1));
            }
            Some(b'\\') => {
                let esc = bytes.get(i + 1).copied().unwrap_or(b'\\');
                i += 2;
                match esc {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'0'..=b'7' => {
                        let mut v = u32::from(esc - b'0');
                        for _ in 0..2 {
                            match bytes.get(i) {
                                Some(d @ b'0'..=b'7') => {
                                    v = v * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        out.push(v as u8);
                    }
                    other => out.push(other),
                }
            }
            Some(&b) => {
                out.push(b);
                i += 1;
            }
        }
    }
}

fn parse_number(text: &str) -> Result<u64, PrintFmtError> {
    let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
    let parsed = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(hex, 16)
    } else if digits.len() > 1 && digits.starts_with('0') {
        u64::from_str_radix(&digits[1..], 8)
    } else {
        digits.parse::<u64>()
    };
    parsed.map_err(|_| PrintFmtError::BadNumber(text.to_string()))
}

fn is_type_word(word: &str) -> bool {
    matches!(
        word,
        "unsigned"
            | "signed"
            | "int"
            | "long"
            | "short"
            | "char"
            | "bool"
            | "_Bool"
            | "void"
            | "const"
            | "volatile"
            | "struct"
            | "enum"
            | "union"
            | "uint"
            | "ulong"
            | "ushort"
            | "uchar"
    ) || word.ends_with("_t")
        || type_size(word).is_some()
}

/// A C type from its words (`["unsigned", "long"]`) and pointer stars.
fn ctype(words: &[String], pointer: bool) -> CType {
    let name = words.join(" ");
    let size = if pointer {
        8
    } else {
        type_size(&name).unwrap_or(8)
    };
    let signed = !pointer
        && !words
            .iter()
            .any(|w| w == "unsigned" || w == "bool" || w == "_Bool")
        && words.iter().any(|w| {
            matches!(
                w.trim_start_matches('_'),
                "int"
                    | "long"
                    | "short"
                    | "char"
                    | "signed"
                    | "s8"
                    | "s16"
                    | "s32"
                    | "s64"
                    | "ssize_t"
                    | "loff_t"
                    | "pid_t"
                    | "int8_t"
                    | "int16_t"
                    | "int32_t"
                    | "int64_t"
            )
        });
    let name = if pointer { format!("{name} *") } else { name };
    CType {
        name,
        size,
        signed,
        pointer,
    }
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    /// `want` was expected at the current token.
    fn expected(&self, want: &str) -> PrintFmtError {
        PrintFmtError::Expected {
            want: want.to_string(),
            at: self.pos,
            found: self
                .peek()
                .map_or_else(|| "the end".to_string(), |t| format!("{t:?}")),
        }
    }

    fn peek_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Token::Punct(q)) if *q == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.peek_punct(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), PrintFmtError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("'{p}'")))
        }
    }

    fn enter(&mut self) -> Result<(), PrintFmtError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(PrintFmtError::TooDeep)
        } else {
            Ok(())
        }
    }

    fn expr(&mut self) -> Result<Expr, PrintFmtError> {
        self.enter()?;
        let cond = self.binary(0)?;
        let result = if self.eat("?") {
            let then = self.expr()?;
            self.expect(":")?;
            let otherwise = self.expr()?;
            Expr::Ternary(Box::new(cond), Box::new(then), Box::new(otherwise))
        } else {
            cond
        };
        self.depth -= 1;
        Ok(result)
    }

    fn binary_op(&self) -> Option<(BinaryOp, u8)> {
        let Some(Token::Punct(p)) = self.peek() else {
            return None;
        };
        Some(match *p {
            "||" => (BinaryOp::Or, 1),
            "&&" => (BinaryOp::And, 2),
            "|" => (BinaryOp::BitOr, 3),
            "^" => (BinaryOp::BitXor, 4),
            "&" => (BinaryOp::BitAnd, 5),
            "==" => (BinaryOp::Eq, 6),
            "!=" => (BinaryOp::Ne, 6),
            "<" => (BinaryOp::Lt, 7),
            ">" => (BinaryOp::Gt, 7),
            "<=" => (BinaryOp::Le, 7),
            ">=" => (BinaryOp::Ge, 7),
            "<<" => (BinaryOp::Shl, 8),
            ">>" => (BinaryOp::Shr, 8),
            "+" => (BinaryOp::Add, 9),
            "-" => (BinaryOp::Sub, 9),
            "*" => (BinaryOp::Mul, 10),
            "/" => (BinaryOp::Div, 10),
            "%" => (BinaryOp::Rem, 10),
            _ => return None,
        })
    }

    /// Left-associative binary operators binding tighter than `min`.
    fn binary(&mut self, min: u8) -> Result<Expr, PrintFmtError> {
        let mut left = self.unary()?;
        while let Some((op, prec)) = self.binary_op() {
            if prec <= min {
                break;
            }
            self.pos += 1;
            let right = self.binary(prec)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, PrintFmtError> {
        self.enter()?;
        let op = match self.peek() {
            Some(Token::Punct("-")) => Some(UnaryOp::Neg),
            Some(Token::Punct("!")) => Some(UnaryOp::Not),
            Some(Token::Punct("~")) => Some(UnaryOp::BitNot),
            Some(Token::Punct("&")) => Some(UnaryOp::AddrOf),
            Some(Token::Punct("*")) => Some(UnaryOp::Deref),
            Some(Token::Punct("+")) => {
                self.pos += 1;
                let e = self.unary();
                self.depth -= 1;
                return e;
            }
            _ => None,
        };
        let result = match op {
            Some(op) => {
                self.pos += 1;
                Expr::Unary(op, Box::new(self.unary()?))
            }
            None => {
                if let Some(ty) = self.try_cast()? {
                    Expr::Cast(ty, Box::new(self.unary()?))
                } else {
                    self.postfix()?
                }
            }
        };
        self.depth -= 1;
        Ok(result)
    }

    /// `(TYPE)` at the cursor: consumes it and returns the type.
    fn try_cast(&mut self) -> Result<Option<CType>, PrintFmtError> {
        if !self.peek_punct("(") {
            return Ok(None);
        }
        let mut words = Vec::new();
        let mut pointer = false;
        let mut i = self.pos + 1;
        loop {
            match self.tokens.get(i) {
                Some(Token::Ident(w)) if !pointer => words.push(w.clone()),
                Some(Token::Punct("*")) if !words.is_empty() => pointer = true,
                Some(Token::Punct(")")) => break,
                _ => return Ok(None),
            }
            i += 1;
        }
        let tagged = words
            .first()
            .is_some_and(|w| matches!(w.as_str(), "struct" | "enum" | "union"));
        let is_type = !words.is_empty()
            && (tagged || pointer && words.len() == 1 || words.iter().all(|w| is_type_word(w)));
        if !is_type {
            return Ok(None);
        }
        self.pos = i + 1;
        Ok(Some(ctype(&words, pointer)))
    }

    fn postfix(&mut self) -> Result<Expr, PrintFmtError> {
        let mut e = self.primary()?;
        loop {
            if self.eat("[") {
                let index = self.expr()?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(index));
            } else if self.peek_punct("->") || self.peek_punct(".") {
                self.pos += 1;
                let Some(Token::Ident(member)) = self.peek().cloned() else {
                    return Err(self.expected("a member name"));
                };
                self.pos += 1;
                e = match e {
                    Expr::Ident(base) if base == "REC" => Expr::Field(member),
                    // `REC->a.b` and other member chains: the last name is
                    // what the format's fields call it.
                    _ => Expr::Field(member),
                };
            } else {
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, PrintFmtError> {
        let token = self
            .peek()
            .cloned()
            .ok_or_else(|| self.expected("an operand"))?;
        self.pos += 1;
        match token {
            Token::Num(n) => Ok(Expr::Num(n)),
            Token::Str(s) => Ok(Expr::Str(s)),
            Token::Ident(name) if name == "sizeof" => {
                self.expect("(")?;
                let mut words = Vec::new();
                let mut pointer = false;
                while let Some(t) = self.peek().cloned() {
                    self.pos += 1;
                    match t {
                        Token::Ident(w) => words.push(w),
                        Token::Punct("*") => pointer = true,
                        Token::Punct(")") => return Ok(Expr::Sizeof(ctype(&words, pointer))),
                        other => {
                            return Err(PrintFmtError::Expected {
                                want: "a type name in sizeof".to_string(),
                                at: self.pos - 1,
                                found: format!("{other:?}"),
                            });
                        }
                    }
                }
                Err(self.expected("')' closing sizeof"))
            }
            Token::Ident(name) => {
                if self.eat("(") {
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            args.push(self.arg()?);
                            if self.eat(")") {
                                break;
                            }
                            self.expect(",")?;
                        }
                    }
                    Ok(Expr::Call(name, args))
                } else {
                    Ok(Expr::Ident(name))
                }
            }
            Token::Punct("(") => {
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Token::Punct("{") => {
                let mut items = Vec::new();
                if !self.eat("}") {
                    loop {
                        items.push(self.arg()?);
                        if self.eat("}") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                Ok(Expr::List(items))
            }
            Token::Punct(p) => Err(PrintFmtError::Expected {
                want: "an operand".to_string(),
                at: self.pos - 1,
                found: format!("'{p}'"),
            }),
        }
    }

    /// A call argument or list item: an expression or a `{...}` list.
    fn arg(&mut self) -> Result<Expr, PrintFmtError> {
        self.enter()?;
        let e = self.expr();
        self.depth -= 1;
        e
    }
}

/// Parses the text after `print fmt:`. `Err` says why it does not parse.
pub fn parse(text: &str) -> Result<PrintFmt, PrintFmtError> {
    let tokens = lex(text)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let format = match parser.peek().cloned() {
        Some(Token::Str(s)) => s,
        other => {
            return Err(PrintFmtError::NoFormat {
                found: format!("{other:?}"),
            });
        }
    };
    parser.pos += 1;
    let mut args = Vec::new();
    while parser.eat(",") {
        args.push(parser.arg()?);
    }
    if parser.pos != parser.tokens.len() {
        return Err(PrintFmtError::Trailing {
            found: format!("{:?}", parser.peek()),
            after: args.len(),
        });
    }
    Ok(PrintFmt { format, args })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str) -> Box<Expr> {
        Box::new(Expr::Field(name.to_string()))
    }

    #[test]
    fn format_string_and_fields() {
        let p = parse(r#""a=%d\tb=%s\n" "tail", REC->a, REC->b"#).expect("parse");
        assert_eq!(p.format, "a=%d\tb=%s\ntail");
        assert_eq!(p.args, vec![*field("a"), *field("b")]);
    }

    #[test]
    fn precedence_casts_and_ternary() {
        let p = parse(r#""%d", (unsigned int) ((REC->dev) >> 20) + 1 * 2 ? 3 : 4"#).expect("parse");
        let Expr::Ternary(cond, ..) = &p.args[0] else {
            panic!("{:?}", p.args[0])
        };
        let Expr::Binary(BinaryOp::Add, left, right) = &**cond else {
            panic!("{cond:?}")
        };
        match &**left {
            Expr::Cast(ty, inner) => {
                assert_eq!(
                    (ty.name.as_str(), ty.size, ty.signed),
                    ("unsigned int", 4, false)
                );
                assert_eq!(
                    **inner,
                    Expr::Binary(BinaryOp::Shr, field("dev"), Box::new(Expr::Num(20)))
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            **right,
            Expr::Binary(
                BinaryOp::Mul,
                Box::new(Expr::Num(1)),
                Box::new(Expr::Num(2))
            )
        );
        // A parenthesized field is not a cast; `( gfp_t)` and pointers are.
        let p = parse(r#""%d", (REC->x) - 1, ( gfp_t)5, (struct page *)vmemmap_base"#).expect("p");
        assert!(matches!(p.args[0], Expr::Binary(BinaryOp::Sub, ..)));
        assert!(matches!(&p.args[1], Expr::Cast(t, _) if t.name == "gfp_t"));
        assert!(matches!(&p.args[2], Expr::Cast(t, _) if t.pointer));
    }

    #[test]
    fn helpers_lists_and_numbers() {
        let p = parse(
            r#""%s", __print_flags(REC->f, "|", { 0x1, "A" }, {010UL, "B"}), REC->args[2], sizeof(u64)"#,
        )
        .expect("parse");
        let Expr::Call(name, args) = &p.args[0] else {
            panic!()
        };
        assert_eq!(name, "__print_flags");
        assert_eq!(
            args[2],
            Expr::List(vec![Expr::Num(1), Expr::Str("A".into())])
        );
        assert_eq!(
            args[3],
            Expr::List(vec![Expr::Num(8), Expr::Str("B".into())])
        );
        assert_eq!(
            p.args[1],
            Expr::Index(field("args"), Box::new(Expr::Num(2)))
        );
        assert!(matches!(&p.args[2], Expr::Sizeof(t) if t.size == 8));
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [
            "",
            "REC->x",
            r#""%d", "#,
            r#""%d", (REC->x"#,
            r#""unterminated"#,
            r#""%d", REC->"#,
            r#""%d", 0xZZ"#,
            r#""%d", a ? b"#,
            r#""%d", @"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let deep = format!("\"%d\", {}1{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(parse(&deep).unwrap_err(), PrintFmtError::TooDeep);
        let deep = format!("\"%d\", {}1", "-".repeat(5000));
        assert!(parse(&deep).is_err());
    }
}
