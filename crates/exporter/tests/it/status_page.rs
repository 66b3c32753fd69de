//! The status page at `/`, rendered by a real headless Chromium (Debian's
//! `chromium`) with JavaScript blocked, as an operator would read it: the
//! store's fill, the families by series with the labels that carry their
//! cardinality, the overflow series in use, the recent scrapes. A
//! screenshot stays in `target/tmp/status-page.png` as the test's artefact.
//! Also the same figures through `--web.family-metrics` and
//! `shmetrics inspect --top`.

use std::path::{Path, PathBuf};
use std::process::Command;

use shmetrics_core::{FamilyDesc, Kind, Options, Store};

use shmetrics_testkit::binary::shmetrics_bin;

use crate::util::*;

/// A store of 120 series: `api_requests` with 50 routes × 2 methods,
/// `queue_depth` with one, and `tenant_jobs` whose 40 tenants do not all
/// fit, so its overflow series is in use.
fn fixture(path: &Path) -> Store {
    let store = Store::open(
        path,
        &Options {
            max_series: 120,
            ..Options::default()
        },
    )
    .unwrap();
    let api = store
        .register(
            &FamilyDesc::new("api_requests_total", Kind::Counter)
                .help("Requests.")
                .labels(&["method", "route"]),
        )
        .unwrap();
    for route in 0..50 {
        for method in ["GET", "POST"] {
            let s = store
                .series(&api, &[method, &format!("/r/{route}")])
                .unwrap();
            store.counter_inc(s).unwrap();
        }
    }
    let depth = store
        .register(&FamilyDesc::new("queue_depth", Kind::Gauge).help("Depth."))
        .unwrap();
    let s = store.series(&depth, &[]).unwrap();
    store.gauge_set(s, 7.0).unwrap();
    let jobs = store
        .register(
            &FamilyDesc::new("tenant_jobs_total", Kind::Counter)
                .help("Jobs.")
                .labels(&["tenant"]),
        )
        .unwrap();
    for tenant in 0..40 {
        let s = store
            .series_or_overflow(&jobs, &[&format!("t{tenant}")])
            .unwrap();
        store.counter_inc(s).unwrap();
    }
    store
}

/// Runs Chromium headless with JavaScript blocked (a profile whose content
/// setting blocks it: `--blink-settings=scriptEnabled=false` also stops
/// headless Chromium's own capture) and returns what `args` printed.
fn chromium(profile: &Path, args: &[&str]) -> String {
    let prefs = profile.join("Default");
    std::fs::create_dir_all(&prefs).unwrap();
    std::fs::write(
        prefs.join("Preferences"),
        r#"{"profile":{"default_content_setting_values":{"javascript":2}}}"#,
    )
    .unwrap();
    let out = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("cannot run chromium: install Debian's package `chromium` (./run-tests does)");
    assert!(
        out.status.success(),
        "chromium {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn artefact_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn status_page_in_a_real_browser_without_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("status.metrics");
    let _store = fixture(&path);
    let serve = Serve::on_store(&path, &["--web.family-metrics"]);
    let addr = serve.addr;

    // A scrape, so that the page has one to list.
    let r = get(addr, "/metrics", &[]);
    assert_eq!(r.status, 200);
    let scraped_bytes = r.body.len();

    let url = format!("http://{addr}/");
    let raw = get(addr, "/", &[]).text();
    assert!(
        !raw.contains("<script"),
        "the page must not need scripts:\n{raw}"
    );
    let dom = chromium(&dir.path().join("profile"), &["--dump-dom", &url]);

    // The store's fill, from the snapshot: the store is full.
    assert!(
        dom.contains("<th>series</th><td>120 of 120 (100.0%)"),
        "{dom}"
    );
    assert!(
        dom.contains("<span class=\"bar full\">"),
        "a full store shows a red bar:\n{dom}"
    );
    assert!(dom.contains("<th>memory now</th>"), "{dom}");
    assert!(dom.contains("with every series slot in use"), "{dom}");
    // Families by series, largest first, with their labels' cardinality
    // (118 series exported: 100, 1, and 16 tenants with the overflow
    // series).
    let api = dom
        .find("<td>api_requests</td>")
        .expect("api_requests listed");
    let tenants = dom
        .find("<td>tenant_jobs</td>")
        .expect("tenant_jobs listed");
    let depth = dom
        .find("<td>queue_depth</td>")
        .expect("queue_depth listed");
    assert!(api < tenants && tenants < depth, "not by series:\n{dom}");
    assert!(
        dom.contains("<td>api_requests</td><td>counter</td><td class=\"n\">100</td><td class=\"n\">84.7%</td><td>route (50), method (2)</td>"),
        "{dom}"
    );
    // The overflow series in use.
    assert!(dom.contains("<span class=\"alert\">in use: "), "{dom}");
    let overflow_section = &dom[dom.find("<h2>Overflow series in use</h2>").unwrap()..];
    assert!(overflow_section.contains("<td>tenant_jobs</td>"), "{dom}");
    // Writer slots, and the scrape above.
    assert!(dom.contains("<h2>Writer slots</h2>"), "{dom}");
    assert!(
        dom.contains(&format!(
            "<td>PrometheusText</td><td class=\"n\">{scraped_bytes}</td>"
        )),
        "the scrape is not listed:\n{dom}"
    );

    // The same figures as the exporter's own metrics.
    let own = get(addr, "/exporter-metrics", &[]).text();
    assert!(
        own.contains("shmetrics_family_series{family=\"api_requests\"} 100\n"),
        "{own}"
    );
    assert!(
        own.contains("shmetrics_family_series{family=\"queue_depth\"} 1\n"),
        "{own}"
    );
    let overflowed = own
        .lines()
        .find_map(|l| l.strip_prefix("shmetrics_family_overflows_total{family=\"tenant_jobs\"} "))
        .expect("tenant_jobs' overflows");
    let overflowed: u64 = overflowed.parse().unwrap();
    assert!(overflowed > 0, "{own}");
    assert!(
        dom.contains(&format!(
            "<td>tenant_jobs</td><td class=\"n\">{overflowed}</td>"
        )),
        "{dom}"
    );

    // The screenshot, kept as the test's artefact.
    let shot = artefact_dir().join("status-page.png");
    let _ = std::fs::remove_file(&shot);
    chromium(
        &dir.path().join("profile"),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,1800",
            &url,
        ],
    );
    let png = std::fs::read(&shot).expect("chromium wrote no screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    // IHDR: width and height, big-endian, at bytes 16..24.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1280, 1800));
    assert!(
        png.len() > 20_000,
        "a blank screenshot? {} bytes",
        png.len()
    );
}

#[test]
fn inspect_top_lists_the_largest_families_and_their_labels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("top.metrics");
    let _store = fixture(&path);
    let out = Command::new(shmetrics_bin())
        .args(["inspect", "--top", "2", "--store"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("family "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    let api: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(
        api,
        [
            "api_requests",
            "counter",
            "100",
            "0",
            "route=50",
            "method=2"
        ],
        "{text}"
    );
    assert!(rows[1].starts_with("tenant_jobs "), "{text}");
    assert!(!text.contains("queue_depth"), "only the top 2:\n{text}");
}
