//! What the status page at `/` shows: the store's fill, its largest
//! families and the labels that make them large, the writer slots, the
//! overflow series, pushing and the recent scrapes. Gathered from the
//! snapshot `/metrics` renders from (read again if it is older than the
//! request), so the page and a scrape agree; `landing` writes it as HTML.

use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use shmetrics_core::{FamilyCardinality, Snapshot, StoreStats};
use shmetrics_expo::Format;

/// Families listed on the page.
pub(crate) const TOP_FAMILIES: usize = 20;

/// Scrapes kept for the page.
const RECENT_SCRAPES: usize = 10;

/// One answered scrape of the telemetry path.
#[derive(Clone, Debug)]
pub(crate) struct ScrapeRecord {
    pub at: SystemTime,
    pub format: Format,
    pub gzip: bool,
    /// The body's size as sent.
    pub bytes: usize,
    /// The render's duration (shared with the scrapes that reused it).
    pub render: Duration,
}

/// The last [`RECENT_SCRAPES`] scrapes, newest first.
#[derive(Debug, Default)]
pub struct RecentScrapes(Mutex<VecDeque<ScrapeRecord>>);

impl RecentScrapes {
    pub(crate) fn record(&self, r: ScrapeRecord) {
        let mut q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if q.len() == RECENT_SCRAPES {
            q.pop_back();
        }
        q.push_front(r);
    }

    pub(crate) fn list(&self) -> Vec<ScrapeRecord> {
        let q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        q.iter().cloned().collect()
    }
}

/// The page's content.
#[derive(Clone, Debug)]
pub(crate) struct Status {
    pub store_path: String,
    /// Why no store is served, if none is.
    pub not_attached: Option<String>,
    /// Why the file served is no longer the one at the path, if so.
    pub stale: Option<String>,
    /// Which file is served (device, inode, owner).
    pub served: String,
    /// When the snapshot was read, and what it found.
    pub read_at: Option<SystemTime>,
    pub stats: StoreStats,
    pub series_exported: usize,
    pub fill: Fill,
    pub top: Vec<FamilyCardinality>,
    /// Families whose overflow series is in use, of all families.
    pub overflowing_families: Vec<(String, u64)>,
    /// One line per push target (remote write, StatsD, OTLP).
    pub push: Vec<(&'static str, String)>,
    pub scrapes: Vec<ScrapeRecord>,
    pub renders: u64,
    pub scrapes_total: u64,
}

/// Memory of the store file now and projected.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Fill {
    /// Bytes the file takes in memory now (its allocated blocks: a store
    /// file is sparse).
    pub resident: u64,
    /// The file's size: what it takes once every page has been written.
    pub file_size: u64,
    /// What it would take with every series slot in use, at today's
    /// bytes per allocated series (`None` before the first series).
    pub projected_full: Option<u64>,
}

impl Fill {
    /// The fill of the store at `path` with these counts.
    pub(crate) fn of(path: &Path, stats: &StoreStats) -> Fill {
        // A file's blocks are counted in 512-byte units whatever the file
        // system's block size.
        let resident = std::fs::metadata(path).map_or(0, |m| m.blocks() * 512);
        Fill::project(resident, stats)
    }

    pub(crate) fn project(resident: u64, stats: &StoreStats) -> Fill {
        let projected_full = (stats.series_allocated > 0).then(|| {
            let per_series = resident as f64 / stats.series_allocated as f64;
            ((per_series * stats.series_capacity as f64) as u64).min(stats.file_size.max(resident))
        });
        Fill {
            resident,
            file_size: stats.file_size,
            projected_full,
        }
    }
}

impl Status {
    /// The page for a store that cannot be opened.
    pub(crate) fn not_attached(store_path: &Path, why: String) -> Status {
        Status {
            store_path: store_path.display().to_string(),
            not_attached: Some(why),
            stale: None,
            served: String::new(),
            read_at: None,
            stats: StoreStats::default(),
            series_exported: 0,
            fill: Fill::default(),
            top: Vec::new(),
            overflowing_families: Vec::new(),
            push: Vec::new(),
            scrapes: Vec::new(),
            renders: 0,
            scrapes_total: 0,
        }
    }

    /// The page's figures from a snapshot of the store at `store_path`.
    pub(crate) fn from_snapshot(store_path: &Path, snap: &Snapshot) -> Status {
        let stats = snap.stats().clone();
        let overflowing_families = snap
            .families()
            .filter(|f| f.series().any(|s| s.is_overflow()))
            .map(|f| (f.name().to_owned(), f.overflows()))
            .collect();
        Status {
            fill: Fill::of(store_path, &stats),
            top: snap.top_families(TOP_FAMILIES),
            series_exported: snap.series_count(),
            overflowing_families,
            stats,
            ..Status::not_attached(store_path, String::new())
        }
        .attached()
    }

    fn attached(mut self) -> Status {
        self.not_attached = None;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_the_bytes_per_series_onto_the_capacity() {
        // StoreStats is non-exhaustive: built by assignment.
        let mut stats = StoreStats::default();
        stats.series_allocated = 100;
        stats.series_capacity = 1000;
        stats.file_size = 1 << 30;
        let f = Fill::project(400_000, &stats);
        assert_eq!(f.projected_full, Some(4_000_000));
        // Never more than the whole file.
        let mut small = stats.clone();
        small.file_size = 1_000_000;
        assert_eq!(
            Fill::project(400_000, &small).projected_full,
            Some(1_000_000)
        );
        let empty = StoreStats::default();
        assert_eq!(Fill::project(4096, &empty).projected_full, None);
    }

    #[test]
    fn keeps_the_last_scrapes_newest_first() {
        let r = RecentScrapes::default();
        for bytes in 0..15 {
            r.record(ScrapeRecord {
                at: SystemTime::now(),
                format: Format::PrometheusText,
                gzip: false,
                bytes,
                render: Duration::ZERO,
            });
        }
        let list = r.list();
        assert_eq!(list.len(), RECENT_SCRAPES);
        assert_eq!(list[0].bytes, 14);
        assert_eq!(list[9].bytes, 5);
    }
}
