//! Positional parameters: the words after the program (`scry run PROG 42
//! abc`) as `$1`, `$2`, ... and their count `$#`, put in as literals while
//! parsing, as bpftrace does.
//!
//! A parameter is a number (decimal or `0x` hex) where an expression
//! wants one; inside `str()` it is its text, and `str($1 + N)` its text
//! from byte N on (bpftrace reads it as a pointer to the text; N at most
//! its length). A
//! parameter not given is 0, or "" in `str()`; an empty one is 0 too. A
//! word that is not a number used as one is an error naming it, with
//! bpftrace's words.

use super::ast::{BinOp, Expr, ExprKind};
use super::error::{LangError, Span};

/// The literal `$name` (its digits) stands for: its text inside `str()`
/// (`as_text`), else its number.
pub(crate) fn value(
    params: &[String],
    name: &str,
    as_text: bool,
    span: Span,
) -> Result<ExprKind, LangError> {
    let given = name
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| params.get(i))
        .map_or("", String::as_str);
    if as_text {
        return Ok(ExprKind::Str(given.to_string()));
    }
    if given.is_empty() {
        return Ok(ExprKind::Int(0));
    }
    number(given).map(ExprKind::Int).ok_or_else(|| {
        LangError::new(
            span,
            format!("${name} used numerically but given \"{given}\". Try using str(${name})."),
        )
    })
}

/// A parameter's number: decimal (signed) or `0x` hex.
fn number(text: &str) -> Option<i64> {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
        None => text.parse().ok(),
    }
}

/// `str($1 + N)`: the parameter's text from byte N on, folded into one
/// literal; N past its end is bpftrace's error, under the `+ N` (`name`:
/// the parameter as written, for the message).
pub(crate) fn fold_offset(args: &mut [Expr], name: Option<&str>) -> Result<(), LangError> {
    let (Some(first), Some(name)) = (args.first_mut(), name) else {
        return Ok(());
    };
    if let ExprKind::Binary {
        op: BinOp::Add,
        lhs,
        rhs,
    } = &first.kind
        && let (ExprKind::Str(text), ExprKind::Int(n)) = (&lhs.kind, &rhs.kind)
    {
        let Some(from) = usize::try_from(*n).ok().filter(|&n| n <= text.len()) else {
            return Err(LangError::new(
                Span::new(lhs.span.end + 1, rhs.span.end),
                format!(
                    "only addition of a single constant less or equal to the length of {name} (which is {}) is allowed inside str()",
                    text.len()
                ),
            ));
        };
        let rest = String::from_utf8_lossy(&text.as_bytes()[from..]).into_owned();
        first.kind = ExprKind::Str(rest);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn numbers_texts_and_missing_ones() {
        let p = params(&["42", "abc", "", "0x10"]);
        let at = Span::new(0, 2);
        assert!(matches!(value(&p, "1", false, at), Ok(ExprKind::Int(42))));
        assert!(matches!(value(&p, "4", false, at), Ok(ExprKind::Int(16))));
        assert!(matches!(value(&p, "3", false, at), Ok(ExprKind::Int(0))));
        assert!(matches!(value(&p, "9", false, at), Ok(ExprKind::Int(0))));
        assert!(matches!(value(&p, "2", true, at), Ok(ExprKind::Str(s)) if s == "abc"));
        assert!(matches!(value(&p, "9", true, at), Ok(ExprKind::Str(s)) if s.is_empty()));
        let err = value(&p, "2", false, at).expect_err("not a number");
        assert_eq!(
            err.message,
            "$2 used numerically but given \"abc\". Try using str($2)."
        );
    }
}
