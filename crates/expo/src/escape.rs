//! Backslash escapes in label values and help texts: the one escaping
//! every text format shares (names are escaped by
//! [`shmetrics_core::Escaping`] instead).

/// Appends a label value with the escaping both formats use: backslash,
/// double quote and line feed become `\\`, `\"` and `\n`; everything else,
/// any UTF-8 included, is copied as it is.
///
/// ```
/// let mut out = Vec::new();
/// shmetrics_expo::write_escaped_label_value(&mut out, "a\\b\"c\nd é");
/// assert_eq!(out, "a\\\\b\\\"c\\nd é".as_bytes());
/// ```
pub fn write_escaped_label_value(out: &mut Vec<u8>, value: &str) {
    escape(out, value.as_bytes(), true);
}

/// Whether `s` holds a byte to escape: `\`, line feed, and `"` if `QUOTE`.
/// Tests 8 bytes at a time (SWAR), as label values are mostly short.
#[inline]
pub(crate) fn needs_escape<const QUOTE: bool>(s: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Whether any byte of `w` equals `b` (exact: no false positives).
    let has = |w: u64, b: u8| {
        let x = w ^ (LO * u64::from(b));
        x.wrapping_sub(LO) & !x & HI != 0
    };
    let special = |w: u64| has(w, b'\\') | has(w, b'\n') | (QUOTE && has(w, b'"'));
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    if s.len() < 8 {
        return s
            .iter()
            .any(|&c| c == b'\\' || c == b'\n' || (QUOTE && c == b'"'));
    }
    let mut words = s.chunks_exact(8);
    if words.by_ref().any(|w| special(word(w))) {
        return true;
    }
    // The last 1 to 7 bytes: test the last 8, overlapping.
    !words.remainder().is_empty() && special(word(&s[s.len() - 8..]))
}

/// Appends `s` escaping `\` and line feed, and `"` too if `quote`.
#[inline]
pub(crate) fn escape(out: &mut Vec<u8>, s: &[u8], quote: bool) {
    // Nearly every string needs no escaping: one quick scan, one copy.
    let special = if quote {
        needs_escape::<true>(s)
    } else {
        needs_escape::<false>(s)
    };
    if !special {
        out.extend_from_slice(s);
        return;
    }
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'"' if quote => b"\\\"",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_escape_finds_every_special_byte_at_every_position() {
        for len in 0..40 {
            let plain = vec![b'a'; len];
            assert!(!needs_escape::<true>(&plain));
            for pos in 0..len {
                for (byte, in_help, in_label) in [
                    (b'\\', true, true),
                    (b'\n', true, true),
                    (b'"', false, true),
                    (b'\\' + 1, false, false),
                    (b'\n' + 1, false, false),
                    (b'"' - 1, false, false),
                    (0x80 | b'\\', false, false),
                    (0xdc, false, false),
                ] {
                    let mut s = plain.clone();
                    s[pos] = byte;
                    assert_eq!(needs_escape::<false>(&s), in_help, "{s:?}");
                    assert_eq!(needs_escape::<true>(&s), in_label, "{s:?}");
                }
            }
        }
    }
}
