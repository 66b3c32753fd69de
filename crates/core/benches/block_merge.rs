//! The design experiment behind docs/design/writer-cells.md: what the
//! merge costs if each writer slot kept its cells in blocks, in the order
//! it first touched its series, instead of at the same offset in every
//! slot (today's layout, whose merge is a sequential sum of the slots).
//!
//! Counters only (one integer and one float cell a series). Each writer
//! slot holds, for the series it touched, a block `[header, int, float]`
//! (the header names the series); the merge walks a slot's blocks and adds
//! them into the dense sums at the series' offsets. Three first-touch
//! orders: the series' creation order (the best case), creation order
//! shuffled within windows of 65,536 series, and a random permutation
//! (writers that each see the series in their own random order, as
//! `benches/scale.sh`'s writers do). A fourth run keeps the random order
//! but puts the sums' offsets in the header itself, so that no lookup by
//! series id is needed. The last, "range pages", groups each slot's
//! blocks by ranges of consecutive series (see [`RangeHeap`]). Every
//! variant is one thread, as is "dense", which reads every slot's cells
//! whatever the writers touched.
//!
//! Every variant of a touch gets the same series in each slot (only their
//! order differs), so their merges must give the same sums: each row
//! prints a checksum of its sums, and rows of one touch must agree.
//!
//! ```text
//! BLOCK_SERIES=1000000 BLOCK_SLOTS=64 BLOCK_TOUCH=1,0.1 \
//!     cargo bench -p shmetrics-core --bench block_merge
//! ```
//!
//! Prints the median of three merges per variant; nothing passes or fails.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// xorshift64: reproducible, and no dependency for a shuffle.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Order {
    Creation,
    Windowed,
    Random,
}

#[derive(Clone, Copy, PartialEq)]
enum Header {
    /// The series id plus one; the merge looks its offsets up.
    Id,
    /// The integer cell's offset (low half) and the float cell's (high).
    Offsets,
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median_ms(mut f: impl FnMut() -> f64) -> f64 {
    let mut runs: Vec<f64> = (0..3).map(|_| f()).collect();
    runs.sort_by(f64::total_cmp);
    runs[1]
}

/// The series writer `slot` touches, in the order it first touches them:
/// which ones depends on the slot and `touch` only, so every order draws
/// the same set.
fn touched(slot: usize, n: usize, touch: f64, order: Order) -> Vec<u32> {
    let keep = (touch * 1e6) as u64;
    let mut pick = Rng(0x9e37_79b9_7f4a_7c15 ^ (slot as u64 + 1) << 20);
    let mut ids: Vec<u32> = (0..n as u32)
        .filter(|_| pick.below(1_000_000) < keep)
        .collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (slot as u64 + 1) << 20);
    match order {
        Order::Creation => {}
        Order::Windowed => {
            let mut keyed: Vec<(u64, u32)> = ids
                .iter()
                .map(|&i| (u64::from(i) + rng.below(65_536), i))
                .collect();
            keyed.sort_unstable();
            ids = keyed.into_iter().map(|(_, i)| i).collect();
        }
        Order::Random => {
            for i in (1..ids.len()).rev() {
                ids.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
    }
    ids
}

/// One slot's blocks for the series `ids`. The sums' offsets are the
/// series id for the integer cell and `n` plus it for the float cell.
fn blocks(ids: &[u32], slot: usize, header: Header, n: usize) -> Vec<AtomicU64> {
    let mut v = Vec::with_capacity(ids.len() * 3);
    for &id in ids {
        let h = match header {
            Header::Id => u64::from(id) + 1,
            Header::Offsets => u64::from(id) | (n as u64 + u64::from(id)) << 32,
        };
        v.push(AtomicU64::new(h));
        v.push(AtomicU64::new((id as usize + slot) as u64));
        v.push(AtomicU64::new(1.0f64.to_bits()));
    }
    v
}

fn merge_blocks(slots: &[Vec<AtomicU64>], header: Header, n: usize) -> (Vec<u64>, Vec<f64>) {
    // The lookup a reader would keep: offsets by series id.
    let offsets: Vec<(u32, u32)> = (0..n as u32).map(|i| (i, n as u32 + i)).collect();
    let (mut ints, mut floats) = (vec![0u64; n], vec![0f64; n]);
    for b in slots {
        for block in b.chunks_exact(3) {
            let h = block[0].load(Relaxed);
            let (io, fo) = match header {
                Header::Id => offsets[h as usize - 1],
                Header::Offsets => (h as u32, (h >> 32) as u32),
            };
            let i = io as usize;
            ints[i] = ints[i].wrapping_add(block[1].load(Relaxed));
            floats[fo as usize - n] += f64::from_bits(block[2].load(Relaxed));
        }
    }
    (ints, floats)
}

/// Series per range, and cells per page, of the range-page variant.
const RANGE: usize = 256;
const PAGE: usize = 128;

/// One slot's heap in the range-page variant: pages of [`PAGE`] cells,
/// each holding blocks of one range of [`RANGE`] consecutive series in
/// the order the writer touched them. A page's cell 0 holds the next page
/// of its range plus one (low half) and the cells it uses (high half);
/// `first[r]` is range `r`'s first page plus one.
struct RangeHeap {
    first: Vec<u32>,
    pages: Vec<AtomicU64>,
}

impl RangeHeap {
    fn new(ids: &[u32], slot: usize, n: usize) -> RangeHeap {
        let ranges = n.div_ceil(RANGE);
        let (mut first, mut last) = (vec![0u32; ranges], vec![0u32; ranges]);
        let mut pages: Vec<u64> = Vec::new();
        for &id in ids {
            let r = id as usize / RANGE;
            let mut page = last[r] as usize;
            let used = |pages: &[u64], p: usize| (pages[(p - 1) * PAGE] >> 32) as usize;
            if page == 0 || used(&pages, page) + 3 > PAGE {
                pages.resize(pages.len() + PAGE, 0);
                let new = pages.len() / PAGE;
                pages[(new - 1) * PAGE] = 1 << 32;
                if page == 0 {
                    first[r] = new as u32;
                } else {
                    pages[(page - 1) * PAGE] |= new as u64;
                }
                last[r] = new as u32;
                page = new;
            }
            let base = (page - 1) * PAGE;
            let at = base + used(&pages, page);
            pages[at] = u64::from(id) | (n as u64 + u64::from(id)) << 32;
            pages[at + 1] = (id as usize + slot) as u64;
            pages[at + 2] = 1.0f64.to_bits();
            pages[base] += 3 << 32;
        }
        RangeHeap {
            first,
            pages: pages.into_iter().map(AtomicU64::new).collect(),
        }
    }

    fn bytes(&self) -> usize {
        self.pages.len() * 8 + self.first.len() * 4
    }
}

/// The range-page merge: slot by slot, its ranges in order, each range's
/// pages added into the range's window of the sums, so that the sums are
/// written in order and only the pages are visited out of order.
fn merge_ranges(slots: &[RangeHeap], n: usize) -> (Vec<u64>, Vec<f64>) {
    let (mut ints, mut floats) = (vec![0u64; n], vec![0f64; n]);
    for heap in slots {
        for r in 0..n.div_ceil(RANGE) {
            let mut page = heap.first[r] as usize;
            while page != 0 {
                let cells = &heap.pages[(page - 1) * PAGE..page * PAGE];
                let head = cells[0].load(Relaxed);
                let used = ((head >> 32) as usize).min(PAGE);
                for block in cells[1..used].chunks_exact(3) {
                    let h = block[0].load(Relaxed);
                    let (io, fo) = (h as u32 as usize, (h >> 32) as usize);
                    ints[io] = ints[io].wrapping_add(block[1].load(Relaxed));
                    floats[fo - n] += f64::from_bits(block[2].load(Relaxed));
                }
                page = head as u32 as usize;
            }
        }
    }
    (ints, floats)
}

fn merge_dense(slots: &[Vec<AtomicU64>], n: usize) -> (Vec<u64>, Vec<f64>) {
    let (mut ints, mut floats) = (vec![0u64; n], vec![0f64; n]);
    for d in slots {
        for (x, c) in ints.iter_mut().zip(&d[..n]) {
            *x = x.wrapping_add(c.load(Relaxed));
        }
    }
    for d in slots {
        for (x, c) in floats.iter_mut().zip(&d[n..]) {
            *x += f64::from_bits(c.load(Relaxed));
        }
    }
    (ints, floats)
}

/// The merged sums of a variant, as one number: rows of one touch agree.
fn checksum((ints, floats): &(Vec<u64>, Vec<f64>)) -> u64 {
    let int = ints.iter().fold(0u64, |a, x| a.wrapping_add(*x));
    int.wrapping_add(floats.iter().sum::<f64>() as u64)
}

/// Times `merge` (median of 3) and prints a row: its name, time, bytes
/// read and checksum.
fn row(name: &str, bytes: usize, merge: impl Fn() -> (Vec<u64>, Vec<f64>)) {
    let mut sum = 0;
    let ms = median_ms(|| {
        let t = Instant::now();
        let sums = std::hint::black_box(merge());
        let ms = t.elapsed().as_secs_f64() * 1e3;
        sum = checksum(&sums);
        ms
    });
    println!(
        "{name:<48} {ms:8.1} ms  {:6} MiB read  sum {sum}",
        bytes >> 20
    );
}

/// Today's layout: every series' cells in every slot.
fn run_dense(n: usize, slots: usize) {
    let cell = |s: usize, i: usize| {
        if i < n {
            (i + s) as u64
        } else {
            1.0f64.to_bits()
        }
    };
    let dense: Vec<Vec<AtomicU64>> = (0..slots)
        .map(|s| (0..2 * n).map(|i| AtomicU64::new(cell(s, i))).collect())
        .collect();
    row("dense (any touch)", slots * 2 * n * 8, || {
        merge_dense(&dense, n)
    });
}

/// The block variants and the range pages, for writers that each touch
/// `touch` of the series.
fn run_blocks(n: usize, slots: usize, touch: f64) {
    let variants = [
        ("blocks, creation order", Order::Creation, Header::Id),
        (
            "blocks, order shuffled in 64k windows",
            Order::Windowed,
            Header::Id,
        ),
        ("blocks, random order", Order::Random, Header::Id),
        (
            "blocks, random order, offsets in header",
            Order::Random,
            Header::Offsets,
        ),
    ];
    let pct = touch * 100.0;
    for (name, order, header) in variants {
        let heaps: Vec<Vec<AtomicU64>> = (0..slots)
            .map(|s| blocks(&touched(s, n, touch, order), s, header, n))
            .collect();
        let bytes = heaps.iter().map(|b| b.len() * 8).sum();
        row(&format!("{name} ({pct:.0} %)"), bytes, || {
            merge_blocks(&heaps, header, n)
        });
    }
    let heaps: Vec<RangeHeap> = (0..slots)
        .map(|s| RangeHeap::new(&touched(s, n, touch, Order::Random), s, n))
        .collect();
    let bytes = heaps.iter().map(RangeHeap::bytes).sum();
    let name = format!("range pages ({RANGE} series, {PAGE} cells) ({pct:.0} %)");
    row(&name, bytes, || merge_ranges(&heaps, n));
}

fn main() {
    let n: usize = env_or("BLOCK_SERIES", 1_000_000);
    let slots: usize = env_or("BLOCK_SLOTS", 64);
    let touches: Vec<f64> = std::env::var("BLOCK_TOUCH")
        .unwrap_or_else(|_| "1,0.1".into())
        .split(',')
        .filter_map(|t| t.trim().parse().ok())
        .collect();
    println!("merge of {n} counters x {slots} writer slots, one thread, median of 3");
    run_dense(n, slots);
    for touch in touches {
        run_blocks(n, slots, touch);
    }
}
