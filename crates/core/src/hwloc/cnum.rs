//! The C library's number parsing, as hwloc's tools rely on it (`strtoul`, `strtol`, `atoi`,
//! `atol`, glibc semantics on LP64): leading white space, an optional sign, `0x` and octal
//! prefixes with base 0, saturation on overflow, and the end position where parsing stopped.
//! hwloc-calc decides what is valid from where these stop, so the ports below keep every quirk.

/// `isspace` in the C locale.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

fn digit_value(b: u8) -> Option<u32> {
    (b as char).to_digit(36)
}

/// What `strtoul`/`strtol` read: the magnitude (saturated), whether it overflowed, the sign, and
/// the byte offset where parsing stopped (0 when no digit was read).
struct Parsed {
    magnitude: u64,
    overflow: bool,
    negative: bool,
    end: usize,
}

fn parse(s: &[u8], base: u32) -> Parsed {
    let mut i = 0;
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let has_hex_prefix = |i: usize| {
        s.get(i) == Some(&b'0')
            && matches!(s.get(i + 1), Some(b'x' | b'X'))
            && s.get(i + 2)
                .and_then(|&b| digit_value(b))
                .is_some_and(|d| d < 16)
    };
    let mut base = base;
    if base == 0 {
        if has_hex_prefix(i) {
            base = 16;
            i += 2;
        } else if s.get(i) == Some(&b'0') {
            base = 8;
        } else {
            base = 10;
        }
    } else if base == 16 && has_hex_prefix(i) {
        i += 2;
    }
    let start = i;
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = s.get(i).and_then(|&b| digit_value(b)).filter(|&d| d < base) {
        match magnitude
            .checked_mul(u64::from(base))
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) => magnitude = m,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return Parsed {
            magnitude: 0,
            overflow: false,
            negative: false,
            end: 0,
        };
    }
    Parsed {
        magnitude,
        overflow,
        negative,
        end: i,
    }
}

/// `strtoul(s, &end, base)`: the value (as C's 64-bit `unsigned long`) and where it stopped.
pub(crate) fn strtoul(s: &[u8], base: u32) -> (u64, usize) {
    let p = parse(s, base);
    if p.overflow {
        return (u64::MAX, p.end);
    }
    let value = if p.negative {
        p.magnitude.wrapping_neg()
    } else {
        p.magnitude
    };
    (value, p.end)
}

/// `strtol(s, &end, base)`: the value (as C's 64-bit `long`) and where it stopped.
pub(crate) fn strtol(s: &[u8], base: u32) -> (i64, usize) {
    let p = parse(s, base);
    let value = if p.negative {
        if p.overflow || p.magnitude > 1 << 63 {
            i64::MIN
        } else {
            // magnitude <= 2^63: the negation fits.
            (p.magnitude as i128).wrapping_neg() as i64
        }
    } else if p.overflow || p.magnitude > i64::MAX as u64 {
        i64::MAX
    } else {
        p.magnitude as i64
    };
    (value, p.end)
}

/// C's `atoi(s)`, `(int) strtol(s, NULL, 10)`, as hwloc's tools read numbers: leading white
/// space and a sign allowed, what follows the digits ignored, 0 when there are none.
pub fn atoi(s: &str) -> i32 {
    strtol(s.as_bytes(), 10).0 as i32
}

/// C's `atol(s)`, `strtol(s, NULL, 10)` on LP64 (see [`atoi`]).
pub fn atol(s: &str) -> i64 {
    strtol(s.as_bytes(), 10).0
}

/// `strncasecmp(a, b, n) == 0` for ASCII strings (`a` may be shorter than `n`).
pub(crate) fn starts_with_ignore_case(a: &str, prefix: &str) -> bool {
    a.len() >= prefix.len() && a.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn strtoul_matches_glibc() {
        assert_eq!(strtoul(b"0x1f,", 16), (0x1f, 4));
        assert_eq!(strtoul(b"1f", 16), (0x1f, 2));
        assert_eq!(strtoul(b"0xg", 16), (0, 1));
        assert_eq!(strtoul(b",1", 16), (0, 0));
        assert_eq!(strtoul(b"  -1", 10), (u64::MAX, 4));
        assert_eq!(strtoul(b"010", 0), (8, 3));
        assert_eq!(strtoul(b"0x10", 0), (16, 4));
        assert_eq!(strtoul(b"0", 0), (0, 1));
        assert_eq!(strtoul(b"99999999999999999999999", 10).0, u64::MAX);
        assert_eq!(strtoul(b"", 10), (0, 0));
        assert_eq!(strtoul(b"-", 10), (0, 0));
    }

    #[test]
    fn strtol_and_atoi() {
        assert_eq!(strtol(b"12-3", 10), (12, 2));
        assert_eq!(strtol(b"-5", 10), (-5, 2));
        assert_eq!(strtol(b"x", 10), (0, 0));
        assert_eq!(strtol(b"99999999999999999999", 10).0, i64::MAX);
        assert_eq!(atoi("3abc"), 3);
        assert_eq!(atoi("abc"), 0);
        assert_eq!(atoi("4294967297"), 1);
        assert_eq!(atol("-7"), -7);
        assert!(starts_with_ignore_case("0XF...F,1", "0xf...f,"));
        assert!(!starts_with_ignore_case("0x", "0xf"));
    }
}
