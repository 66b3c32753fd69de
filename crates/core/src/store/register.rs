//! Registering families: finding one by name (through this process's
//! index of the records), checking a definition against the one already
//! registered, and inserting a new record.

use std::collections::HashMap;
use std::sync::atomic::Ordering::*;
use std::sync::TryLockError;

use super::arena::{set_ref, ArenaAlloc};
use super::labels::{decode_strs, encode_strs};
use super::shape::cells_for;
use super::space::{NoSpace, Reach};
use super::{Family, FamilyType, Shape, Store};
use crate::error::{Error, ErrorKind, Result};
use crate::exemplar;
use crate::family::FamilyDesc;
use crate::handle::exemplar_places;
use crate::model::{GaugeMode, Kind};
use crate::native::{self, Native};
use crate::proc;
use crate::shm::{self, layout::state, layout::FamilyRec};
use crate::window;

/// Family record positions by name, as read from the records by this
/// process. Records are only ever appended between wipes and a live
/// record's name never changes, so the index reads each record once: it
/// catches up on the records appended since, and starts over after a wipe.
#[derive(Debug, Default)]
pub(super) struct FamilyIndex {
    epoch: u32,
    /// Records before this one are indexed. It stops at a record still
    /// being inserted, so that record is read again once it is done.
    read_up_to: usize,
    by_name: HashMap<Box<[u8]>, u32>,
    /// Families named outside the legacy set, by their name as scrapers
    /// without UTF-8 see it (`a.b` under `a_b`; see
    /// [`crate::names::underscored`]). A legacy name is its own.
    by_underscored: HashMap<Box<str>, Vec<u32>>,
}

impl FamilyIndex {
    /// The position of the live family that `is_it` recognises by its
    /// name, if there is one. Every answer is checked against the record.
    pub(super) fn find(
        &mut self,
        store: &Store,
        families: &[FamilyRec],
        epoch: u32,
        name: &str,
        is_it: impl Fn(&FamilyRec) -> bool,
    ) -> Option<usize> {
        let check = |i: u32| Some(i as usize).filter(|&i| families.get(i).is_some_and(&is_it));
        if self.epoch == epoch {
            if let Some(i) = self.by_name.get(name.as_bytes()).and_then(|&i| check(i)) {
                return Some(i);
            }
        }
        self.catch_up(store, families, epoch);
        match self.by_name.get(name.as_bytes()).and_then(|&i| check(i)) {
            Some(i) => Some(i),
            // Not indexed, or indexed under a stale position (a record
            // still being inserted when last read): the full scan decides.
            None if self.read_up_to < families.len() => families.iter().position(is_it),
            None => None,
        }
    }

    /// The positions of the live families named outside the legacy set
    /// whose underscored name is `u` (legacy-named ones are found by
    /// name). Under the store lock.
    pub(super) fn find_underscored(
        &mut self,
        store: &Store,
        families: &[FamilyRec],
        epoch: u32,
        u: &str,
    ) -> Vec<usize> {
        self.catch_up(store, families, epoch);
        let is_it = |f: &FamilyRec| {
            f.state.load(Acquire) == state::LIVE
                && store
                    .arena_str(&f.name)
                    .and_then(underscored_of)
                    .is_some_and(|x| x == u)
        };
        let mut found: Vec<usize> = self
            .by_underscored
            .get(u)
            .into_iter()
            .flatten()
            .map(|&i| i as usize)
            .filter(|&i| families.get(i).is_some_and(is_it))
            .collect();
        // Records left unread (one still being inserted when last read).
        for (i, f) in families.iter().enumerate().skip(self.read_up_to) {
            if is_it(f) && !found.contains(&i) {
                found.push(i);
            }
        }
        found
    }

    /// Reads the records appended since the last call (all of them after
    /// a wipe).
    fn catch_up(&mut self, store: &Store, families: &[FamilyRec], epoch: u32) {
        if self.epoch != epoch {
            *self = FamilyIndex {
                epoch,
                ..FamilyIndex::default()
            };
        }
        while let Some(f) = families.get(self.read_up_to) {
            match f.state.load(Acquire) {
                state::INIT => break,
                state::LIVE => {
                    if let Some(n) = store.arena_str(&f.name) {
                        self.by_name.insert(n.into(), self.read_up_to as u32);
                        if let Some(u) = underscored_of(n) {
                            self.by_underscored
                                .entry(u.into())
                                .or_default()
                                .push(self.read_up_to as u32);
                        }
                    }
                }
                _ => {}
            }
            self.read_up_to += 1;
        }
    }
}

/// The underscored form of a stored name outside the legacy set; `None`
/// for a legacy name (its own) or bytes that are not UTF-8.
fn underscored_of(name: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(name).ok()?;
    match crate::names::underscored(name, true) {
        std::borrow::Cow::Owned(u) => Some(u),
        std::borrow::Cow::Borrowed(_) => None,
    }
}

/// Hash of a family's defining parts (not its help text: a changed help
/// text during a rolling deploy is no conflict; the first one stays).
pub(super) fn def_hash(d: &FamilyDesc) -> u64 {
    let mut b = Vec::new();
    b.extend_from_slice(&(d.kind as u32).to_le_bytes());
    b.extend_from_slice(&(d.gauge_mode as u32).to_le_bytes());
    encode_strs(&mut b, &d.label_names);
    encode_strs(&mut b, &[&d.unit]);
    for x in d.buckets.iter().chain(&d.summary.quantiles) {
        b.extend_from_slice(&x.to_bits().to_le_bytes());
    }
    b.extend_from_slice(&(d.summary.max_age.as_millis() as u64).to_le_bytes());
    b.extend_from_slice(&d.summary.age_buckets.to_le_bytes());
    // Native options as they act: the schema, the effective zero
    // threshold and the bucket limit. (Absent for other families, whose
    // hashes are then what they were before native buckets existed.)
    if let Some(n) = native_of(d) {
        b.extend_from_slice(b"native");
        b.extend_from_slice(&n.schema.to_le_bytes());
        b.extend_from_slice(&n.zero_threshold.to_bits().to_le_bytes());
        b.extend_from_slice(&n.max_buckets.to_le_bytes());
    }
    // Likewise absent without exemplars.
    if d.exemplars {
        b.extend_from_slice(b"exemplars");
    }
    if d.name_as_given {
        b.extend_from_slice(b"name_as_given");
    }
    if let Some(ttl) = d.ttl {
        b.extend_from_slice(b"ttl");
        b.extend_from_slice(&(ttl.as_millis() as u64).to_le_bytes());
    }
    xxhash_rust::xxh3::xxh3_64(&b)
}

/// The native parameters of a normalized definition.
fn native_of(d: &FamilyDesc) -> Option<Native> {
    let n = d.native.as_ref()?;
    Some(Native {
        // `normalized` checked the factor.
        schema: native::schema_for(n.bucket_factor).unwrap_or(native::MIN_SCHEMA),
        zero_threshold: n.zero_threshold.max(native::MIN_ZERO_THRESHOLD),
        max_buckets: n.max_buckets,
    })
}

impl Store {
    /// Registers a family, or returns the existing family of the same name
    /// if its definition is the same (from this or any other process).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidName`] or [`ErrorKind::InvalidOptions`] for a bad
    /// definition; [`ErrorKind::Conflict`] if the name is taken by a
    /// different definition, or if a name the family would expose (`x`,
    /// `x_total`, `x_bucket`, `x_count`, `x_sum`, `x_created`, as its type
    /// has them) is one another family exposes, of any type (a counter `x`
    /// and a gauge `x_total` would render two families named `x_total`);
    /// [`ErrorKind::StoreFull`] if there is no room.
    pub fn register(&self, desc: &FamilyDesc) -> Result<Family> {
        let d = desc.normalized()?;
        let hash = def_hash(&d);
        let epoch = self.epoch();
        if let Some(f) = self.find_family(&d, hash, epoch)? {
            return Ok(f);
        }
        self.check_writable()?;
        let _guard = self.lock()?;
        let epoch = self.epoch();
        if let Some(f) = self.find_family(&d, hash, epoch)? {
            return Ok(f);
        }
        self.check_exposed_names(&d, epoch)?;
        self.insert_family(&d, hash, epoch)
    }

    /// Looks a family up by name without the lock.
    fn find_family(&self, d: &FamilyDesc, hash: u64, epoch: u32) -> Result<Option<Family>> {
        let families = self.live_range_families();
        let Some(i) = self.family_position(&d.name, epoch) else {
            return Ok(None);
        };
        let f = &families[i];
        if f.def_hash.load(Relaxed) != hash {
            return Err(self.conflict(d, f));
        }
        Ok(Some(self.family_handle(i as u32, f, epoch)?))
    }

    /// The position of the live family named `name`, without the lock.
    pub(super) fn family_position(&self, name: &str, epoch: u32) -> Option<usize> {
        let families = self.live_range_families();
        let is_it = |f: &FamilyRec| {
            f.state.load(Acquire) == state::LIVE && self.arena_str(&f.name) == Some(name.as_bytes())
        };
        match self.family_index.get().try_lock() {
            Ok(mut index) => index.find(self, families, epoch, name, is_it),
            Err(TryLockError::Poisoned(p)) => {
                let mut index = p.into_inner();
                *index = FamilyIndex::default();
                index.find(self, families, epoch, name, is_it)
            }
            // Another thread of this process holds it (a child after a
            // fork has an index of its own: `per_fork.rs`): scan rather
            // than wait.
            Err(TryLockError::WouldBlock) => families.iter().position(is_it),
        }
    }

    fn conflict(&self, d: &FamilyDesc, f: &FamilyRec) -> Error {
        let kind = Kind::from_u32(f.kind.load(Relaxed))
            .map(Kind::as_str)
            .unwrap_or("unknown");
        let labels: Vec<String> = self
            .arena_str(&f.label_names)
            .map(|b| {
                decode_strs(b)
                    .map(|s| String::from_utf8_lossy(s.unwrap_or(b"?")).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        let mode = GaugeMode::from_u32(f.gauge_mode.load(Relaxed))
            .map(GaugeMode::as_str)
            .unwrap_or("?");
        Error::new(
            ErrorKind::Conflict,
            format!(
                "{:?} is already registered as a {kind} with labels {labels:?} (gauge mode {mode}), \
                 which differs from this {} with labels {:?} in its type, labels, buckets, native \
                 bucket options, exemplars, unit, mode or summary options",
                d.name,
                d.kind.as_str(),
                d.label_names
            ),
        )
        .with_path(self.path())
    }

    fn family_handle(&self, index: u32, f: &FamilyRec, epoch: u32) -> Result<Family> {
        let corrupt = || {
            Error::new(
                ErrorKind::Corrupt,
                format!("family record {index} is invalid"),
            )
            .with_path(self.path())
        };
        let FamilyType {
            kind,
            mode,
            n_bounds,
            bounds_off,
            shape,
            window,
            native,
            exemplars,
            ttl_ms,
        } = self.family_type(f).ok_or_else(corrupt)?;
        Ok(Family {
            tag: self.tag,
            epoch,
            index,
            kind,
            mode,
            n_labels: f.n_labels.load(Relaxed),
            shape,
            n_bounds: n_bounds as u32,
            bounds_off,
            overflow: f.overflow_series.load(Relaxed).wrapping_sub(1),
            window,
            native: native.map_or(0, |n| native::code(n.schema)),
            exemplars: exemplars > 0,
            ttl: ttl_ms > 0,
        })
    }

    fn insert_family(&self, d: &FamilyDesc, hash: u64, epoch: u32) -> Result<Family> {
        let h = self.map.header();
        let fixed = self.map.fixed();
        let full = |what: &str| self.full(d, what);
        let index = h.alloc.families_used.load(Relaxed);
        if index >= fixed.max_families {
            return Err(full("family capacity"));
        }
        let plan = FamilyPlan::of(self, d);
        // Reserve every byte and cell before writing anything.
        let mut arena = ArenaAlloc::new(self)?;
        let Some(bytes) = plan.reserve(&mut arena, d) else {
            return Err(match arena.no_space.take() {
                Some(e) => self.no_space(d, &e),
                None => full("label bytes"),
            });
        };
        let series_id = h.alloc.series_used.load(Relaxed);
        if series_id >= fixed.max_series {
            return Err(full("series capacity"));
        }
        let Some((int_off, float_off)) = self.cells_room(plan.shape) else {
            return Err(full("value cells"));
        };
        // The overflow series' sketch cells (a summary's quantile sets, a
        // native histogram's buckets, exemplar records) are taken when it
        // is first used (`series.rs`): most families never overflow, and
        // a summary's sketch is the largest thing a series takes.
        let sketch_off = if plan.sketch_cells == 0 {
            h.alloc.sketch_cells_used.load(Relaxed)
        } else {
            fixed.sketch_cells_per_slot
        };
        let reach = Reach {
            families: (u64::from(index) + 1) * 256,
            series: (u64::from(series_id) + 1) * 64,
            ints: (int_off + u64::from(plan.shape.ints)) * 8,
            floats: (fixed.cells_per_slot - float_off) * 8,
            ..Reach::default()
        };
        self.reserve_reach(reach)
            .map_err(|e| self.no_space(d, &e))?;

        let f = &self.map.families()[index as usize];
        f.state.store(state::INIT, Release);
        h.alloc.families_used.store(index + 1, Release);
        arena.commit();
        write_family(f, d, hash, &plan, &bytes);

        // The overflow series: allocated now so that it exists when the
        // store is full. It is not in the index, so no label set finds it.
        let s = &self.map.series()[series_id as usize];
        s.state.store(state::INIT, Release);
        s.family.store(index, Relaxed);
        s.hash.store(0, Relaxed);
        set_ref(&s.labels, bytes.overflow_labels, plan.overflow_labels.len());
        s.int_off.store(int_off, Relaxed);
        s.float_off.store(float_off, Relaxed);
        s.sketch_off.store(sketch_off, Relaxed);
        s.created_unix_ns.store(proc::unix_nanos(), Relaxed);
        self.take_cells(plan.shape, 0);
        h.alloc.series_used.store(series_id + 1, Release);
        f.overflow_series.store(series_id + 1, Release);
        s.state.store(state::LIVE, Release);
        f.state.store(state::LIVE, Release);
        self.family_handle(index, f, epoch)
    }

    /// The error for a family that found no room on the file system.
    fn no_space(&self, d: &FamilyDesc, e: &NoSpace) -> Error {
        Error::new(
            ErrorKind::StoreFull,
            format!("no room to register {:?}: {e}", d.name),
        )
        .with_path(self.path())
    }

    /// The error for a family that does not fit in the store's `what`.
    fn full(&self, d: &FamilyDesc, what: &str) -> Error {
        Error::new(
            ErrorKind::StoreFull,
            format!(
                "no room to register {:?}: the store's {what} is used up; create it with a \
                 larger capacity",
                d.name
            ),
        )
        .with_path(self.path())
    }
}

/// What a new family record takes, worked out from its definition before
/// anything is reserved.
struct FamilyPlan {
    native: Option<Native>,
    shape: Shape,
    sketch_cells: u64,
    /// The encoded label names.
    label_names: Vec<u8>,
    /// The overflow series' labels: as many empty values.
    overflow_labels: Vec<u8>,
}

/// Where a new family record's strings and numbers went in the arena.
struct FamilyBytes {
    name: u64,
    help: u64,
    unit: u64,
    label_names: u64,
    bounds: u64,
    quantiles: u64,
    overflow_labels: u64,
}

impl FamilyPlan {
    fn of(store: &Store, d: &FamilyDesc) -> FamilyPlan {
        let sets = if d.kind == Kind::Summary && !d.summary.quantiles.is_empty() {
            d.summary.age_buckets
        } else {
            0
        };
        let native = native_of(d);
        let places = exemplar_places(d.kind, d.buckets.len(), native.is_some(), d.exemplars);
        let sketch_cells = match native {
            Some(n) => n.cells() as u64,
            None => window::sketch_cells(sets as usize, store.sketch.cells()) as u64,
        } + (places * exemplar::RECORD) as u64;
        let shape = cells_for(
            d.kind,
            d.buckets.len(),
            sets,
            native.is_some(),
            places,
            d.ttl.is_some(),
        );
        let mut label_names = Vec::new();
        encode_strs(&mut label_names, &d.label_names);
        let empty: Vec<&str> = vec![""; d.label_names.len()];
        let mut overflow_labels = Vec::new();
        encode_strs(&mut overflow_labels, &empty);
        FamilyPlan {
            native,
            shape,
            sketch_cells,
            label_names,
            overflow_labels,
        }
    }

    /// Reserves the record's arena bytes; `None` if they do not fit.
    fn reserve(&self, arena: &mut ArenaAlloc<'_>, d: &FamilyDesc) -> Option<FamilyBytes> {
        Some(FamilyBytes {
            name: arena.push(d.name.as_bytes())?,
            help: arena.push(d.help.as_bytes())?,
            unit: arena.push(d.unit.as_bytes())?,
            label_names: arena.push(&self.label_names)?,
            bounds: arena.push_f64s(&d.buckets)?,
            quantiles: arena.push_f64s(&d.summary.quantiles)?,
            overflow_labels: arena.push(&self.overflow_labels)?,
        })
    }
}

/// Writes a new family record's fields (its state stays `INIT`).
fn write_family(f: &FamilyRec, d: &FamilyDesc, hash: u64, plan: &FamilyPlan, b: &FamilyBytes) {
    let native = plan.native;
    f.kind.store(d.kind as u32, Relaxed);
    f.gauge_mode.store(d.gauge_mode as u32, Relaxed);
    f.n_labels.store(d.label_names.len() as u32, Relaxed);
    set_ref(&f.name, b.name, d.name.len());
    set_ref(&f.help, b.help, d.help.len());
    set_ref(&f.unit, b.unit, d.unit.len());
    set_ref(&f.label_names, b.label_names, plan.label_names.len());
    set_ref(&f.buckets, b.bounds, d.buckets.len());
    set_ref(&f.quantiles, b.quantiles, d.summary.quantiles.len());
    f.int_cells.store(plan.shape.ints, Relaxed);
    f.float_cells.store(plan.shape.floats, Relaxed);
    f.exemplars.store(u32::from(d.exemplars), Relaxed);
    f.hints.store(
        (u32::from(d.name_as_given) * crate::family::hint_bits::NAME_AS_GIVEN) | d.hints.bits(),
        Relaxed,
    );
    f.max_series.store(d.max_series, Relaxed);
    f.series_count.store(0, Relaxed);
    f.overflows.store(0, Relaxed);
    f.def_hash.store(hash, Relaxed);
    f.summary_max_age_ms
        .store(d.summary.max_age.as_millis() as u64, Relaxed);
    f.summary_age_buckets.store(d.summary.age_buckets, Relaxed);
    f.sketch_cells.store(plan.sketch_cells as u32, Relaxed);
    f.native_schema
        .store(native.map_or(0, |n| native::code(n.schema)), Relaxed);
    f.native_max_buckets
        .store(native.map_or(0, |n| n.max_buckets), Relaxed);
    f.native_zero_threshold
        .store(native.map_or(0, |n| n.zero_threshold.to_bits()), Relaxed);
    f.native_bins
        .store(native.map_or(0, |n| n.bins() as u64), Relaxed);
    f.created_unix_ns.store(proc::unix_nanos(), Relaxed);
    f.ttl_ms
        .store(d.ttl.map_or(0, |t| t.as_millis() as u64), Relaxed);
    f.swept_ms.store(shm::coarse_monotonic_ms(), Relaxed);
    f.free_head.store(0, Relaxed);
}
