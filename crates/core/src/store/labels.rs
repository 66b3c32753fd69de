//! Label values as the store keeps them: length-prefixed in the arena,
//! compared in place, and hashed for the series index.

/// Encodes strings as a u32 little-endian length followed by the bytes.
pub(super) fn encode_strs<S: AsRef<str>>(out: &mut Vec<u8>, items: &[S]) {
    for s in items {
        let s = s.as_ref().as_bytes();
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s);
    }
}

/// Iterates strings encoded by [`encode_strs`]; yields `None` for a
/// malformed encoding (a corrupt store).
pub(crate) fn decode_strs(mut b: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        if b.len() < 4 {
            b = &[];
            return Some(None);
        }
        let n = u32::from_le_bytes(b[..4].try_into().expect("4 bytes")) as usize;
        if b.len() - 4 < n {
            b = &[];
            return Some(None);
        }
        let (s, rest) = b[4..].split_at(n);
        b = rest;
        Some(Some(s))
    })
}

pub(super) fn labels_equal(encoded: &[u8], values: &[&str]) -> bool {
    let mut it = decode_strs(encoded);
    for v in values {
        match it.next() {
            Some(Some(s)) if s == v.as_bytes() => {}
            _ => return false,
        }
    }
    it.next().is_none()
}

/// The hash of a series key, stable across builds and processes.
pub(crate) fn series_hash(family: u32, values: &[&str]) -> u64 {
    use xxhash_rust::xxh3::xxh3_64_with_seed;
    let mut h = xxh3_64_with_seed(&family.to_le_bytes(), 0x5348_4d45_5452_4958);
    for v in values {
        h = xxh3_64_with_seed(v.as_bytes(), h);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_labels_decode_and_compare() {
        let mut b = Vec::new();
        encode_strs(&mut b, &["GET", "", "/ü"]);
        let decoded: Vec<_> = decode_strs(&b).collect();
        assert_eq!(
            decoded,
            [Some(&b"GET"[..]), Some(&b""[..]), Some("/ü".as_bytes())]
        );
        assert!(labels_equal(&b, &["GET", "", "/ü"]));
        assert!(!labels_equal(&b, &["GET", ""]));
        assert!(!labels_equal(&b, &["GET", "", "/u"]));
        // A length past the end is reported once, then the iteration ends.
        let cut = &b[..b.len() - 1];
        assert_eq!(decode_strs(cut).last(), Some(None));
        assert_eq!(decode_strs(&[1, 0]).collect::<Vec<_>>(), [None]);
    }

    #[test]
    fn series_hashes_differ_by_family_and_values() {
        let h = series_hash(1, &["a", "b"]);
        assert_eq!(h, series_hash(1, &["a", "b"]));
        assert_ne!(h, series_hash(2, &["a", "b"]));
        assert_ne!(h, series_hash(1, &["ab", ""]));
    }
}
