//! The landing page at `/`, as exporter-toolkit's (the exporter's name and
//! version, links to the telemetry path and the health endpoints), with
//! the store's status (see `status`): plain HTML and CSS, no scripts, so
//! that it reads the same in any browser, a text browser or `curl`.

use std::fmt::Write as _;
use std::time::SystemTime;

use crate::status::{Fill, Status};

const STYLE: &str = "body{font-family:sans-serif;margin:1em 2em;max-width:70em}\
table{border-collapse:collapse;margin:.5em 0 1em}\
th,td{border-bottom:1px solid #ddd;padding:.2em .8em;text-align:left;vertical-align:top}\
td.n{text-align:right;font-variant-numeric:tabular-nums}\
.bar{background:#eee;width:10em;height:.8em;display:inline-block}\
.bar span{background:#3a7;height:100%;display:block}\
.bar.warn span{background:#d80}.bar.full span{background:#c33}\
.alert{color:#b00;font-weight:bold}";

/// The HTML page for a telemetry path and a status.
pub(crate) fn page(telemetry_path: &str, s: &Status) -> String {
    let mut out = String::with_capacity(16 << 10);
    head(&mut out, telemetry_path);
    match &s.not_attached {
        Some(why) => not_attached(&mut out, &s.store_path, why),
        None => {
            store(&mut out, s);
            writers(&mut out, s);
            families(&mut out, s);
            overflows(&mut out, s);
            push(&mut out, s);
            scrapes(&mut out, s);
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn head(out: &mut String, telemetry_path: &str) {
    let b = &crate::BUILD_INFO;
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>shmetrics exporter</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>shmetrics exporter</h1>\n\
         <p>Metrics for multi-process servers, in shared memory. Version {} (revision {}, rustc {}).</p>\n<ul>\n",
        escape(b.version),
        escape(b.revision),
        escape(b.rustc)
    );
    let path = escape(telemetry_path);
    let _ = writeln!(out, "<li><a href=\"{path}\">Metrics</a> ({path})</li>");
    for (href, what) in [
        (crate::EXPORTER_METRICS_PATH, "the exporter's own metrics"),
        ("/-/healthy", "the process answers"),
        ("/-/ready", "a store is attached"),
        ("/healthz", "the store is attached, readable and not stale"),
    ] {
        let _ = writeln!(out, "<li><a href=\"{href}\">{href}</a>: {what}</li>");
    }
    out.push_str("</ul>\n");
}

fn not_attached(out: &mut String, path: &str, why: &str) {
    let _ = writeln!(
        out,
        "<h2>Store</h2>\n<p class=\"alert\">NOT ATTACHED: no store is served from {}: {}</p>\n\
         <p>The metrics page serves only the exporter's own metrics until the store can be opened; \
         every request tries again.</p>",
        escape(path),
        escape(why)
    );
}

fn store(out: &mut String, s: &Status) {
    let st = &s.stats;
    out.push_str("<h2>Store</h2>\n<table id=\"store\">\n");
    row(out, "file", &escape(&s.store_path));
    row(out, "served", &escape(&s.served));
    let state = match &s.stale {
        None => "attached (read-only)".to_owned(),
        Some(why) => format!(
            "attached (read-only), <span class=\"alert\">STALE: {}</span>",
            escape(why)
        ),
    };
    row(out, "state", &state);
    if let Some(at) = s.read_at {
        row(out, "read at", &http_date(at));
    }
    row(out, "layout version", &st.layout_version.to_string());
    fill_row(
        out,
        "series",
        st.series_allocated.into(),
        st.series_capacity.into(),
    );
    fill_row(
        out,
        "label bytes",
        st.label_bytes_used,
        st.label_bytes_capacity,
    );
    fill_row(
        out,
        "families",
        st.families.into(),
        st.families_capacity.into(),
    );
    fill_row(
        out,
        "value cells per writer",
        st.cells_used,
        st.cells_capacity,
    );
    fill_row(
        out,
        "sketch cells per writer",
        st.sketch_cells_used,
        st.sketch_cells_capacity,
    );
    row(out, "series exported", &s.series_exported.to_string());
    memory_rows(out, &s.fill);
    row(
        out,
        "new label sets sent to overflow series",
        &st.overflows_total.to_string(),
    );
    row(
        out,
        "series expired (TTL)",
        &st.series_expired_total.to_string(),
    );
    row(out, "lock repairs", &st.lock_recoveries_total.to_string());
    out.push_str("</table>\n");
}

fn memory_rows(out: &mut String, f: &Fill) {
    row(
        out,
        "memory now",
        &format!("{} (the file's written pages)", bytes(f.resident)),
    );
    let projected = f.projected_full.map_or_else(
        || "unknown until a series is written".to_owned(),
        |p| {
            format!(
                "{} with every series slot in use, at today's bytes per series",
                bytes(p)
            )
        },
    );
    row(out, "projected", &projected);
    row(
        out,
        "file size",
        &format!("{} (sparse: the most it can take)", bytes(f.file_size)),
    );
}

fn writers(out: &mut String, s: &Status) {
    let st = &s.stats;
    out.push_str("<h2>Writer slots</h2>\n<table id=\"writers\">\n");
    fill_row(
        out,
        "live",
        st.writers_live.into(),
        st.writers_capacity.into(),
    );
    row(out, "dead (awaiting reuse)", &st.writers_dead.to_string());
    row(out, "claims", &st.writer_claims_total.to_string());
    row(
        out,
        "reuses of a dead process's slot",
        &st.writer_reuses_total.to_string(),
    );
    row(
        out,
        "processes that found no free slot",
        &st.writers_exhausted_total.to_string(),
    );
    out.push_str("</table>\n");
}

fn families(out: &mut String, s: &Status) {
    let _ = writeln!(
        out,
        "<h2>Largest families</h2>\n<p>The {} families with the most series, and the distinct values of \
         each of their labels, most first: the labels that carry a family's cardinality.</p>\n\
         <table id=\"families\">\n<tr><th>family</th><th>type</th><th>series</th><th>share</th>\
         <th>labels (distinct values)</th><th>overflow</th></tr>",
        s.top.len()
    );
    let total = s.series_exported.max(1) as f64;
    for f in &s.top {
        let labels: Vec<String> = f
            .labels
            .iter()
            .map(|l| format!("{} ({})", escape(&l.name), l.values))
            .collect();
        let overflow = if f.overflow_series {
            format!(
                "<span class=\"alert\">in use: {} label sets</span>",
                f.overflows
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%</td><td>{}</td><td>{overflow}</td></tr>",
            escape(&f.name),
            f.kind.as_str(),
            f.series,
            100.0 * f.series as f64 / total,
            labels.join(", ")
        );
    }
    out.push_str("</table>\n");
}

fn overflows(out: &mut String, s: &Status) {
    out.push_str("<h2>Overflow series in use</h2>\n");
    if s.overflowing_families.is_empty() {
        out.push_str("<p id=\"overflows\">None: every label set found room.</p>\n");
        return;
    }
    out.push_str(
        "<p>New label sets of these families found no room in the store and are counted in their \
         series labelled <code>shmetrics_overflow=\"true\"</code>.</p>\n<table id=\"overflows\">\n\
         <tr><th>family</th><th>label sets sent there</th></tr>\n",
    );
    for (name, n) in &s.overflowing_families {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"n\">{n}</td></tr>",
            escape(name)
        );
    }
    out.push_str("</table>\n");
}

fn push(out: &mut String, s: &Status) {
    if s.push.is_empty() {
        return;
    }
    out.push_str("<h2>Pushing</h2>\n<table id=\"push\">\n");
    for (what, line) in &s.push {
        row(out, what, &escape(line));
    }
    out.push_str("</table>\n");
}

fn scrapes(out: &mut String, s: &Status) {
    let _ = writeln!(
        out,
        "<h2>Recent scrapes</h2>\n<p>Scrapes answered: {}; renders: {} (concurrent scrapes share one).</p>",
        s.scrapes_total, s.renders
    );
    if s.scrapes.is_empty() {
        return;
    }
    out.push_str(
        "<table id=\"scrapes\">\n<tr><th>at</th><th>format</th><th>bytes sent</th><th>render</th></tr>\n",
    );
    for r in &s.scrapes {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{:?}{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1} ms</td></tr>",
            http_date(r.at),
            r.format,
            if r.gzip { ", gzip" } else { "" },
            r.bytes,
            r.render.as_secs_f64() * 1e3
        );
    }
    out.push_str("</table>\n");
}

fn row(out: &mut String, name: &str, value_html: &str) {
    let _ = writeln!(
        out,
        "<tr><th>{}</th><td>{value_html}</td></tr>",
        escape(name)
    );
}

/// A row with `used of capacity`, its share, and a bar that turns amber
/// from 80 % and red from 90 % (the alert rule's threshold).
fn fill_row(out: &mut String, name: &str, used: u64, capacity: u64) {
    let pct = if capacity == 0 {
        0.0
    } else {
        100.0 * used as f64 / capacity as f64
    };
    let class = match pct {
        p if p >= 90.0 => "bar full",
        p if p >= 80.0 => "bar warn",
        _ => "bar",
    };
    row(
        out,
        name,
        &format!(
            "{used} of {capacity} ({pct:.1}%) <span class=\"{class}\"><span style=\"width:{:.1}%\"></span></span>",
            pct.min(100.0)
        ),
    );
}

/// `n` bytes in binary units.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

fn http_date(t: SystemTime) -> String {
    httpdate::fmt_http_date(t)
}

/// `s` with HTML's special characters escaped (text and attribute values).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::status::Status;

    #[test]
    fn escapes_and_links() {
        let s = Status::not_attached(Path::new("/tmp/<a>"), "no such file".into());
        let p = super::page("/x&y", &s);
        assert!(p.contains("<a href=\"/x&amp;y\">Metrics</a>"), "{p}");
        assert!(p.contains("/tmp/&lt;a&gt;"), "{p}");
        assert!(p.contains("<a href=\"/-/ready\">"), "{p}");
        assert!(!p.contains("<script"), "{p}");
    }

    #[test]
    fn bytes_in_binary_units() {
        assert_eq!(super::bytes(512), "512 B");
        assert_eq!(super::bytes(64 << 20), "64.0 MiB");
        assert_eq!(super::bytes(3 << 29), "1.5 GiB");
    }
}
