//! Number rendering: sample values, counts, `le` bounds and timestamps.
//!
//! Everything here appends to a `Vec<u8>` and allocates nothing beyond the
//! vector's own growth.

/// Integral floats below this magnitude are exact `i64`s and print as plain
/// integers (`2^53`).
pub(crate) const EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// Appends `v` as a sample value: the shortest text that parses back to the
/// same `f64`.
///
/// - `NaN`, `+Inf` and `-Inf` for the non-finite values (the spelling both
///   the Prometheus text format and OpenMetrics use);
/// - integral values below 2^53 in magnitude as plain integers (`0`, `42`,
///   `-7`, `1000000`) and negative zero as `-0`;
/// - everything else in the shortest round-trip form (`0.005`, `1e-9`,
///   `1.5e300`, `1e21`, `123.456`).
///
/// Every output parses with Go's `strconv.ParseFloat` (Prometheus, promtool),
/// Python's `float()` and `int()`-then-`float()` (both prometheus_client
/// parsers), and matches the OpenMetrics `number` ABNF.
///
/// ```
/// let mut out = Vec::new();
/// for v in [3.0, 0.25, 1e-9, 1e21, -0.0, f64::INFINITY, f64::NAN] {
///     shmetrics_expo::write_float(&mut out, v);
///     out.push(b' ');
/// }
/// assert_eq!(out, b"3 0.25 1e-9 1e21 -0 +Inf NaN ");
/// ```
#[inline]
pub fn write_float(out: &mut Vec<u8>, v: f64) {
    if v.fract() == 0.0 && v.abs() < EXACT_INT {
        // Integral and exact: the integer path (also taken by +/-0).
        if v == 0.0 && v.is_sign_negative() {
            out.extend_from_slice(b"-0");
        } else {
            out.extend_from_slice(itoa::Buffer::new().format(v as i64).as_bytes());
        }
    } else if v.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes());
    } else {
        out.extend_from_slice(non_finite(v));
    }
}

pub(crate) fn non_finite(v: f64) -> &'static [u8] {
    if v.is_nan() {
        b"NaN"
    } else if v > 0.0 {
        b"+Inf"
    } else {
        b"-Inf"
    }
}

/// Ruby's `Float#to_s` of a non-finite value.
pub(crate) fn non_finite_ruby(v: f64) -> &'static [u8] {
    if v.is_nan() {
        b"NaN"
    } else if v > 0.0 {
        b"Infinity"
    } else {
        b"-Infinity"
    }
}

/// Appends an unsigned count (a histogram bucket, `_count`) as an integer.
#[inline]
pub fn write_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends `v` in the canonical form that OpenMetrics requires for `le` and
/// `quantile` label values: Go's `%g` (shortest digits, exponent form when
/// the decimal exponent is below -4 or at least 6, the exponent with a sign
/// and at least two digits), with `.0` appended when the result has neither
/// a `.` nor an exponent; `+Inf`, `-Inf`, `NaN`.
///
/// This is what client_golang's OpenMetrics encoder and client_python's
/// `floatToGoString` produce, and how Prometheus 3 normalizes these labels,
/// so the same bucket gets the same `le` whichever library wrote it.
///
/// ```
/// let mut out = Vec::new();
/// for v in [0.005, 1.0, 10.0, 100000.0, 1e6, 1e-5, 0.0001, 2.5e-7, f64::INFINITY] {
///     shmetrics_expo::write_canonical_float(&mut out, v);
///     out.push(b' ');
/// }
/// assert_eq!(out, b"0.005 1.0 10.0 100000.0 1e+06 1e-05 0.0001 2.5e-07 +Inf ".to_vec());
/// ```
pub fn write_canonical_float(out: &mut Vec<u8>, v: f64) {
    if !v.is_finite() {
        out.extend_from_slice(non_finite(v));
        return;
    }
    write_shortest(out, v, |exp| !(-4..6).contains(&exp));
}

/// Appends finite `v` with its shortest round-trip digits: in exponent
/// form (`1.5e-07`, `1e+16`: a signed exponent of at least two digits)
/// when `scientific(exp)` says so for its decimal exponent `exp` (`v` =
/// d.ddd × 10^exp), else in positional form with at least one digit
/// after the point (`0.0001`, `100000.0`, `-0.0`).
pub(crate) fn write_shortest(out: &mut Vec<u8>, v: f64, scientific: impl Fn(i32) -> bool) {
    // Ryu's shortest round-trip digits (exact ties rounded to even, as
    // Python's repr() and Go's strconv do), in its positional
    // (`1345740272956748.2`, `0.0001`) or exponent (`1e21`, `5e-324`)
    // form; read back into digits and a decimal exponent.
    let mut ryu = ryu::Buffer::new();
    let text = ryu.format_finite(v).as_bytes();
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (mantissa, e) = match text.iter().position(|&c| c == b'e') {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, &b"0"[..]),
    };
    let e: i32 = std::str::from_utf8(e)
        .ok()
        .and_then(|e| e.parse().ok())
        .expect("ryu's exponent is an integer");
    let int_len = mantissa
        .iter()
        .position(|&c| c == b'.')
        .unwrap_or(mantissa.len());
    // The significant digits, without the point and leading zeros. 32
    // bytes hold the longest (17 digits after up to 5 zeros, or 17 before
    // the point).
    let mut digits = [0u8; 32];
    let mut n = 0;
    let mut leading = 0i32;
    for &c in mantissa.iter().filter(|c| c.is_ascii_digit()) {
        if n == 0 && c == b'0' {
            leading += 1;
            continue;
        }
        digits[n] = c;
        n += 1;
    }
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    let exp = if n == 0 {
        digits[0] = b'0';
        n = 1;
        0
    } else {
        int_len as i32 - 1 + e - leading
    };
    let digits = &digits[..n];

    if negative {
        out.push(b'-');
    }
    if scientific(exp) {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let abs = exp.unsigned_abs();
        if abs < 10 {
            out.push(b'0');
        }
        write_u64(out, u64::from(abs));
    } else if exp < 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend_from_slice(digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() > int_len {
            out.extend_from_slice(&digits[..int_len]);
            out.push(b'.');
            out.extend_from_slice(&digits[int_len..]);
        } else {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
            out.extend_from_slice(b".0");
        }
    }
}

/// Appends a Unix time given in nanoseconds as seconds with an exact
/// decimal fraction, trailing zeros trimmed: `1700000000.123456789`,
/// `1700000000.5`, `1700000000.0`.
///
/// Going through `f64` would lose the nanoseconds (and OpenMetrics advises
/// against exponent forms for timestamps); this keeps every digit.
///
/// ```
/// let mut out = Vec::new();
/// shmetrics_expo::write_unix_nanos_as_seconds(&mut out, 1_700_000_000_120_000_000);
/// assert_eq!(out, b"1700000000.12");
/// ```
pub fn write_unix_nanos_as_seconds(out: &mut Vec<u8>, ns: u64) {
    let (secs, mut frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    write_u64(out, secs);
    out.push(b'.');
    if frac == 0 {
        out.push(b'0');
        return;
    }
    let mut width = 9;
    while frac % 10 == 0 {
        frac /= 10;
        width -= 1;
    }
    let mut b = itoa::Buffer::new();
    let s = b.format(frac).as_bytes();
    out.extend(std::iter::repeat_n(b'0', width - s.len()));
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(v: f64) -> String {
        let mut out = Vec::new();
        write_float(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn canonical(v: f64) -> String {
        let mut out = Vec::new();
        write_canonical_float(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn float_special_values() {
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(-f64::NAN), "NaN");
        assert_eq!(float(f64::INFINITY), "+Inf");
        assert_eq!(float(f64::NEG_INFINITY), "-Inf");
        assert_eq!(float(0.0), "0");
        assert_eq!(float(-0.0), "-0");
    }

    #[test]
    fn float_integers() {
        assert_eq!(float(1.0), "1");
        assert_eq!(float(-7.0), "-7");
        assert_eq!(float(1e6), "1000000");
        assert_eq!(float(1e15), "1000000000000000");
        // 2^53 - 1 is the largest integer on the fast path.
        assert_eq!(float(9_007_199_254_740_991.0), "9007199254740991");
        assert_eq!(float(-9_007_199_254_740_991.0), "-9007199254740991");
    }

    #[test]
    fn float_shortest_round_trip() {
        for (v, s) in [
            (0.5, "0.5"),
            (0.005, "0.005"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-1.5, "-1.5"),
            (123.456, "123.456"),
            (1e-9, "1e-9"),
            (1.5e-7, "1.5e-7"),
            (1e21, "1e21"),
            (1e300, "1e300"),
            (f64::MAX, "1.7976931348623157e308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(float(v), s, "{v:e}");
        }
        // Integral values at and past 2^53 leave the integer path but
        // still round-trip.
        for v in [
            9_007_199_254_740_992.0,
            1e16,
            1e17,
            12_345_678_901_234_567_890.0,
        ] {
            assert_eq!(float(v).parse::<f64>().unwrap(), v, "{}", float(v));
            assert!(!float(v).contains('+'), "{}", float(v));
        }
    }

    #[test]
    fn float_round_trips_everywhere() {
        // A deterministic sweep over bit patterns of every magnitude.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let v = f64::from_bits(x);
            if v.is_nan() {
                continue;
            }
            let s = float(v);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{s}");
        }
    }

    #[test]
    fn canonical_matches_the_openmetrics_examples() {
        // "Canonical Numbers" in the OpenMetrics 1.0 spec.
        let examples = "0.0 0.001 0.002 0.01 0.1 0.9 0.95 0.99 0.999 1.0 1.7 10.0";
        for s in examples.split(' ') {
            assert_eq!(canonical(s.parse().unwrap()), s);
        }
        let powers = "1e-10 1e-09 1e-05 0.0001 0.1 1.0 100000.0 1e+06 1e+10";
        for s in powers.split(' ') {
            assert_eq!(canonical(s.parse().unwrap()), s);
        }
        // All of 0.000 .. 10.000 in steps of 0.001: shortest digits, never
        // an exponent, always a point.
        for i in 0..=10_000u32 {
            let v = f64::from(i) / 1000.0;
            let s = canonical(v);
            assert_eq!(s.parse::<f64>().unwrap(), v, "{s}");
            assert!(s.contains('.') && !s.contains('e'), "{s}");
            assert!(s == "0.0" || !s.ends_with("00"), "{s}");
        }
    }

    #[test]
    fn canonical_other_values() {
        for (v, s) in [
            (0.005, "0.005"),
            (0.025, "0.025"),
            (2.5, "2.5"),
            (5.0, "5.0"),
            (300.0, "300.0"),
            (123456.0, "123456.0"),
            (1234567.0, "1.234567e+06"),
            (1.5e-7, "1.5e-07"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (-1.0, "-1.0"),
            (-0.5, "-0.5"),
            (-2e-5, "-2e-05"),
            (-0.0, "-0.0"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(canonical(v), s, "{v:e}");
        }
    }

    #[test]
    fn unix_nanos() {
        let s = |ns: u64| {
            let mut out = Vec::new();
            write_unix_nanos_as_seconds(&mut out, ns);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(s(0), "0.0");
        assert_eq!(s(1_700_000_000_000_000_000), "1700000000.0");
        assert_eq!(s(1_700_000_000_123_456_789), "1700000000.123456789");
        assert_eq!(s(1_700_000_000_000_000_001), "1700000000.000000001");
        assert_eq!(s(1_700_000_000_010_000_000), "1700000000.01");
        assert_eq!(s(999), "0.000000999");
        assert_eq!(s(u64::MAX), "18446744073.709551615");
    }

    #[test]
    fn counts() {
        let mut out = Vec::new();
        write_u64(&mut out, 0);
        out.push(b' ');
        write_u64(&mut out, u64::MAX);
        assert_eq!(out, b"0 18446744073709551615");
    }
}
