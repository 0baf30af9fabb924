//! C printf conversions as the kernel's `trace` text and libtraceevent
//! apply them to one value: flags (`-0+ #`), width and precision (`*`
//! included), length modifiers (`hh h l ll z`), `d i u x X o c s`, and the
//! letters that select a `%p` extension (`%pS`, `%pI4`, `%phN`...).
//! `print_render` evaluates the arguments; this module only lays out text.
//!
//! Invariants: never panics, whatever the format string holds; a width or
//! precision, from the format or from the record (`%*d`), is at most
//! [`MAX_FIELD_WIDTH`], so one conversion writes at most that much padding.

use super::format::sign_extend;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Spec {
    pub(crate) left: bool,
    pub(crate) zero: bool,
    pub(crate) plus: bool,
    pub(crate) space: bool,
    pub(crate) alt: bool,
    pub(crate) width: Option<i32>,
    pub(crate) precision: Option<i32>,
}

impl Spec {
    /// The flags (`-0+ #`) at `bytes[*at..]`, `*at` moved past them; width
    /// and precision are still to read ([`read_count`]).
    pub(crate) fn read_flags(bytes: &[u8], at: &mut usize) -> Spec {
        let mut spec = Spec::default();
        while let Some(&c) = bytes.get(*at) {
            match c {
                b'-' => spec.left = true,
                b'0' => spec.zero = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                _ => break,
            }
            *at += 1;
        }
        spec
    }
}

/// The widest field (width or precision) a conversion gets. A `*` width
/// comes from the record: 2^31-1 there made one line 2 GB. The kernel's
/// own `trace` text stops a line at a page (`trace_seq`), so nothing real
/// asks for more.
pub(super) const MAX_FIELD_WIDTH: i32 = 4096;

/// A width or precision: digits, or `*` (the next argument), clamped to
/// ±[`MAX_FIELD_WIDTH`].
pub(crate) fn read_count<E>(
    bytes: &[u8],
    i: &mut usize,
    star: &mut dyn FnMut() -> Result<i32, E>,
) -> Result<Option<i32>, E> {
    let clamp = |n: i32| n.clamp(-MAX_FIELD_WIDTH, MAX_FIELD_WIDTH);
    if bytes.get(*i) == Some(&b'*') {
        *i += 1;
        return star().map(|n| Some(clamp(n)));
    }
    let mut n: Option<i32> = None;
    while let Some(d @ b'0'..=b'9') = bytes.get(*i) {
        n = Some(
            n.unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(i32::from(d - b'0')),
        );
        *i += 1;
    }
    Ok(n.map(clamp))
}

/// The letters after `%p` that select a kernel pointer extension.
pub(super) fn take_pointer_ext(bytes: &[u8], i: &mut usize) -> String {
    let mut ext = String::new();
    let Some(&c) = bytes.get(*i) else {
        return ext;
    };
    if !c.is_ascii_alphanumeric() {
        return ext;
    }
    ext.push(c as char);
    *i += 1;
    // Two-letter families: %pI4 %pI6c %pi4 %phN %phC %phD %pISpc.
    let more: &[u8] = match c {
        b'I' | b'i' => b"46cSp",
        b'h' => b"NCD",
        _ => b"",
    };
    while let Some(&d) = bytes.get(*i) {
        if more.contains(&d) {
            ext.push(d as char);
            *i += 1;
        } else {
            break;
        }
    }
    ext
}

/// `v` as conversion `conv` (`d i u x X o c`) lays it out: `long` is the
/// length modifier (-2 `hh`, -1 `h`, 0 none: C's `int`, 1 `l`, 2 `ll`),
/// which truncates `v` to its C type first.
pub(crate) fn format_int(out: &mut String, spec: &Spec, conv: u8, long: i8, v: u64) {
    // Truncate to the argument's C type.
    let bits = match long {
        i8::MIN..=-2 => 8,
        -1 => 16,
        0 => 32,
        _ => 64,
    };
    let masked = if bits == 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    };
    if conv == b'c' {
        let text = char::from(masked as u8).to_string();
        format_str(
            out,
            &Spec {
                precision: None,
                ..*spec
            },
            &text,
        );
        return;
    }
    let (negative, digits) = match conv {
        b'd' | b'i' => {
            let s = sign_extend(masked, bits / 8) as i64;
            (s < 0, s.unsigned_abs().to_string())
        }
        b'u' => (false, masked.to_string()),
        b'x' => (false, format!("{masked:x}")),
        b'X' => (false, format!("{masked:X}")),
        _ => (false, format!("{masked:o}")),
    };
    let mut digits = digits;
    if let Some(p) = spec.precision {
        if p == 0 && masked == 0 {
            digits.clear();
        }
        while (digits.len() as i32) < p {
            digits.insert(0, '0');
        }
    }
    let prefix = if negative {
        "-"
    } else if matches!(conv, b'd' | b'i') && spec.plus {
        "+"
    } else if matches!(conv, b'd' | b'i') && spec.space {
        " "
    } else if spec.alt && masked != 0 && conv == b'x' {
        "0x"
    } else if spec.alt && masked != 0 && conv == b'X' {
        "0X"
    } else if spec.alt && conv == b'o' && !digits.starts_with('0') {
        "0"
    } else {
        ""
    };
    let width = spec.width.unwrap_or(0).max(0) as usize;
    let len = prefix.len() + digits.len();
    if len >= width {
        out.push_str(prefix);
        out.push_str(&digits);
    } else if spec.left {
        out.push_str(prefix);
        out.push_str(&digits);
        out.extend(std::iter::repeat_n(' ', width - len));
    } else if spec.zero && spec.precision.is_none() {
        out.push_str(prefix);
        out.extend(std::iter::repeat_n('0', width - len));
        out.push_str(&digits);
    } else {
        out.extend(std::iter::repeat_n(' ', width - len));
        out.push_str(prefix);
        out.push_str(&digits);
    }
}

/// `text` as `%s` lays it out (precision cuts, width pads).
pub(crate) fn format_str(out: &mut String, spec: &Spec, text: &str) {
    let text = match spec.precision {
        Some(p) => {
            let end = text
                .char_indices()
                .nth(p.max(0) as usize)
                .map_or(text.len(), |(i, _)| i);
            &text[..end]
        }
        None => text,
    };
    let width = spec.width.unwrap_or(0).max(0) as usize;
    let len = text.chars().count();
    if len >= width {
        out.push_str(text);
    } else if spec.left {
        out.push_str(text);
        out.extend(std::iter::repeat_n(' ', width - len));
    } else {
        out.extend(std::iter::repeat_n(' ', width - len));
        out.push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(spec: Spec, conv: u8, long: i8, v: u64) -> String {
        let mut out = String::new();
        format_int(&mut out, &spec, conv, long, v);
        out
    }

    #[test]
    fn widths_flags_and_lengths() {
        let s = Spec::default();
        assert_eq!(int(s, b'd', 0, u64::MAX), "-1");
        assert_eq!(int(s, b'u', 0, u64::MAX), "4294967295");
        assert_eq!(int(s, b'd', 2, u64::MAX), "-1");
        assert_eq!(int(s, b'x', -2, 0x1234), "34");
        let w = Spec {
            width: Some(6),
            zero: true,
            ..s
        };
        assert_eq!(int(w, b'd', 0, -42i64 as u64), "-00042");
        let a = Spec {
            alt: true,
            width: Some(8),
            ..s
        };
        assert_eq!(int(a, b'x', 0, 255), "    0xff");
        let p = Spec {
            precision: Some(4),
            ..s
        };
        assert_eq!(int(p, b'o', 0, 8), "0010");
        let mut out = String::new();
        format_str(
            &mut out,
            &Spec {
                width: Some(4),
                left: true,
                ..s
            },
            "ab",
        );
        assert_eq!(out, "ab  ");
        let mut i = 0;
        assert_eq!(take_pointer_ext(b"I6c:", &mut i), "I6c");
        assert_eq!(i, 3);
    }
}
