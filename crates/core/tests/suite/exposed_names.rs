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
