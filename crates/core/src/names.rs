//! Metric and label names: what a store takes (any UTF-8 name, as
//! Prometheus 3 does), the legacy character set older scrapers need, and
//! the escaping schemes that map one onto the other.
//!
//! Prometheus 3 takes any non-empty UTF-8 string as a metric or label
//! name. A scraper that does not (Prometheus 2, or one that asks so) is
//! sent names *escaped* into the legacy set, `[a-zA-Z_:][a-zA-Z0-9_:]*`
//! for metric names and `[a-zA-Z_][a-zA-Z0-9_]*` for label names, by the
//! scheme it names in the `escaping` parameter of its `Accept` header
//! (see <https://prometheus.io/docs/instrumenting/escaping_schemes/>):
//!
//! | scheme | `my.metric_total` | `花火` |
//! |---|---|---|
//! | `allow-utf-8` | unchanged (quoted by the text formats) | unchanged |
//! | `underscores` (the default) | `my_metric_total` | `__` |
//! | `dots` | `my_dot_metric__total` | `____` |
//! | `values` | `U__my_2e_metric__total` | `U___82b1__706b_` |
//!
//! [`escape_metric_name`] and [`escape_label_name`] apply a scheme to one
//! name as client_golang's `EscapeName` and prometheus_client's
//! `escape_metric_name` do: `underscores` and `values` leave a legacy
//! name as it is, `dots` doubles its underscores anyway. The exporter
//! escapes only names outside the legacy set (as client_golang's
//! `EscapeMetricFamily` does), so the names of a legacy store never
//! change, whatever a scraper asks.
//!
//! A store refuses two families whose names a scraper could not tell
//! apart under the default `underscores` scheme (`a.b` and `a_b`), and two
//! label names of one family alike so (see [`underscored`]).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::error::{Error, ErrorKind, Result};

/// How names outside the legacy character set are written for a scraper
/// (the `escaping` parameter of Prometheus's `Accept` and `Content-Type`
/// headers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Escaping {
    /// `allow-utf-8`: names are written as they are; the text formats
    /// quote the ones outside the legacy set (`{"my.metric",
    /// "label.name"="v"}`). Only for scrapers that ask for it.
    AllowUtf8,
    /// `underscores`: each character outside the legacy set becomes `_`
    /// (and so does a leading digit). What a scraper that names no scheme
    /// gets.
    #[default]
    Underscores,
    /// `dots`: `.` becomes `_dot_`, `_` becomes `__`, any other character
    /// outside the legacy set `__`.
    Dots,
    /// `values`: `U__`, then `_` as `__`, legacy characters as they are,
    /// and any other character as `_<hex code point>_`.
    Values,
}

impl Escaping {
    /// Every scheme, in a fixed order.
    pub const ALL: [Escaping; 4] = [
        Escaping::AllowUtf8,
        Escaping::Underscores,
        Escaping::Dots,
        Escaping::Values,
    ];

    /// The scheme a header parameter names (`allow-utf-8`, `underscores`,
    /// `dots`, `values`; exact, as Prometheus writes them), if any.
    pub fn parse(s: &str) -> Option<Escaping> {
        Escaping::ALL.into_iter().find(|e| e.as_str() == s)
    }

    /// The scheme's name in headers.
    pub fn as_str(self) -> &'static str {
        match self {
            Escaping::AllowUtf8 => "allow-utf-8",
            Escaping::Underscores => "underscores",
            Escaping::Dots => "dots",
            Escaping::Values => "values",
        }
    }
}

/// Whether a character may stand at position `i` of a legacy name
/// (`colon`: of a metric name, which may hold `:`).
#[inline]
fn legacy_char(c: char, i: usize, colon: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || (colon && c == ':') || (i > 0 && c.is_ascii_digit())
}

#[inline]
fn is_legacy(name: &str, colon: bool) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .enumerate()
            .all(|(i, b)| legacy_char(char::from(b), i, colon))
}

/// Whether `name` matches the legacy metric name set
/// `[a-zA-Z_:][a-zA-Z0-9_:]*`, which every scraper takes as it is.
#[inline]
pub fn is_legacy_metric_name(name: &str) -> bool {
    is_legacy(name, true)
}

/// Whether `name` matches the legacy label name set
/// `[a-zA-Z_][a-zA-Z0-9_]*` (no `:`).
#[inline]
pub fn is_legacy_label_name(name: &str) -> bool {
    is_legacy(name, false)
}

/// Appends `name` escaped by `escaping` to `out` (see the module docs;
/// `colon`: a metric name, whose legacy set holds `:`). A legacy name is
/// appended as it is, but by `dots`, which doubles its underscores.
pub fn escape_name_into(out: &mut String, name: &str, escaping: Escaping, colon: bool) {
    let keep = match escaping {
        _ if name.is_empty() => return,
        Escaping::AllowUtf8 => true,
        Escaping::Underscores | Escaping::Values => is_legacy(name, colon),
        Escaping::Dots => false,
    };
    if keep {
        out.push_str(name);
    } else {
        rewrite_name_into(out, name, escaping, colon);
    }
}

/// Appends `name` with `escaping`'s character rewriting applied whether
/// or not the name is legacy (prometheus_client's `_escape`, which its
/// OpenMetrics writer applies to every sample name: `values` writes
/// `jobs_total` as `U__jobs__total`); `allow-utf-8` appends it as it is.
/// `colon`: `:` is kept (the metric name set).
pub fn rewrite_name_into(out: &mut String, name: &str, escaping: Escaping, colon: bool) {
    match escaping {
        Escaping::AllowUtf8 => out.push_str(name),
        Escaping::Underscores => {
            for (i, c) in name.chars().enumerate() {
                out.push(if legacy_char(c, i, colon) { c } else { '_' });
            }
        }
        Escaping::Dots => {
            for (i, c) in name.chars().enumerate() {
                match c {
                    '_' => out.push_str("__"),
                    '.' => out.push_str("_dot_"),
                    c if legacy_char(c, i, colon) => out.push(c),
                    _ => out.push_str("__"),
                }
            }
        }
        Escaping::Values => {
            out.push_str("U__");
            for (i, c) in name.chars().enumerate() {
                match c {
                    '_' => out.push_str("__"),
                    c if legacy_char(c, i, colon) => out.push(c),
                    // UNWRAP: writing to a String cannot fail.
                    c => write!(out, "_{:x}_", u32::from(c)).unwrap(),
                }
            }
        }
    }
}

fn escape(name: &str, escaping: Escaping, colon: bool) -> Cow<'_, str> {
    let legacy = is_legacy(name, colon);
    if name.is_empty() || escaping == Escaping::AllowUtf8 || (legacy && escaping != Escaping::Dots)
    {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    escape_name_into(&mut out, name, escaping, colon);
    Cow::Owned(out)
}

/// A metric name escaped by `escaping` (see the module docs).
///
/// ```
/// use shmetrics_core::{escape_metric_name, Escaping};
/// assert_eq!(escape_metric_name("http.status:sum", Escaping::Underscores), "http_status:sum");
/// assert_eq!(escape_metric_name("http.status:sum", Escaping::Dots), "http_dot_status:sum");
/// assert_eq!(escape_metric_name("http.status:sum", Escaping::Values), "U__http_2e_status:sum");
/// assert_eq!(escape_metric_name("no:escaping_required", Escaping::Dots), "no:escaping__required");
/// ```
pub fn escape_metric_name(name: &str, escaping: Escaping) -> Cow<'_, str> {
    escape(name, escaping, true)
}

/// A label name escaped by `escaping` (see the module docs); `:` is
/// outside the legacy label name set.
///
/// ```
/// use shmetrics_core::{escape_label_name, Escaping};
/// assert_eq!(escape_label_name("http.status:sum", Escaping::Underscores), "http_status_sum");
/// assert_eq!(escape_label_name("http.status:sum", Escaping::Values), "U__http_2e_status_3a_sum");
/// ```
pub fn escape_label_name(name: &str, escaping: Escaping) -> Cow<'_, str> {
    escape(name, escaping, false)
}

/// A name as a scraper that does not take UTF-8 sees it by default: the
/// `underscores` escaping of a name outside the legacy set (`colon`: a
/// metric name). Two names with the same one cannot be told apart there,
/// so a store refuses the second.
pub(crate) fn underscored(name: &str, colon: bool) -> Cow<'_, str> {
    escape(name, Escaping::Underscores, colon)
}

fn invalid(msg: String) -> Error {
    Error::new(ErrorKind::InvalidName, msg)
}

/// What every name must be: not empty, no NUL (C callers cannot pass one,
/// so no binding could name such a family).
fn check_any_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(invalid(format!("a {what} must not be empty")));
    }
    if name.contains('\0') {
        return Err(invalid(format!("{what} {name:?} must not contain NUL")));
    }
    Ok(())
}

/// Checks a metric name: any UTF-8 string that is not empty and holds no
/// NUL, as Prometheus 3 takes (`http_requests`, `http.server.requests`,
/// `花火`). Names outside the legacy set `[a-zA-Z_:][a-zA-Z0-9_:]*` are
/// escaped for scrapers that do not take UTF-8 (see [`Escaping`]).
pub fn check_metric_name(name: &str) -> Result<()> {
    check_any_name("metric name", name)
}

/// Checks a label name: any UTF-8 string that is not empty, holds no NUL
/// and does not start with `__` (reserved by Prometheus for internal
/// use). Names outside the legacy set `[a-zA-Z_][a-zA-Z0-9_]*` are
/// escaped for scrapers that do not take UTF-8 (see [`Escaping`]).
pub fn check_label_name(name: &str) -> Result<()> {
    check_any_name("label name", name)?;
    if name.starts_with("__") {
        return Err(invalid(format!(
            "label name {name:?} starts with \"__\", which Prometheus reserves for internal use"
        )));
    }
    Ok(())
}

/// Which names a registration takes: Prometheus 3's (any UTF-8 name, the
/// default) or only the legacy character sets, for bindings whose peer
/// library refuses other names (PromPHP, nginx-lua-prometheus, Ruby's
/// prometheus-client, prometheus_client under legacy validation). Set per
/// family with [`FamilyDesc::name_rules`](crate::FamilyDesc::name_rules);
/// a check at registration, not part of the family's definition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NameRules {
    /// Any name [`check_metric_name`] and [`check_label_name`] take.
    #[default]
    Utf8,
    /// Those, and only within `[a-zA-Z_:][a-zA-Z0-9_:]*` (metric names)
    /// and `[a-zA-Z_][a-zA-Z0-9_]*` (label names).
    Legacy,
}

impl NameRules {
    /// Checks a metric name under these rules.
    ///
    /// ```
    /// use shmetrics_core::NameRules;
    /// assert!(NameRules::Utf8.check_metric_name("http.requests").is_ok());
    /// assert!(NameRules::Legacy.check_metric_name("http.requests").is_err());
    /// assert!(NameRules::Legacy.check_metric_name("http:requests").is_ok());
    /// ```
    pub fn check_metric_name(self, name: &str) -> Result<()> {
        check_metric_name(name)?;
        if self == NameRules::Legacy && !is_legacy_metric_name(name) {
            return Err(invalid(format!(
                "invalid metric name {name:?}: it must match [a-zA-Z_:][a-zA-Z0-9_:]*"
            )));
        }
        Ok(())
    }

    /// Checks a label name (of a series or an exemplar) under these rules.
    ///
    /// ```
    /// use shmetrics_core::NameRules;
    /// assert!(NameRules::Utf8.check_label_name("trace-id").is_ok());
    /// assert!(NameRules::Legacy.check_label_name("trace-id").is_err());
    /// assert!(NameRules::Legacy.check_label_name("__x").is_err());
    /// ```
    pub fn check_label_name(self, name: &str) -> Result<()> {
        check_label_name(name)?;
        if self == NameRules::Legacy && !is_legacy_label_name(name) {
            return Err(invalid(format!(
                "invalid label name {name:?}: it must match [a-zA-Z_][a-zA-Z0-9_]*"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// prometheus_client 0.26's and client_golang's cases.
    #[test]
    fn metric_name_schemes() {
        let cases = [
            ("", "", "", ""),
            (
                "no:escaping_required",
                "no:escaping_required",
                "no:escaping__required",
                "no:escaping_required",
            ),
            (
                "mysystem.prod.west.cpu.load_total",
                "mysystem_prod_west_cpu_load_total",
                "mysystem_dot_prod_dot_west_dot_cpu_dot_load__total",
                "U__mysystem_2e_prod_2e_west_2e_cpu_2e_load__total",
            ),
            (
                "http.status:sum",
                "http_status:sum",
                "http_dot_status:sum",
                "U__http_2e_status:sum",
            ),
            (
                "label with 😱",
                "label_with__",
                "label__with____",
                "U__label_20_with_20__1f631_",
            ),
            ("花火", "__", "____", "U___82b1__706b_"),
            (
                "label with \u{100}",
                "label_with__",
                "label__with____",
                "U__label_20_with_20__100_",
            ),
            ("1a", "_a", "__a", "U___31_a"),
        ];
        for (name, u, d, v) in cases {
            assert_eq!(escape_metric_name(name, Escaping::Underscores), u, "{name}");
            assert_eq!(escape_metric_name(name, Escaping::Dots), d, "{name}");
            assert_eq!(escape_metric_name(name, Escaping::Values), v, "{name}");
            assert_eq!(escape_metric_name(name, Escaping::AllowUtf8), name);
        }
    }

    #[test]
    fn label_name_schemes() {
        assert_eq!(
            escape_label_name("http.status:sum", Escaping::Underscores),
            "http_status_sum"
        );
        assert_eq!(
            escape_label_name("http.status:sum", Escaping::Dots),
            "http_dot_status__sum"
        );
        assert_eq!(
            escape_label_name("http.status:sum", Escaping::Values),
            "U__http_2e_status_3a_sum"
        );
        assert_eq!(
            escape_label_name("no_escaping_required", Escaping::Dots),
            "no__escaping__required"
        );
        assert_eq!(escape_label_name("a", Escaping::Values), "a");
    }

    #[test]
    fn legacy_sets() {
        for ok in ["a", "_a", "a:b", "A9_:"] {
            assert!(is_legacy_metric_name(ok), "{ok}");
        }
        for no in ["", "9a", "a-b", "a b", "é", "a.b"] {
            assert!(!is_legacy_metric_name(no), "{no}");
        }
        assert!(is_legacy_label_name("a_9"));
        assert!(!is_legacy_label_name("a:b"));
    }

    #[test]
    fn escaped_names_are_legacy() {
        for name in ["a.b", "9x", "花火", "x y\"z\\", ":o)"] {
            for e in [Escaping::Underscores, Escaping::Dots, Escaping::Values] {
                assert!(
                    is_legacy_metric_name(&escape_metric_name(name, e)),
                    "{name} {e:?}"
                );
                assert!(
                    is_legacy_label_name(&escape_label_name(name, e)),
                    "{name} {e:?}"
                );
            }
        }
    }

    #[test]
    fn schemes_round_trip() {
        for e in Escaping::ALL {
            assert_eq!(Escaping::parse(e.as_str()), Some(e));
        }
        assert_eq!(Escaping::parse("UNDERSCORES"), None);
        assert_eq!(Escaping::default(), Escaping::Underscores);
    }

    #[test]
    fn checks() {
        for ok in ["a", "a.b", "花火", "a b", "{\"}", "9"] {
            assert!(check_metric_name(ok).is_ok(), "{ok}");
            assert!(check_label_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a\0b"] {
            assert_eq!(
                check_metric_name(bad).unwrap_err().kind(),
                ErrorKind::InvalidName
            );
            assert_eq!(
                check_label_name(bad).unwrap_err().kind(),
                ErrorKind::InvalidName
            );
        }
        assert!(check_metric_name("__a").is_ok());
        assert_eq!(
            check_label_name("__a").unwrap_err().kind(),
            ErrorKind::InvalidName
        );
        assert_eq!(
            check_label_name("__").unwrap_err().kind(),
            ErrorKind::InvalidName
        );
    }
}
