//! Tokens of bpftrace's language. Probe names are not tokens here: the
//! parser reads them as raw text (`uprobe:/bin/bash:readline` holds
//! slashes and colons that mean nothing to the expression grammar) and
//! starts the lexer at the predicate or the block.

use super::error::{LangError, Span};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Int(i64),
    Str(String),
    /// A name: a builtin, a function, a keyword (`if`, `else`).
    Ident(String),
    /// `$name`
    Var(String),
    /// `@name` (`@` alone: the unnamed map, name "")
    Map(String),
    /// An operator or punctuation, as written (`+=`, `->`, `{`).
    Punct(&'static str),
    Eof,
}

impl Tok {
    /// How a syntax error names the token (`unexpected ;`).
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Int(v) => v.to_string(),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::Ident(s) => s.clone(),
            Tok::Var(s) => format!("${s}"),
            Tok::Map(s) => format!("@{s}"),
            Tok::Punct(p) => (*p).to_string(),
            Tok::Eof => "end of file".to_string(),
        }
    }
}

/// Longest first, so `<<=` wins over `<<` and `<`.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "->", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "==", "!=",
    "<=", ">=", "&&", "||", "<<", ">>", "+", "-", "*", "/", "%", "&", "|", "^", "!", "~", "<", ">",
    "=", "(", ")", "{", "}", "[", "]", ",", ";", "?", ":", ".",
];

pub(crate) struct Lexer<'a> {
    src: &'a str,
    pub(crate) pos: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str, pos: usize) -> Lexer<'a> {
        Lexer { src, pos }
    }

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    /// Skips blanks and comments; an unclosed `/*` is an error.
    pub(crate) fn skip_blank(&mut self) -> Result<(), LangError> {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            let at_line_start = self.src[..self.pos]
                .chars()
                .next_back()
                .is_none_or(|c| c == '\n');
            if trimmed.starts_with("//") || (trimmed.starts_with('#') && at_line_start) {
                // Comments; `#!` and `#include` lines (the C preprocessor's,
                // which scry does not run) too.
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if let Some(body) = trimmed.strip_prefix("/*") {
                match body.find("*/") {
                    Some(i) => self.pos += i + 4,
                    None => {
                        return Err(LangError::new(
                            Span::new(self.pos, self.pos + 2),
                            "unterminated comment",
                        ));
                    }
                }
            } else {
                return Ok(());
            }
        }
    }

    /// The next token and its span.
    pub(crate) fn next_token(&mut self) -> Result<(Tok, Span), LangError> {
        self.skip_blank()?;
        let start = self.pos;
        let rest = self.rest();
        let Some(c) = rest.chars().next() else {
            return Ok((Tok::Eof, Span::new(start, start)));
        };
        let word_len = |s: &str| {
            s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(s.len())
        };
        let tok = if c.is_ascii_digit() {
            let len = word_len(rest);
            let text = &rest[..len];
            self.pos += len;
            let value = if let Some(hex) = text.strip_prefix("0x") {
                // Kernel addresses: the bits of a u64, as bpftrace reads them.
                u64::from_str_radix(hex, 16).ok().map(|v| v as i64)
            } else if let Some((mantissa, exp)) = text.split_once('e') {
                // bpftrace's `1e6`: an integer times a power of ten.
                let (m, e) = (mantissa.parse::<i64>().ok(), exp.parse::<u32>().ok());
                m.zip(e)
                    .and_then(|(m, e)| 10i64.checked_pow(e).and_then(|p| m.checked_mul(p)))
            } else {
                text.parse::<i64>().ok()
            };
            match value {
                Some(v) => Tok::Int(v),
                None => {
                    return Err(LangError::new(
                        Span::new(start, self.pos),
                        format!("invalid integer: {text}"),
                    ));
                }
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let len = word_len(rest);
            self.pos += len;
            Tok::Ident(rest[..len].to_string())
        } else if c == '$' || c == '@' {
            // `$#`: the count of positional parameters.
            let len = if c == '$' && rest[1..].starts_with('#') {
                1
            } else {
                word_len(&rest[1..])
            };
            self.pos += 1 + len;
            let name = rest[1..1 + len].to_string();
            if c == '$' {
                if name.is_empty() {
                    return Err(LangError::new(
                        Span::new(start, self.pos),
                        "syntax error, unexpected $",
                    ));
                }
                Tok::Var(name)
            } else {
                Tok::Map(name)
            }
        } else if c == '"' {
            Tok::Str(self.string(start)?)
        } else if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            self.pos += p.len();
            Tok::Punct(p)
        } else {
            return Err(LangError::new(
                Span::new(start, start + c.len_utf8()),
                format!("invalid character '{c}'"),
            ));
        };
        Ok((tok, Span::new(start, self.pos)))
    }

    fn string(&mut self, start: usize) -> Result<String, LangError> {
        let mut out = String::new();
        let mut chars = self.src[start + 1..].char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos = start + 1 + i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next().map(|(_, c)| c) {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('r') => out.push('\r'),
                    Some('0') => out.push('\0'),
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    // `\xHH`: one or two hex digits, an ASCII byte.
                    Some('x') if chars.peek().is_some_and(|(_, c)| c.is_ascii_hexdigit()) => {
                        let mut value = 0u32;
                        for _ in 0..2 {
                            match chars.peek().and_then(|(_, c)| c.to_digit(16)) {
                                Some(d) => {
                                    value = value * 16 + d;
                                    chars.next();
                                }
                                None => break,
                            }
                        }
                        match char::from_u32(value).filter(char::is_ascii) {
                            Some(c) => out.push(c),
                            None => {
                                return Err(LangError::new(
                                    Span::new(start, start + 1),
                                    "only ASCII bytes (\\x00-\\x7f) can be written as \\x escapes",
                                ));
                            }
                        }
                    }
                    Some(other) => {
                        out.push('\\');
                        out.push(other);
                    }
                    None => break,
                },
                '\n' => break,
                c => out.push(c),
            }
        }
        Err(LangError::new(
            Span::new(start, start + 1),
            "unterminated string",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(src: &str) -> Vec<Tok> {
        let mut lx = Lexer::new(src, 0);
        let mut out = Vec::new();
        loop {
            let (t, _) = lx.next_token().expect("lexes");
            if t == Tok::Eof {
                return out;
            }
            out.push(t);
        }
    }

    #[test]
    fn tokens() {
        assert_eq!(
            all("@x[comm] += 0x10; // c\n $y<<=2 /* z */ \"a\\n\" ->"),
            vec![
                Tok::Map("x".into()),
                Tok::Punct("["),
                Tok::Ident("comm".into()),
                Tok::Punct("]"),
                Tok::Punct("+="),
                Tok::Int(16),
                Tok::Punct(";"),
                Tok::Var("y".into()),
                Tok::Punct("<<="),
                Tok::Int(2),
                Tok::Str("a\n".into()),
                Tok::Punct("->"),
            ]
        );
        assert_eq!(
            all("@ = 1"),
            vec![Tok::Map("".into()), Tok::Punct("="), Tok::Int(1)]
        );
    }

    #[test]
    fn errors() {
        assert!(Lexer::new("\"abc", 0).next_token().is_err());
        assert!(Lexer::new("/* x", 0).next_token().is_err());
        let mut lx = Lexer::new("1 #", 0);
        assert_eq!(lx.next_token().map(|t| t.0), Ok(Tok::Int(1)));
        assert!(lx.next_token().is_err());
        assert!(Lexer::new("99999999999999999999", 0).next_token().is_err());
    }
}
