//! OpenMetrics exemplars: the latest sampled observation (its labels,
//! value and time) of a counter series or a classic histogram bucket.
//!
//! Each exemplar *place* (a counter series has one; a histogram series
//! one per classic bucket, `+Inf` included) has, in each writer slot:
//!
//! - a **timestamp cell** among the series' integer cells: the time of
//!   the slot's latest exemplar there, in ns since the Unix epoch, `1`
//!   while the first one is being written, `0` for none. Readers read
//!   these anyway (they merge every integer cell), and pick the slot with
//!   the greatest one, without touching the sketch region: reading a hole
//!   of a tmpfs file allocates a page, so a reader reads a record only
//!   where a writer wrote one.
//! - a **record** of [`RECORD`] sketch cells: a sequence word (a seqlock:
//!   odd while being written), the value's f64 bits, the timestamp, the
//!   length of the encoded labels, and [`LABEL_BYTES`] bytes of them.
//!
//! Labels are encoded pair by pair: a u8 name length, the name, a u16
//! little-endian value length, the value. With names in the legacy set
//! (ASCII, at least one character) and values at most four bytes a
//! character, 128 characters take at most 512 bytes with their lengths
//! (each name character costs at most 4 bytes: itself plus its pair's 3
//! length bytes; each value character at most 4). UTF-8 names can take
//! more: labels whose encoding passes [`LABEL_BYTES`], or with a name of
//! more than 255 bytes, are refused.
//!
//! Only the slot's owner process writes a record; several of its threads
//! may try at once. A writer takes the sequence word from even to odd
//! with a compare-and-swap; if another thread holds it, the exemplar is
//! dropped (exemplars are samples; the other thread's is as good).

use std::sync::atomic::{
    fence, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use crate::error::{Error, ErrorKind, Result};
use crate::family::check_label_name;
use crate::marks::Space;

/// The most characters of an exemplar's label names and values together
/// (the OpenMetrics limit).
pub const MAX_EXEMPLAR_CHARS: usize = 128;

/// Bytes of encoded labels in a record.
pub(crate) const LABEL_BYTES: usize = 512;
const LABEL_WORDS: usize = LABEL_BYTES / 8;
/// Sketch cells of one record: sequence, value, timestamp, length, labels.
pub(crate) const RECORD: usize = 4 + LABEL_WORDS;
/// The timestamp cell's value while a slot's first exemplar of a place is
/// being written: marks the record as touched.
const TOUCHED: u64 = 1;

/// An exemplar's labels, checked and encoded for a record.
pub(crate) struct Encoded {
    words: [u64; LABEL_WORDS],
    len: usize,
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidValue, msg)
}

/// Checks and encodes an exemplar's labels: valid label names, none
/// twice, at most [`MAX_EXEMPLAR_CHARS`] characters in all.
pub(crate) fn encode(labels: &[(&str, &str)]) -> Result<Encoded> {
    let (mut chars, mut bytes) = (0usize, 0usize);
    for (i, (name, value)) in labels.iter().enumerate() {
        check_label_name(name).map_err(|e| {
            Error::new(
                ErrorKind::InvalidName,
                format!("exemplar label: {}", e.message()),
            )
        })?;
        if labels[..i].iter().any(|(n, _)| n == name) {
            return Err(Error::new(
                ErrorKind::InvalidName,
                format!("exemplar label name {name:?} is given twice"),
            ));
        }
        chars += name.chars().count() + value.chars().count();
        bytes += 3 + name.len() + value.len();
        if name.len() > usize::from(u8::MAX) {
            return Err(invalid(format!(
                "exemplar label name {name:?} takes {} bytes, more than the 255 a store keeps",
                name.len()
            )));
        }
    }
    if chars > MAX_EXEMPLAR_CHARS {
        return Err(invalid(format!(
            "an exemplar's label names and values may have at most {MAX_EXEMPLAR_CHARS} \
             characters together (OpenMetrics), got {chars}"
        )));
    }
    if bytes > LABEL_BYTES {
        // Only with many short names outside ASCII: 128 characters of
        // legacy names and any values always fit.
        return Err(invalid(format!(
            "an exemplar's labels take {bytes} bytes encoded, more than the {LABEL_BYTES} a \
             store keeps: use fewer or shorter label names"
        )));
    }
    let mut bytes = [0u8; LABEL_BYTES];
    let mut n = 0;
    for (name, value) in labels {
        // Fits: see the module docs for the bound.
        bytes[n] = name.len() as u8;
        bytes[n + 1..n + 1 + name.len()].copy_from_slice(name.as_bytes());
        n += 1 + name.len();
        bytes[n..n + 2].copy_from_slice(&(value.len() as u16).to_le_bytes());
        bytes[n + 2..n + 2 + value.len()].copy_from_slice(value.as_bytes());
        n += 2 + value.len();
    }
    let mut words = [0u64; LABEL_WORDS];
    for (w, c) in words.iter_mut().zip(bytes.chunks_exact(8)) {
        *w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
    Ok(Encoded { words, len: n })
}

/// Records an exemplar of `value` at `ts` (ns since the Unix epoch) in
/// one place of this process's slot: `ts_cell` is the place's timestamp
/// cell, `rec` its record. Returns whether it was recorded (false if
/// another thread was writing the record, or `rec` is short).
///
/// # Errors
/// The file system's error if it has no room for the record's page
/// (reserved when the place is first written): nothing was recorded.
pub(crate) fn record<S: Space>(
    ts_cell: &AtomicU64,
    rec: &[AtomicU64],
    value: f64,
    ts: u64,
    e: &Encoded,
    space: &S,
) -> std::io::Result<bool> {
    let Some(rec) = rec.get(..RECORD) else {
        return Ok(false);
    };
    if ts_cell.load(Relaxed) == 0 {
        // The record's pages, before its first write: readers and clears
        // visit it only once its timestamp cell is set, below.
        space.reserve(rec)?;
        // From now on, clears (reset, wipe, a new owner) visit the record.
        ts_cell.store(TOUCHED, Relaxed);
    }
    let seq = rec[0].load(Relaxed);
    if seq & 1 == 1
        || rec[0]
            .compare_exchange(seq, seq.wrapping_add(1), Acquire, Relaxed)
            .is_err()
    {
        return Ok(false);
    }
    // Orders the odd sequence before the fields (the seqlock's writer
    // side): a reader that sees a field's new value sees the odd word.
    fence(Release);
    rec[1].store(value.to_bits(), Relaxed);
    rec[2].store(ts, Relaxed);
    rec[3].store(e.len as u64, Relaxed);
    for (cell, w) in rec[4..].iter().zip(&e.words[..e.len.div_ceil(8)]) {
        cell.store(*w, Relaxed);
    }
    rec[0].store(seq.wrapping_add(2), Release);
    ts_cell.store(ts.max(TOUCHED + 1), Release);
    Ok(true)
}

/// An exemplar read from a record: its value, timestamp and encoded
/// labels (checked by [`pairs`]).
pub(crate) struct Read {
    pub value: f64,
    pub ts: u64,
    bytes: [u8; LABEL_BYTES],
    len: usize,
}

impl Read {
    /// The label pairs, in the order they were given.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        pairs(&self.bytes[..self.len]).map(|p| p.expect("checked by read"))
    }
}

/// Reads a record with the seqlock's reader side: `None` if it holds no
/// exemplar, keeps changing, or is corrupt (bad lengths, names or UTF-8).
pub(crate) fn read(rec: &[AtomicU64]) -> Option<Read> {
    let rec = rec.get(..RECORD)?;
    for _ in 0..8 {
        let s1 = rec[0].load(Acquire);
        if s1 == 0 {
            return None;
        }
        if s1 & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let value = f64::from_bits(rec[1].load(Relaxed));
        let ts = rec[2].load(Relaxed);
        let len = rec[3].load(Relaxed);
        let mut bytes = [0u8; LABEL_BYTES];
        let n = usize::try_from(len).unwrap_or(usize::MAX).min(LABEL_BYTES);
        for (c, cell) in bytes[..n.div_ceil(8) * 8]
            .chunks_exact_mut(8)
            .zip(&rec[4..])
        {
            c.copy_from_slice(&cell.load(Relaxed).to_le_bytes());
        }
        fence(Acquire);
        if rec[0].load(Relaxed) != s1 {
            continue;
        }
        // A consistent copy: check it.
        if len > LABEL_BYTES as u64 || value.is_nan() || ts <= TOUCHED {
            return None;
        }
        let mut chars = 0;
        for p in pairs(&bytes[..n]) {
            let (name, value) = p?;
            chars += name.len() + value.chars().count();
        }
        if chars > MAX_EXEMPLAR_CHARS {
            return None;
        }
        return Some(Read {
            value,
            ts,
            bytes,
            len: n,
        });
    }
    None
}

/// Decodes encoded label pairs; yields `None` (and stops) at anything
/// malformed: a cut-short pair, an invalid name, a value not UTF-8.
fn pairs(mut b: &[u8]) -> impl Iterator<Item = Option<(&str, &str)>> {
    std::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        let pair = (|| {
            let n = *b.first()? as usize;
            let name = std::str::from_utf8(b.get(1..1 + n)?).ok()?;
            check_label_name(name).ok()?;
            let at = 1 + n;
            let m = u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as usize;
            let value = std::str::from_utf8(b.get(at + 2..at + 2 + m)?).ok()?;
            Some(((name, value), at + 2 + m))
        })();
        match pair {
            Some((p, used)) => {
                b = &b[used..];
                Some(Some(p))
            }
            None => {
                b = &[];
                Some(None)
            }
        }
    })
}

/// Clears one place of a slot, if its timestamp cell says it was ever
/// written: the record's fields, then the cell. The sequence word is
/// zeroed too when `seq` is set (a wipe, after which the cells may serve
/// another series); a reset keeps it, so that a writer of the slot's
/// live owner that holds it stays the only one.
pub(crate) fn clear(ts_cell: &AtomicU64, rec: &[AtomicU64], seq: bool) {
    if ts_cell.load(Acquire) == 0 {
        return;
    }
    if let Some(rec) = rec.get(..RECORD) {
        let len = usize::try_from(rec[3].load(Relaxed)).map_or(LABEL_BYTES, |l| l.min(LABEL_BYTES));
        for c in rec[1..4].iter().chain(&rec[4..4 + len.div_ceil(8)]) {
            c.store(0, Relaxed);
        }
        if seq {
            // Every cell, whatever the length said.
            for c in rec {
                if c.load(Relaxed) != 0 {
                    c.store(0, Relaxed);
                }
            }
        }
    }
    ts_cell.store(0, Release);
}

/// Ends a write that the slot's previous owner died in the middle of
/// (an odd sequence word), so that the new owner can record again. Only
/// under the store lock, while claiming a slot whose owner is dead.
pub(crate) fn repair(ts_cell: &AtomicU64, rec: &[AtomicU64]) {
    if ts_cell.load(Acquire) == 0 {
        return;
    }
    if let Some(seq) = rec.first() {
        let s = seq.load(Relaxed);
        if s & 1 == 1 {
            seq.store(s.wrapping_add(1), Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::Granted;

    fn cells(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    #[test]
    fn round_trip() {
        let (ts, rec) = (AtomicU64::new(0), cells(RECORD));
        assert!(read(&rec).is_none());
        let e = encode(&[("trace_id", "abc"), ("span", "é€😀")]).unwrap();
        assert!(record(&ts, &rec, 1.5, 1_700_000_000_123_000_000, &e, &Granted).unwrap());
        assert_eq!(ts.load(Relaxed), 1_700_000_000_123_000_000);
        let r = read(&rec).unwrap();
        assert_eq!(r.value, 1.5);
        assert_eq!(r.ts, 1_700_000_000_123_000_000);
        let p: Vec<_> = r.pairs().collect();
        assert_eq!(p, [("trace_id", "abc"), ("span", "é€😀")]);
        let empty = encode(&[]).unwrap();
        assert!(record(&ts, &rec, 2.0, 5, &empty, &Granted).unwrap());
        assert_eq!(read(&rec).unwrap().pairs().count(), 0);
        clear(&ts, &rec, false);
        assert_eq!(ts.load(Relaxed), 0);
        assert!(read(&rec).is_none());
    }

    #[test]
    fn limits() {
        let v = "x".repeat(120);
        assert!(encode(&[("trace_id", &v)]).is_ok()); // 8 + 120
        let v = "x".repeat(121);
        let e = encode(&[("trace_id", &v)]).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidValue);
        // Characters, not bytes: 127 four-byte characters fit.
        let v = "😀".repeat(127);
        let (ts, rec) = (AtomicU64::new(0), cells(RECORD));
        let e = encode(&[("a", &v)]).unwrap();
        assert!(record(&ts, &rec, 1.0, 10, &e, &Granted).unwrap());
        assert_eq!(read(&rec).unwrap().pairs().next().unwrap().1, v);
        // The worst case for the encoding: 64 one-character names with
        // empty values (4 bytes each with their lengths), and names of
        // one character with values of 4-byte characters.
        let names: Vec<String> = (0..64)
            .map(|i| format!("{}", (b'a' + i % 26) as char))
            .collect();
        let many: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
        assert_eq!(encode(&many).err().unwrap().kind(), ErrorKind::InvalidName); // duplicates
        for bad in ["", "__x", "a\0"] {
            let e = encode(&[(bad, "v")]).err().unwrap();
            assert_eq!(e.kind(), ErrorKind::InvalidName, "{bad}");
        }
        // UTF-8 names, as Prometheus 3 and prometheus_client take them.
        for ok in ["9a", "a-b", ":o)", "花火"] {
            let e = encode(&[(ok, "v")]).unwrap();
            assert!(record(&ts, &rec, 1.0, 10, &e, &Granted).unwrap());
            assert_eq!(read(&rec).unwrap().pairs().next().unwrap(), (ok, "v"));
        }
        // Many short 4-byte names would pass the record: refused.
        let wide: Vec<String> = (0..100)
            .map(|i| char::from_u32(0x1F600 + i).unwrap().to_string())
            .collect();
        let wide: Vec<(&str, &str)> = wide.iter().map(|n| (n.as_str(), "")).collect();
        assert_eq!(encode(&wide).err().unwrap().kind(), ErrorKind::InvalidValue);
        let long = "😀".repeat(70);
        assert_eq!(
            encode(&[(&long, "")]).err().unwrap().kind(),
            ErrorKind::InvalidValue
        );
    }

    #[test]
    fn worst_case_fits() {
        // 128 distinct one-character-or-more names, 128 chars in all.
        let mut names = Vec::new();
        let mut chars = 0;
        let mut i = 0u32;
        while chars < MAX_EXEMPLAR_CHARS {
            let n = if i < 52 {
                let c = if i < 26 {
                    b'a' + i as u8
                } else {
                    b'A' + (i - 26) as u8
                };
                (c as char).to_string()
            } else {
                format!("a{}", i - 52)
            };
            if chars + n.len() > MAX_EXEMPLAR_CHARS {
                break;
            }
            chars += n.len();
            names.push(n);
            i += 1;
        }
        let labels: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "")).collect();
        let e = encode(&labels).unwrap();
        assert!(e.len <= LABEL_BYTES);
        let v = "😀".repeat(127);
        assert!(encode(&[("a", &v)]).unwrap().len <= LABEL_BYTES);
    }

    #[test]
    fn corrupt_records_are_refused() {
        let (ts, rec) = (AtomicU64::new(0), cells(RECORD));
        let e = encode(&[("trace_id", "abc")]).unwrap();
        assert!(record(&ts, &rec, 1.0, 10, &e, &Granted).unwrap());
        // Every single-bit flip of the length word and the first label
        // word either reads back something valid or nothing: no panic.
        for cell in [3usize, 4] {
            let orig = rec[cell].load(Relaxed);
            for bit in 0..64 {
                rec[cell].store(orig ^ (1 << bit), Relaxed);
                if let Some(r) = read(&rec) {
                    for (n, _) in r.pairs() {
                        assert!(check_label_name(n).is_ok());
                    }
                }
            }
            rec[cell].store(orig, Relaxed);
        }
        rec[3].store(u64::MAX, Relaxed);
        assert!(read(&rec).is_none());
        rec[3].store(3, Relaxed);
        assert!(read(&rec).is_none());
        // A sequence stuck odd (a writer died) reads as nothing, and is
        // repaired.
        rec[3].store(11, Relaxed);
        rec[0].fetch_add(1, Relaxed);
        assert!(read(&rec).is_none());
        assert!(!record(&ts, &rec, 2.0, 20, &e, &Granted).unwrap());
        repair(&ts, &rec);
        assert!(record(&ts, &rec, 2.0, 20, &e, &Granted).unwrap());
        assert_eq!(read(&rec).unwrap().value, 2.0);
        // Random garbage never panics.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            for c in &rec[..] {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                c.store(x & !1, Relaxed);
            }
            rec[3].store(x % 600, Relaxed);
            if let Some(r) = read(&rec) {
                let _ = r.pairs().count();
            }
        }
    }
}
