//! `printf` formats: the conversions a format holds (checked against the
//! arguments at compile time), and the formatting of an event's
//! arguments in user space, C's way (`%-8s`, `%5d`, `%lx`, `%c`).
//!
//! bpftrace 0.17 prints `%%` as it is written (two percent signs); scry
//! does the same, so a script's output does not change.

/// One argument of a formatted line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    Int(i64),
    Str(String),
}

/// The conversion letters of `format`, one per argument it takes.
pub(crate) fn conversions(format: &str) -> Result<Vec<char>, FormatError> {
    Ok(pieces(format)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Conv { conv, .. } => Some(conv),
            Piece::Text(_) => None,
        })
        .collect())
}

#[derive(Debug)]
enum Piece<'a> {
    Text(&'a str),
    Conv {
        left: bool,
        zero: bool,
        width: usize,
        precision: Option<usize>,
        conv: char,
    },
}

/// A `printf` format scry cannot print.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FormatError {
    #[error("printf: the format ends inside a conversion")]
    Unterminated,
    #[error("printf: unknown conversion %{0}")]
    Unknown(char),
}

fn pieces(format: &str) -> Result<Vec<Piece<'_>>, FormatError> {
    let mut out = Vec::new();
    let mut rest = format;
    while let Some(i) = rest.find('%') {
        if i > 0 {
            out.push(Piece::Text(&rest[..i]));
        }
        rest = &rest[i + 1..];
        if let Some(after) = rest.strip_prefix('%') {
            out.push(Piece::Text("%%"));
            rest = after;
            continue;
        }
        let mut chars = rest.char_indices().peekable();
        let (mut left, mut zero) = (false, false);
        while let Some(&(_, c)) = chars.peek() {
            match c {
                '-' => left = true,
                '0' => zero = true,
                '+' | ' ' | '#' => {}
                _ => break,
            }
            chars.next();
        }
        let mut width = 0usize;
        while let Some(&(_, c)) = chars.peek() {
            let Some(d) = c.to_digit(10) else { break };
            width = width
                .saturating_mul(10)
                .saturating_add(d as usize)
                .min(1024);
            chars.next();
        }
        let mut precision = None;
        if chars.peek().map(|&(_, c)| c) == Some('.') {
            chars.next();
            let mut p = 0usize;
            while let Some(&(_, c)) = chars.peek() {
                let Some(d) = c.to_digit(10) else { break };
                p = p.saturating_mul(10).saturating_add(d as usize).min(1024);
                chars.next();
            }
            precision = Some(p);
        }
        while matches!(chars.peek().map(|&(_, c)| c), Some('l' | 'h' | 'z' | 'j')) {
            chars.next();
        }
        let Some((at, conv)) = chars.next() else {
            return Err(FormatError::Unterminated);
        };
        if !matches!(conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 's' | 'c' | 'p') {
            return Err(FormatError::Unknown(conv));
        }
        out.push(Piece::Conv {
            left,
            zero,
            width,
            precision,
            conv,
        });
        rest = &rest[at + conv.len_utf8()..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// `format` with `args` in place of its conversions.
pub(crate) fn format(format: &str, args: &[Arg]) -> String {
    let Ok(pieces) = pieces(format) else {
        return format.to_string();
    };
    let mut out = String::new();
    let mut args = args.iter();
    for piece in pieces {
        let (left, zero, width, precision, conv) = match piece {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Conv {
                left,
                zero,
                width,
                precision,
                conv,
            } => (left, zero, width, precision, conv),
        };
        let text = match (conv, args.next()) {
            ('s', Some(Arg::Str(s))) => match precision {
                Some(p) => s.chars().take(p).collect(),
                None => s.clone(),
            },
            (_, Some(Arg::Str(s))) => s.clone(),
            ('d' | 'i', Some(Arg::Int(v))) => v.to_string(),
            ('u', Some(Arg::Int(v))) => (*v as u64).to_string(),
            ('x', Some(Arg::Int(v))) => format!("{:x}", *v as u64),
            ('X', Some(Arg::Int(v))) => format!("{:X}", *v as u64),
            ('o', Some(Arg::Int(v))) => format!("{:o}", *v as u64),
            ('p', Some(Arg::Int(v))) => format!("0x{:x}", *v as u64),
            ('c', Some(Arg::Int(v))) => char::from(*v as u8).to_string(),
            (_, Some(Arg::Int(v))) => v.to_string(),
            (_, None) => String::new(),
        };
        let len = text.chars().count();
        if len >= width {
            out.push_str(&text);
        } else if left {
            out.push_str(&text);
            out.push_str(&" ".repeat(width - len));
        } else if zero && conv != 's' {
            let (sign, digits) = match text.strip_prefix('-') {
                Some(d) => ("-", d),
                None => ("", text.as_str()),
            };
            out.push_str(sign);
            out.push_str(&"0".repeat(width - len));
            out.push_str(digits);
        } else {
            out.push_str(&" ".repeat(width - len));
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_c() {
        let args = [
            Arg::Int(-3),
            Arg::Int(42),
            Arg::Int(42),
            Arg::Str("ab".into()),
            Arg::Str("cd".into()),
            Arg::Int(255),
            Arg::Int(7),
            Arg::Int(65),
        ];
        // The line bpftrace 0.17 prints for this format.
        assert_eq!(
            format("%d|%5d|%-5d|%s|%-8s|%x|%u|%c|%%\n", &args),
            "-3|   42|42   |ab|cd      |ff|7|A|%%\n"
        );
        assert_eq!(
            format(
                "%05d %lu %llx",
                &[Arg::Int(-42), Arg::Int(3), Arg::Int(255)]
            ),
            "-0042 3 ff"
        );
    }

    #[test]
    fn conversions_are_counted() {
        assert_eq!(conversions("%d %s %%\n"), Ok(vec!['d', 's']));
        assert!(conversions("%q").is_err());
        assert!(conversions("%").is_err());
    }
}
