//! `printf` formats: the conversions a format holds (checked against the
//! arguments at compile time), and the formatting of an event's
//! arguments in user space, C's way (`%-8s`, `%5d`, `%lx`, `%c`).
//!
//! bpftrace hands each 64-bit value to the C library's `printf` with the
//! format as written, so a conversion without a length modifier reads
//! C's `int`: `%d` of 2^32+5 prints 5, `%u` and `%x` of -1 print
//! 4294967295 and ffffffff, `%hu` a short; `%ld`, `%llu`, `%zu`, `%jd`,
//! `%lx` print all 64 bits, `%p` always does. scry lays the values out
//! with `event::printf` (the kernel print fmt's C conversions), which
//! truncates the same way. bpftrace 0.17 prints `%%` as it is written
//! (two percent signs); scry does the same, so a script's output does
//! not change.

use crate::event::printf::{Spec, format_int, format_str, read_count};

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
            Piece::Conv { conv, .. } => Some(char::from(conv)),
            Piece::Text(_) => None,
        })
        .collect())
}

#[derive(Debug)]
enum Piece<'a> {
    Text(&'a str),
    Conv {
        spec: Spec,
        /// The length modifier: -2 `hh`, -1 `h`, 0 none, 1 `l`, 2 `ll`
        /// (`z`, `j`, `t` are 64 bits too).
        long: i8,
        conv: u8,
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
        let bytes = rest.as_bytes();
        let mut at = 0;
        let mut spec = Spec::read_flags(bytes, &mut at);
        let mut star = || Err(FormatError::Unknown('*'));
        spec.width = read_count(bytes, &mut at, &mut star)?;
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            spec.precision = Some(read_count(bytes, &mut at, &mut star)?.unwrap_or(0));
        }
        let mut long = 0i8;
        while let Some(&c) = bytes.get(at) {
            long = match c {
                b'h' => long.min(0) - 1,
                b'l' => long.max(0) + 1,
                b'z' | b'j' | b't' => 2,
                _ => break,
            };
            at += 1;
        }
        let Some(&conv) = bytes.get(at) else {
            return Err(FormatError::Unterminated);
        };
        if !matches!(
            conv,
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b's' | b'c' | b'p' | b'r'
        ) {
            let c = rest[at..].chars().next().unwrap_or('?');
            return Err(FormatError::Unknown(c));
        }
        out.push(Piece::Conv { spec, long, conv });
        rest = &rest[at + 1..];
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
        let (spec, long, conv) = match piece {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Conv { spec, long, conv } => (spec, long, conv),
        };
        match (conv, args.next()) {
            (b's' | b'r', Some(Arg::Str(s))) => format_str(&mut out, &spec, s),
            (_, Some(Arg::Str(s))) => format_str(&mut out, &Spec::default(), s),
            (b'p', Some(Arg::Int(v))) => {
                let text = format!("0x{:x}", *v as u64);
                format_str(
                    &mut out,
                    &Spec {
                        precision: None,
                        ..spec
                    },
                    &text,
                );
            }
            (b's', Some(Arg::Int(v))) => format_int(&mut out, &spec, b'd', 2, *v as u64),
            (_, Some(Arg::Int(v))) => format_int(&mut out, &spec, conv, long, *v as u64),
            (_, None) => {}
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

    /// What bpftrace 0.17 prints for these (its values reach C's printf
    /// as 64 bits; the conversion reads its C type).
    #[test]
    fn lengths_truncate_as_bpftrace() {
        let big = Arg::Int((1 << 32) + 5);
        let m1 = Arg::Int(-1);
        assert_eq!(
            format(
                "%d|%u|%x|%ld|%lu|%llu|%zx",
                &[
                    big.clone(),
                    big.clone(),
                    big.clone(),
                    big.clone(),
                    m1.clone(),
                    m1.clone(),
                    big.clone()
                ]
            ),
            "5|5|5|4294967301|18446744073709551615|18446744073709551615|100000005"
        );
        assert_eq!(
            format(
                "%u|%x|%X|%o|%hu|%hhd|%lx|%p",
                &[
                    m1.clone(),
                    m1.clone(),
                    m1.clone(),
                    m1.clone(),
                    m1.clone(),
                    m1.clone(),
                    m1.clone(),
                    m1
                ]
            ),
            "4294967295|ffffffff|FFFFFFFF|37777777777|65535|-1|ffffffffffffffff|0xffffffffffffffff"
        );
        assert_eq!(
            format(
                "%.3d|%08.3d|%-08d|%10s|%-3s|%.2s|%5.1s|%-6.2s|",
                &[
                    Arg::Int(5),
                    Arg::Int(5),
                    Arg::Int(5),
                    Arg::Str("abcdef".into()),
                    Arg::Str("abcdef".into()),
                    Arg::Str("abcdef".into()),
                    Arg::Str("abcdef".into()),
                    Arg::Str("abcdef".into())
                ]
            ),
            "005|     005|5       |    abcdef|abcdef|ab|    a|ab    |"
        );
    }

    #[test]
    fn conversions_are_counted() {
        assert_eq!(conversions("%d %s %%\n"), Ok(vec!['d', 's']));
        assert!(conversions("%q").is_err());
        assert!(conversions("%").is_err());
        assert!(conversions("%*d").is_err());
    }
}
