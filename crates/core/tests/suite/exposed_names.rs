//! One exposed name, one family: registration refuses a family whose
//! exposed names (`x`, `x_total`, `x_bucket`, `x_count`, `x_sum`,
//! `x_created`, as its type has them) meet another family's, across
//! types, with an error naming both; names that only look alike pass.

use shmetrics_core::{ErrorKind, FamilyDesc, Kind, Options, Store};

use crate::common::tempdir;

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempdir();
    let s = Store::open(dir.path().join("s"), &Options::default()).unwrap();
    (dir, s)
}

#[test]
fn colliding_exposed_names_are_refused_across_types() {
    use Kind::*;
    // (first, second, the name both would expose)
    let cases = [
        ((Counter, "x"), (Gauge, "x_total"), "x_total"),
        ((Gauge, "x_total"), (Counter, "x"), "x_total"),
        ((Counter, "x"), (Gauge, "x_created"), "x_created"),
        ((Histogram, "x"), (Gauge, "x_bucket"), "x_bucket"),
        ((Histogram, "x"), (Counter, "x_count"), "x_count"),
        ((Gauge, "x_sum"), (Summary, "x"), "x_sum"),
        ((Summary, "x"), (Histogram, "x_count"), "x_count"),
        (
            (Histogram, "x_bucket"),
            (Summary, "x_bucket_count"),
            "x_bucket_count",
        ),
        ((Counter, "x_created"), (Histogram, "x"), "x_created"),
    ];
    for ((k1, n1), (k2, n2), both) in cases {
        let (_d, store) = open();
        store.register(&FamilyDesc::new(n1, k1)).unwrap();
        let e = store.register(&FamilyDesc::new(n2, k2)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{n1} then {n2}: {e}");
        let msg = e.to_string();
        let n1 = n1
            .strip_suffix("_total")
            .filter(|_| k1 == Counter)
            .unwrap_or(n1);
        let n2 = n2
            .strip_suffix("_total")
            .filter(|_| k2 == Counter)
            .unwrap_or(n2);
        for part in [
            format!("{:?}", n1),
            format!("{:?}", n2),
            format!("{both:?}"),
            k1.as_str().to_string(),
            k2.as_str().to_string(),
        ] {
            assert!(msg.contains(&part), "{msg:?} lacks {part}");
        }
        // Nothing was registered: the store holds the first family only.
        let snap = store.snapshot().unwrap();
        assert!(snap.families().all(|f| f.name() == n1), "{msg}");
    }
}

/// Scrapers that do not take UTF-8 names see them escaped with
/// `underscores` by default: `a.b` and `a_b` would be one family there.
#[test]
fn names_alike_when_underscored_are_refused() {
    use Kind::*;
    // (first, second, the name both would expose once underscored)
    let cases = [
        ((Gauge, "a.b"), (Gauge, "a_b"), "a_b"),
        ((Gauge, "a_b"), (Gauge, "a.b"), "a_b"),
        ((Gauge, "a.b"), (Counter, "a-b"), "a_b"),
        ((Counter, "a.b"), (Gauge, "a_b_total"), "a_b_total"),
        ((Gauge, "a_b_total"), (Counter, "a.b"), "a_b_total"),
        ((Histogram, "x.y"), (Gauge, "x.y_bucket"), "x_y_bucket"),
        ((Summary, "花火"), (Gauge, "___count"), "___count"),
        ((Gauge, "é"), (Gauge, "è"), "_"),
    ];
    for ((k1, n1), (k2, n2), both) in cases {
        let (_d, store) = open();
        store.register(&FamilyDesc::new(n1, k1)).unwrap();
        let e = store.register(&FamilyDesc::new(n2, k2)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict, "{n1} then {n2}: {e}");
        let msg = e.to_string();
        assert!(msg.contains(&format!("{both:?}")), "{msg:?} lacks {both}");
        assert!(msg.contains("UTF-8"), "{msg}");
        let snap = store.snapshot().unwrap();
        assert_eq!(snap.families().len(), 1, "{msg}");
    }
    // Told apart once underscored: accepted.
    let (_d, store) = open();
    for name in ["a.b", "a.bc", "a_b_c", "b.a"] {
        store.register(&FamilyDesc::new(name, Gauge)).unwrap();
    }
    // And found again by name in another process's view (a new handle
    // reads the records from the file).
    let again = Store::open(store.path(), &Options::default()).unwrap();
    let e = again.register(&FamilyDesc::new("a-b", Gauge)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
}

#[test]
fn names_that_only_look_alike_are_accepted() {
    let (_d, store) = open();
    for (kind, name) in [
        (Kind::Counter, "x"),
        (Kind::Gauge, "x_totals"),
        (Kind::Gauge, "x_total_bytes"),
        (Kind::Gauge, "xtotal"),
        (Kind::Gauge, "x_info"),
        (Kind::Histogram, "y"),
        (Kind::Gauge, "y_buckets"),
        (Kind::Counter, "y_bucket_total_x"),
        (Kind::Summary, "z"),
        (Kind::Gauge, "z_bucket"),
        (Kind::Counter, "z_counts"),
        (Kind::Gauge, "w_count"),
        (Kind::Gauge, "w_sum"),
    ] {
        store
            .register(&FamilyDesc::new(name, kind))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // The same definition again is the same family, not a collision.
    store
        .register(&FamilyDesc::new("x_total", Kind::Counter))
        .unwrap();
    store
        .register(&FamilyDesc::new("z_bucket", Kind::Gauge))
        .unwrap();
}
