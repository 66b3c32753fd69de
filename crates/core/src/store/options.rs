//! How a store is opened, and the capacities it is created with.

use crate::error::{Error, ErrorKind, Result};
use crate::shm::layout::{self, Capacities};

/// The default directory for store files.
pub const DEFAULT_DIR: &str = "/dev/shm";

/// How to open a store. Capacities apply only when the file is created; an
/// existing store keeps the capacities its creator chose.
#[derive(Clone, Debug)]
pub struct Options {
    /// Create the file if it does not exist (default `true`).
    pub create: bool,
    /// Map the file read-only; every write is then a [`ErrorKind::ReadOnly`]
    /// error. An exporter needs only this.
    pub read_only: bool,
    /// The file mode on creation: `0o600` (default) or `0o660`.
    pub mode: u32,
    /// Most families.
    pub max_families: u32,
    /// Most series, over all families (each family's overflow series
    /// included).
    pub max_series: u32,
    /// Bytes for names, help texts, label names and label values.
    pub label_bytes: u64,
    /// Most processes writing at once. More processes still work: they
    /// share one extra slot, and gauges lose their per-process meaning.
    pub max_writers: u32,
    /// 8-byte value cells per writer; `0` picks 16 per series.
    pub cells_per_writer: u64,
    /// 8-byte sketch cells per writer, for summary quantiles and native
    /// histogram buckets. A summary series with quantiles takes
    /// `age_buckets` × 4,229 of them (about 165 KiB a writer with the
    /// default 5 age buckets); a native histogram series `2 × 128 ×
    /// 2^schema` (2,048 at the default schema 3: 16 KiB a writer). A
    /// family's overflow series takes its cells only when first used.
    /// The file is sparse: this capacity costs address space; memory is
    /// taken page by page (4 KiB, 512 cells) as updates first write
    /// them, reserved on the file system then, so that a full file
    /// system refuses the update ([`ErrorKind::StoreFull`]) instead of
    /// faulting a writer. A summary set whose observations span a few
    /// decades takes one or two pages. `0` picks 16,777,216 (128 MiB of address space a
    /// writer: 793 such summary series, or 8,192 native ones at schema
    /// 3). Exemplars take 68 cells (544 bytes) per place: per counter
    /// series, and per classic bucket of a histogram series, of a family
    /// that keeps them.
    pub sketch_cells_per_writer: u64,
    /// A user, besides this process's user and root, that may own an
    /// existing store (a user id; see [`crate::user_id`] for names).
    /// Another owner is refused ([`ErrorKind::Untrusted`]).
    pub owner: Option<u32>,
    /// A group that may write an existing store (a group id; see
    /// [`crate::group_id`]): a writer refuses a group-writable store
    /// unless its group is this one, or is this process's own group and
    /// `mode` is `0o660`. A reader (`read_only`) accepts a store of any
    /// owner whose group is this one.
    pub group: Option<u32>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            create: true,
            read_only: false,
            mode: 0o600,
            max_families: 4096,
            max_series: 65_536,
            label_bytes: 16 << 20,
            max_writers: 128,
            cells_per_writer: 0,
            sketch_cells_per_writer: 0,
            owner: None,
            group: None,
        }
    }
}

impl Options {
    /// Options to open an existing store read-only, as an exporter does.
    pub fn reader() -> Options {
        Options {
            create: false,
            read_only: true,
            ..Options::default()
        }
    }

    pub(super) fn capacities(&self) -> Result<Capacities> {
        let opt = |msg: String| Error::new(ErrorKind::InvalidOptions, msg);
        let check = |what: &str, v: u64, max: u64| {
            if v == 0 || v > max {
                Err(opt(format!("{what} must be between 1 and {max}, got {v}")))
            } else {
                Ok(())
            }
        };
        check(
            "max_families",
            self.max_families as u64,
            layout::MAX_FAMILIES as u64,
        )?;
        check(
            "max_series",
            self.max_series as u64,
            layout::MAX_SERIES as u64,
        )?;
        check("label_bytes", self.label_bytes, layout::MAX_ARENA)?;
        check(
            "max_writers",
            self.max_writers as u64,
            layout::MAX_SLOTS as u64,
        )?;
        let cells = if self.cells_per_writer == 0 {
            (self.max_series as u64 * 16).min(layout::MAX_CELLS)
        } else {
            self.cells_per_writer
        };
        check("cells_per_writer", cells, layout::MAX_CELLS)?;
        let sketch_cells = match self.sketch_cells_per_writer {
            0 => DEFAULT_SKETCH_CELLS,
            n => n,
        };
        check("sketch_cells_per_writer", sketch_cells, layout::MAX_CELLS)?;
        if self.mode != 0o600 && self.mode != 0o660 {
            return Err(opt(format!(
                "mode must be 0o600 or 0o660, got {:#o}; stores are never world-accessible",
                self.mode
            )));
        }
        Ok(Capacities {
            max_families: self.max_families,
            max_slots: self.max_writers,
            max_series: self.max_series,
            arena_bytes: self.label_bytes,
            cells_per_slot: cells,
            sketch_cells_per_slot: sketch_cells,
        })
    }
}

/// Sketch cells per writer when the options leave it at 0.
const DEFAULT_SKETCH_CELLS: u64 = 1 << 24;
