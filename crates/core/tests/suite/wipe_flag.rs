//! A damaged wipe flag (issue 36, fault 2). One flipped bit in the
//! header's `wipe_pending` once made every snapshot fail with "store is
//! busy" for good, while writers wrote on. A wipe sets the flag only while
//! it holds the store lock, so a flag set with the lock free is damaged:
//! readers read on, and a writer clears it, without erasing anything.

use shmetrics_core::{FamilyDesc, Kind, LockState, Options, Store, Value};

use crate::common::{existing, hot, read_only, small_options, tempdir, RawStore};

/// The value of counter `name` (without `_total`, as snapshots name it).
fn value_of(store: &Store, name: &str) -> Option<f64> {
    let snap = store.snapshot().unwrap_or_else(|e| panic!("{e}"));
    let fam = snap.families().find(|f| f.name() == name)?;
    let series = fam.series().next()?;
    match series.value() {
        Value::Counter(v) => Some(v),
        v => panic!("{name}: {v:?}"),
    }
}

#[test]
fn a_flipped_bit_in_the_wipe_flag_is_repaired_without_erasing() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let options = Options {
        max_families: 64,
        max_series: 256,
        ..small_options()
    };
    let writer = Store::open(&path, &options).unwrap();
    let f = writer
        .register(&FamilyDesc::new("kept_total", Kind::Counter))
        .unwrap();
    let s = writer.series(&f, &[]).unwrap();
    writer.counter_add(s, 5.0).unwrap();
    let reader = Store::open(&path, &read_only()).unwrap();
    let raw = RawStore::open(&path);
    let repairs = writer.stats().lock_recoveries_total;
    for bit in 0..32u32 {
        assert_eq!(raw.u32(hot::WIPE_PENDING), 0, "bit {bit}");
        raw.set_u32(hot::WIPE_PENDING, 1 << bit);
        assert_eq!(reader.lock_state(), LockState::Free);
        // Readers (read-only: they cannot repair) read on, and see all.
        let expect = 5.0 + f64::from(bit);
        assert_eq!(value_of(&reader, "kept"), Some(expect), "bit {bit}");
        assert_eq!(value_of(&writer, "kept"), Some(expect), "bit {bit}");
        writer.counter_inc(s).unwrap();
        // The next writer to take the lock clears the flag; nothing is
        // erased, and the old handle stays good.
        let g = writer
            .register(&FamilyDesc::new(
                format!("after_flip_{bit}_total"),
                Kind::Counter,
            ))
            .unwrap();
        writer.counter_inc(writer.series(&g, &[]).unwrap()).unwrap();
        assert_eq!(raw.u32(hot::WIPE_PENDING), 0, "bit {bit}: not repaired");
        assert_eq!(value_of(&reader, "kept"), Some(expect + 1.0));
        assert_eq!(value_of(&reader, &format!("after_flip_{bit}")), Some(1.0));
        assert_eq!(
            writer.stats().lock_recoveries_total,
            repairs + u64::from(bit) + 1,
            "each repair is counted"
        );
    }
    assert_eq!(reader.snapshot().unwrap().families().count(), 33);
}

#[test]
fn a_writer_that_opens_the_store_repairs_a_damaged_wipe_flag() {
    let dir = tempdir();
    let path = dir.path().join("s");
    let writer = Store::open(&path, &small_options()).unwrap();
    let f = writer
        .register(&FamilyDesc::new("kept_total", Kind::Counter))
        .unwrap();
    writer
        .counter_add(writer.series(&f, &[]).unwrap(), 7.0)
        .unwrap();
    let raw = RawStore::open(&path);
    raw.set_u32(hot::WIPE_PENDING, 1);
    // A reader opening it does not write, and still reads.
    let reader = Store::open(&path, &read_only()).unwrap();
    assert_eq!(raw.u32(hot::WIPE_PENDING), 1);
    assert_eq!(value_of(&reader, "kept"), Some(7.0));
    let again = Store::open(&path, &existing()).unwrap();
    assert_eq!(raw.u32(hot::WIPE_PENDING), 0);
    assert_eq!(value_of(&again, "kept"), Some(7.0));
    // A real wipe still wipes, and leaves the flag clear.
    again.wipe().unwrap();
    assert_eq!(raw.u32(hot::WIPE_PENDING), 0);
    assert_eq!(reader.snapshot().unwrap().families().count(), 0);
}
