//! Numbers written as decimal text into a byte buffer, as `format!` would
//! write them, without going through `core::fmt`.
//!
//! Decision: `{:.N}` of an `f64` is exact in core (the binary value's exact
//! decimal expansion, ties to even), and core gets there through Grisu with a
//! big-number Dragon fallback: the bulk of a flame graph's cost when every
//! frame has five such numbers. A finite non-negative value below 2^60 times
//! 10^N fits in 128 bits as an integer over a power of two, so the same
//! rounding is a shift and a comparison; anything else goes to `format!`.

use std::io::Write;

/// Writes `value` with `decimals` digits after the point, as
/// `format!("{value:.decimals$}")` does.
pub(crate) fn push_fixed(out: &mut Vec<u8>, value: f64, decimals: u32) {
    let Some(units) = scaled_round(value, decimals).and_then(|u| u64::try_from(u).ok()) else {
        let _ = write!(out, "{:.*}", decimals as usize, value);
        return;
    };
    // Right to left: the fraction's digits, the point, at least one more.
    let mut text = [b'0'; 30];
    let mut at = text.len();
    let mut rest = units;
    let mut written = 0;
    while let Some(i) = at.checked_sub(1) {
        if written == decimals && decimals > 0 {
            if let Some(point) = text.get_mut(i) {
                *point = b'.';
            }
            at = i;
            written += 1;
            continue;
        }
        if let Some(digit) = text.get_mut(i) {
            *digit = b'0' + (rest % 10) as u8;
        }
        at = i;
        rest /= 10;
        written += 1;
        if rest == 0 && written > decimals + u32::from(decimals > 0) {
            break;
        }
    }
    out.extend_from_slice(text.get(at..).unwrap_or_default());
}

/// `value` × 10^decimals rounded to an integer, ties to even, when it is
/// finite, non-negative and small enough to do exactly in 128 bits.
fn scaled_round(value: f64, decimals: u32) -> Option<u128> {
    if !value.is_finite() || value.is_sign_negative() || decimals > 8 {
        return None;
    }
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    // value = mantissa × 2^power
    let (mantissa, power) = match exponent {
        0 => (fraction, -1074),
        _ => (fraction | (1u64 << 52), exponent - 1075),
    };
    // Below 2^53 × 10^8 < 2^80.
    let scaled = u128::from(mantissa) * 10u128.pow(decimals);
    if power >= 0 {
        return match power {
            0..=40 => Some(scaled << power),
            _ => None,
        };
    }
    let shift = power.unsigned_abs();
    if shift >= 127 {
        // Below 2^80 / 2^127: less than half a unit.
        return Some(0);
    }
    let units = scaled >> shift;
    let remainder = scaled & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let round_up = remainder > half || (remainder == half && units & 1 == 1);
    Some(units + u128::from(round_up))
}

/// Writes an unsigned integer in decimal.
pub(crate) fn push_u64(out: &mut Vec<u8>, value: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = value;
    while let Some(digit) = at.checked_sub(1).and_then(|i| digits.get_mut(i)) {
        *digit = b'0' + (rest % 10) as u8;
        at -= 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(at..).unwrap_or_default());
}

/// Writes an unsigned integer with a `,` between groups of three digits
/// (`1,234,567`), as num-format's English locale does.
pub(crate) fn push_grouped(out: &mut Vec<u8>, value: u64) {
    let mut text = [b','; 26];
    let mut at = text.len();
    let mut rest = value;
    let mut digits = 0;
    while let Some(i) = at.checked_sub(1) {
        if digits == 3 {
            // A comma already stands there.
            at = i;
            digits = 0;
            continue;
        }
        if let Some(digit) = text.get_mut(i) {
            *digit = b'0' + (rest % 10) as u8;
        }
        at = i;
        digits += 1;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend_from_slice(text.get(at..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(value: f64, decimals: u32) -> String {
        let mut out = Vec::new();
        push_fixed(&mut out, value, decimals);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fixed_rounds_as_core_formats() {
        // Ties (exact in binary) go to even; near-ties by their exact value.
        let edges = [
            0.5, 1.5, 2.5, 0.125, 0.375, 0.045, 1.005, 99.99995, 0.00005, 1e-300, 5e-324, 0.0,
            100.0, 1e15, 3e20, -1.5, -0.0,
        ];
        for value in edges {
            for decimals in 0..6 {
                assert_eq!(
                    fixed(value, decimals),
                    format!("{value:.*}", decimals as usize),
                    "{value:e} .{decimals}"
                );
            }
        }
        for value in [f64::NAN, f64::INFINITY, f64::MAX] {
            assert_eq!(fixed(value, 4), format!("{value:.4}"));
        }
        // Positions and widths as a flame graph makes them, and any bits.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let value = match i % 3 {
                0 => (x % 1_000_000_000) as f64 * (100.0 / 39_418_200_000.0),
                1 => f64::from_bits(x >> 2),
                _ => (x % 100_000) as f64 / 8.0,
            };
            let decimals = [4, 2][(i as usize / 3) % 2];
            assert_eq!(
                fixed(value, decimals),
                format!("{value:.*}", decimals as usize),
                "{value:e} .{decimals}"
            );
        }
    }

    #[test]
    fn integers_plain_and_grouped() {
        for value in [0, 7, 999, 1000, 123_456, 1_234_567, u64::MAX] {
            let mut plain = Vec::new();
            push_u64(&mut plain, value);
            assert_eq!(plain, value.to_string().into_bytes());
        }
        let grouped = |value| {
            let mut out = Vec::new();
            push_grouped(&mut out, value);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(39_418_200_000), "39,418,200,000");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
    }
}
