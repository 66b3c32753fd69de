//! The landing page at `/`, as exporter-toolkit's: the exporter's name
//! and version, links to the telemetry path and the health endpoints,
//! and the store's status (the plain-text status page, escaped).

use std::fmt::Write as _;

/// The HTML page for a telemetry path and a status text.
pub(crate) fn page(telemetry_path: &str, status: &str) -> String {
    let b = &crate::BUILD_INFO;
    let mut out = String::with_capacity(status.len() + 1024);
    out.push_str(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>shmetrics exporter</title>\n\
         <style>body{font-family:sans-serif;margin:1em 2em}pre{background:#f4f4f4;padding:1em}</style>\n\
         </head>\n<body>\n<h1>shmetrics exporter</h1>\n",
    );
    let _ = writeln!(
        out,
        "<p>Metrics for multi-process servers, in shared memory. Version {} (revision {}, rustc {}).</p>",
        escape(b.version),
        escape(b.revision),
        escape(b.rustc)
    );
    out.push_str("<ul>\n");
    let path = escape(telemetry_path);
    let _ = writeln!(out, "<li><a href=\"{path}\">Metrics</a> ({path})</li>");
    for (href, what) in [
        ("/-/healthy", "the process answers"),
        ("/-/ready", "a store is attached"),
        ("/healthz", "the store is attached and not stale"),
    ] {
        let _ = writeln!(out, "<li><a href=\"{href}\">{href}</a>: {what}</li>");
    }
    out.push_str("</ul>\n<h2>Status</h2>\n<pre>");
    out.push_str(&escape(status));
    out.push_str("</pre>\n</body>\n</html>\n");
    out
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
    #[test]
    fn escapes_and_links() {
        let p = super::page("/x&y", "store /tmp/<a>\n");
        assert!(p.contains("<a href=\"/x&amp;y\">Metrics</a>"), "{p}");
        assert!(p.contains("store /tmp/&lt;a&gt;"), "{p}");
        assert!(p.contains("<a href=\"/-/ready\">"), "{p}");
    }
}
