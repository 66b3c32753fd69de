//! The decode phase: family and series records added (or, for families
//! with a TTL, reused) since the last refresh, decoded into the cache
//! once.

use std::ops::Range;
use std::sync::atomic::{
    fence,
    Ordering::{Acquire, Relaxed},
};

use super::{push_str, Bases, Cache, CachedSeries, FamilyEntry, Rare, Snapshot};
use crate::exemplar;
use crate::model::Kind;
use crate::shm::layout::{state, ArenaRef, FamilyRec, SeriesRec};
use crate::store::{decode_strs, FamilyType, Shape, Store};
use crate::window;

impl Store {
    /// Decodes family records added since the last refresh. Stops at a
    /// record still being written, to come back to it next time.
    pub(super) fn decode_new_families(&self, snap: &mut Snapshot, fam_used: u32) {
        let recs = self.map.families();
        while snap.cache.families_done < fam_used {
            let f = &recs[snap.cache.families_done as usize];
            let out = match f.state.load(Acquire) {
                state::INIT => return,
                state::LIVE => self.decode_family(snap, snap.cache.families_done, f),
                _ => None,
            };
            if let Some(entry) = out {
                snap.cache.family_out.push(Some(snap.families.len() as u32));
                snap.families.push(entry);
                snap.cache.members.push(Vec::new());
            } else {
                snap.cache.family_out.push(None);
            }
            snap.cache.families_done += 1;
        }
    }

    fn decode_family(&self, snap: &mut Snapshot, raw: u32, f: &FamilyRec) -> Option<FamilyEntry> {
        let t = self.family_type(f)?;
        let ttl_cell = t.ttl_cell().unwrap_or(0) as u32;
        let FamilyType {
            kind,
            mode,
            n_bounds,
            shape,
            window,
            native,
            exemplars,
            ttl_ms,
            ..
        } = t;
        let c = &mut snap.cache;
        let mark = (
            c.strings.len(),
            c.spans.len(),
            c.bounds.len(),
            c.quantiles.len(),
        );
        let entry = (|| {
            let name = push_str(&mut c.strings, self.arena_utf8(&f.name)?);
            let help = push_str(&mut c.strings, self.arena_utf8(&f.help)?);
            let unit = push_str(&mut c.strings, self.arena_utf8(&f.unit)?);
            let first = c.spans.len() as u32;
            for s in decode_strs(self.arena_str(&f.label_names)?) {
                let span = push_str(&mut c.strings, std::str::from_utf8(s?).ok()?);
                c.spans.push(span);
            }
            let label_names = first..c.spans.len() as u32;
            if label_names.len() != f.n_labels.load(Relaxed) as usize {
                return None;
            }
            let b0 = c.bounds.len() as u32;
            if kind == Kind::Histogram {
                c.bounds
                    .extend_from_slice(self.map.arena_f64s(f.buckets.off.load(Relaxed), n_bounds)?);
            }
            let q0 = c.quantiles.len() as u32;
            if window.age_buckets != 0 {
                c.quantiles.extend_from_slice(
                    self.map
                        .arena_f64s(f.quantiles.off.load(Relaxed), f.quantiles.len.load(Relaxed))?,
                );
            }
            let rare = Rare {
                quantiles: q0..c.quantiles.len() as u32,
                window,
                native,
                exemplars: exemplars as u32,
                ttl_ms,
                ttl_cell,
                bases: Bases::default(),
            };
            Some(FamilyEntry {
                raw,
                name,
                help,
                unit,
                kind,
                mode,
                shape,
                overflow_series: f.overflow_series.load(Relaxed).wrapping_sub(1),
                label_names,
                bounds: b0..c.bounds.len() as u32,
                hints: f.hints.load(Relaxed),
                series: 0..0,
                counts_base: 0,
                overflows: 0,
                rare: rare.boxed(),
            })
        })();
        if entry.is_none() {
            // A corrupt record: drop whatever was pushed for it.
            c.strings.truncate(mark.0);
            c.spans.truncate(mark.1);
            c.bounds.truncate(mark.2);
            c.quantiles.truncate(mark.3);
        }
        entry
    }

    fn arena_utf8(&self, r: &ArenaRef) -> Option<&str> {
        std::str::from_utf8(self.arena_str(r)?).ok()
    }

    /// Decodes series records added since the last refresh, appending each
    /// live one to its family's member list. Stops at a record still being
    /// written (or whose family is), to come back to it next time.
    ///
    /// A list that grew gives back what it has to spare: most families
    /// hold a few series (and their overflow series), and a list that
    /// doubled to 16 for 9 members would cost an exporter of a million
    /// series some 25 bytes per series for nothing.
    pub(super) fn decode_new_series(&self, snap: &mut Snapshot, series_used: u32) {
        let before = snap.cache.series_done;
        self.reserve_members(snap, series_used);
        self.decode_series_records(snap, series_used);
        if snap.cache.series_done != before {
            for list in &mut snap.cache.members {
                if list.capacity() > list.len() + list.len() / 8 + 1 {
                    list.shrink_to_fit();
                }
            }
        }
    }

    /// Reserves room in each family's member list for the records to
    /// decode, exactly: a list grown by doubling leaves its old buffers
    /// behind as holes in the heap, which a reader of a million series
    /// would keep for good.
    fn reserve_members(&self, snap: &mut Snapshot, series_used: u32) {
        let c = &mut snap.cache;
        let new = c.series_done as usize..series_used as usize;
        if new.len() < 64 {
            return; // not worth a pass
        }
        let mut counts = vec![0u32; c.members.len()];
        for rec in &self.map.series()[new] {
            let fam = rec.family.load(Relaxed);
            if let Some(Some(out)) = c.family_out.get(fam as usize) {
                counts[*out as usize] += 1;
            }
        }
        for (list, n) in c.members.iter_mut().zip(counts) {
            list.reserve_exact(n as usize);
        }
    }

    fn decode_series_records(&self, snap: &mut Snapshot, series_used: u32) {
        let recs = self.map.series();
        let cap = self.map.fixed().cells_per_slot;
        // The cell counts, read once and again only when a series does
        // not fit them (it may have been published after they were read).
        let read_counts = || {
            let sketch = self.map.header().alloc.sketch_cells_used.load(Acquire);
            (self.cell_counts(), sketch)
        };
        let mut counts = read_counts();
        // Whether a series' cells lie within the allocated ranges.
        let no_sketch = self.map.fixed().sketch_cells_per_slot;
        let fits = |((ints_used, floats_used), sketch_used): ((usize, usize), u64),
                    (io, fo, so): (u64, u64, u64),
                    shape: Shape,
                    sketch: u64| {
            let float_base = (cap as usize).saturating_sub(floats_used) as u64;
            io.saturating_add(shape.ints as u64) <= ints_used as u64
                && fo >= float_base
                && fo.saturating_add(shape.floats as u64) <= cap
                // An overflow series not used yet has no sketch cells.
                && (so == no_sketch || so.saturating_add(sketch) <= sketch_used)
        };
        while snap.cache.series_done < series_used {
            let id = snap.cache.series_done;
            let rec = &recs[id as usize];
            let word = rec.state.load(Acquire);
            match state::of(word) {
                state::INIT => return,
                st @ (state::LIVE | state::RETIRED | state::REUSABLE) => {
                    let fam = rec.family.load(Relaxed);
                    if fam >= snap.cache.families_done {
                        return; // its family is still being registered
                    }
                    if let Some(out) = snap.cache.family_out[fam as usize] {
                        let fam = &snap.families[out as usize];
                        let shape = fam.shape;
                        let sketch = self.sketch_cells_per_series(fam);
                        let io = rec.int_off.load(Relaxed);
                        let fo = rec.float_off.load(Relaxed);
                        let so = rec.sketch_off.load(Relaxed);
                        // The counts are read after the record was seen
                        // LIVE, so a live series always fits; one that does
                        // not is corrupt, and skipped.
                        let offs = (io, fo, so);
                        if !fits(counts, offs, shape, sketch) {
                            counts = read_counts();
                        }
                        if fits(counts, offs, shape, sketch) {
                            // A retired or reusable record (of a family
                            // with a TTL), or one that changed or is
                            // corrupt, is kept undecoded (word 0 matches no
                            // state): a new series may take it later.
                            let n = fam.n_labels();
                            let values = if st == state::LIVE {
                                self.decode_values(&mut snap.cache, rec, word, n)
                            } else {
                                None
                            };
                            let c = &mut snap.cache;
                            let sketch = if sketch > 0 {
                                c.sketch_offs.push(so);
                                c.sketch_offs.len() as u32 - 1
                            } else {
                                u32::MAX
                            };
                            c.members[out as usize].push(CachedSeries {
                                id,
                                word: if values.is_some() { word } else { 0 },
                                values: values.map_or(0, |v| v.start),
                                int_off: io as u32,
                                float_off: fo as u32,
                                sketch,
                                created_unix_ns: rec.created_unix_ns.load(Relaxed),
                            });
                        }
                    }
                }
                _ => {} // deleted or abandoned: never exported
            }
            snap.cache.series_done += 1;
        }
    }

    /// Reads again the sketch offset of overflow series that had none,
    /// and decodes again the records of families with a TTL that a new
    /// series took since they were decoded (their state word changed and
    /// is live). The old label spans are left behind; once they are as many
    /// as the rest, the next refresh starts the cache over.
    pub(super) fn decode_reused_series(&self, snap: &mut Snapshot) {
        let recs = self.map.series();
        let no_sketch = self.map.fixed().sketch_cells_per_slot;
        let mut members = std::mem::take(&mut snap.cache.members);
        for (fam, list) in snap.families.iter().zip(members.iter_mut()) {
            // An overflow series gets its sketch cells when first used
            // (its first member, allocated with the family).
            let cells = self.sketch_cells_per_series(fam);
            if let Some(m) = list
                .first()
                .filter(|m| cells > 0 && m.id == fam.overflow_series)
            {
                let known = snap.cache.sketch_offs.get_mut(m.sketch as usize);
                if let Some(known) = known.filter(|k| **k == no_sketch) {
                    let off = recs[m.id as usize].sketch_off.load(Acquire);
                    let used = self.map.header().alloc.sketch_cells_used.load(Acquire);
                    if off.saturating_add(cells) <= used {
                        *known = off;
                    }
                }
            }
            if fam.ttl_ms() == 0 {
                continue;
            }
            for m in list.iter_mut() {
                let word = recs[m.id as usize].state.load(Acquire);
                if word == m.word || state::of(word) != state::LIVE {
                    continue;
                }
                if let Some(values) =
                    self.decode_values(&mut snap.cache, &recs[m.id as usize], word, fam.n_labels())
                {
                    snap.cache.stale_spans += values.len();
                    m.values = values.start;
                    m.word = word;
                    m.created_unix_ns = recs[m.id as usize].created_unix_ns.load(Relaxed);
                }
            }
        }
        snap.cache.members = members;
        if snap.cache.stale_spans > snap.cache.ends.len() / 2 + 4096 {
            snap.cache.owner = None; // start over next time
        }
    }

    /// The sketch cells each series of `fam` takes.
    fn sketch_cells_per_series(&self, fam: &FamilyEntry) -> u64 {
        (match fam.native() {
            Some(n) => n.cells() as u64,
            None => {
                window::sketch_cells(fam.window().age_buckets as usize, self.sketch.cells()) as u64
            }
        }) + u64::from(fam.exemplars()) * exemplar::RECORD as u64
    }

    /// Decodes a record's `n` label values, which it had when its state
    /// word was `word` (read with Acquire before): `None` if they are
    /// corrupt (or not `n`), or if the record changed meanwhile (a record
    /// of a family with a TTL may be reused).
    fn decode_values(
        &self,
        c: &mut Cache,
        rec: &SeriesRec,
        word: u32,
        n: u32,
    ) -> Option<Range<u32>> {
        let mark = (c.values.len(), c.ends.len());
        let first = c.ends.len() as u32;
        let ok = (|| {
            for s in decode_strs(self.arena_str(&rec.labels)?) {
                c.values.push_str(std::str::from_utf8(s?).ok()?);
                c.ends.push(u32::try_from(c.values.len()).ok()?);
            }
            fence(Acquire);
            let whole = c.ends.len() - mark.1 == n as usize;
            (whole && rec.state.load(Relaxed) == word).then_some(())
        })();
        if ok.is_none() {
            c.values.truncate(mark.0);
            c.ends.truncate(mark.1);
            return None;
        }
        Some(first..c.ends.len() as u32)
    }
}
