//! The per-process caches of families and series themselves (the C
//! functions that use them are in `cache.rs`): a family is registered once
//! per process under a key the caller chooses, then found by that key; a
//! series is found by its label values joined in one string. Here, below
//! both `types.rs` (a store handle holds its [`Cache`]) and `cache.rs`, so
//! that neither names the other back.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::{Mutex, MutexGuard, PoisonError};

use shmetrics_core::{ErrorKind, Family, FamilyDesc, Series, Store, MAX_LABELS};

use crate::error::{shmetrics_result, FfiError};

/// The separator of label values in the joined form the cached calls
/// take: byte 0xFF, which UTF-8 never contains.
const LABEL_SEPARATOR: u8 = 0xFF;

/// The caches' maps: every cached update hashes its joined label values,
/// and every request of a runtime like php-fpm hashes each family's key.
type Map<V> = HashMap<Box<[u8]>, V, KeyHash>;

/// xxh3 (as the store hashes label values) with a seed drawn once per map
/// from std's `RandomState`, so that keys chosen by a client cannot be
/// made to collide without knowing it. On these short keys it costs a
/// fraction of std's SipHash (215 of an update's 969 instructions from
/// PHP, under callgrind).
#[derive(Clone, Debug)]
struct KeyHash(u64);

impl Default for KeyHash {
    fn default() -> Self {
        KeyHash(RandomState::new().hash_one(0u64))
    }
}

impl BuildHasher for KeyHash {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0)
    }
}

/// A `[u8]` key hashes as its length, then its bytes (`Hash for [T]`):
/// each write chains into the seed of the next.
#[derive(Debug)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    fn write_usize(&mut self, n: usize) {
        // The length prefix: mixed into the seed, not hashed on its own.
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The most series a cached family keeps handles of. Label values that
/// come and go (a TTL family's, or more label sets than this) would
/// otherwise grow the cache for the life of the process; past this, half
/// of the family's entries are dropped (the map's order, which its
/// random seed makes arbitrary) and looked up again in the store when
/// they are next used. A handle is some 100 bytes with its key, so a
/// family's cache stays under about 2 MB.
pub(crate) const MAX_CACHED_SERIES: usize = 16_384;

/// The families and series one store handle has looked up.
#[derive(Debug)]
pub(crate) struct Cache {
    /// Token `t` is `families[t - 1]`.
    families: Vec<Cached>,
    /// Tokens by the caller's key.
    by_key: Map<u32>,
    /// The most series handles kept per family ([`MAX_CACHED_SERIES`];
    /// less in tests).
    series_cap: usize,
}

impl Default for Cache {
    fn default() -> Self {
        Cache {
            families: Vec::new(),
            by_key: Map::default(),
            series_cap: MAX_CACHED_SERIES,
        }
    }
}

#[derive(Debug)]
struct Cached {
    /// What the family was registered with, to register it again after a
    /// wipe.
    desc: FamilyDesc,
    family: Family,
    /// Series by their joined label values. Overflow resolutions are not
    /// kept, so a label set gets its own series once there is room.
    series: Map<Series>,
}

// `lock`, `family` and `update` are on the path of every cached update
// (`shmetrics_update` in cache.rs): inline, as they were when the two
// were one module (without it, `update` stayed a call of its own, 25
// instructions an update more under crates/ffi/benches/hotpath.sh).
impl Cache {
    #[inline]
    pub(crate) fn lock(m: &Mutex<Cache>) -> MutexGuard<'_, Cache> {
        // A panic while the lock is held leaves at worst a map without an
        // entry it was about to get: still consistent.
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The token of the family cached under `key`, if any.
    pub(crate) fn token(&self, key: &[u8]) -> Option<u32> {
        self.by_key.get(key).copied()
    }

    /// Registers `desc` (or finds the same family, registered by any
    /// process) and caches it under `key`; returns its token.
    pub(crate) fn register(
        &mut self,
        store: &Store,
        key: &[u8],
        desc: FamilyDesc,
    ) -> Result<u32, FfiError> {
        if let Some(t) = self.token(key) {
            return Ok(t);
        }
        let family = store.register(&desc)?;
        let token = u32::try_from(self.families.len() + 1).map_err(|_| {
            FfiError::Other(
                shmetrics_result::SHMETRICS_STORE_FULL,
                "too many cached families in this process".to_owned(),
            )
        })?;
        self.families.push(Cached {
            desc,
            family,
            series: Map::default(),
        });
        self.by_key.insert(key.into(), token);
        Ok(token)
    }

    #[inline]
    fn family(&mut self, token: u32) -> Result<&mut Cached, FfiError> {
        let n = self.families.len();
        token
            .checked_sub(1)
            .and_then(|i| self.families.get_mut(i as usize))
            .ok_or_else(|| {
                FfiError::Other(
                    shmetrics_result::SHMETRICS_INVALID_ARGUMENT,
                    format!(
                        "family token {token} was not made by shmetrics_family_cache on this \
                         store handle ({n} cached)"
                    ),
                )
            })
    }

    /// Applies the update `apply` to the series of family `token` with the
    /// joined label values `values`, looking the series up again once if its
    /// handle went stale.
    #[inline]
    pub(crate) fn update(
        &mut self,
        store: &Store,
        token: u32,
        values: &[u8],
        apply: impl Fn(Series) -> shmetrics_core::Result<()>,
    ) -> Result<(), FfiError> {
        let cap = self.series_cap;
        let cached = self.family(token)?;
        if let Some(&s) = cached.series.get(values) {
            match apply(s) {
                Err(e) if e.kind() == ErrorKind::StaleHandle => {
                    cached.series.remove(values);
                }
                r => return Ok(r?),
            }
        }
        let s = cached.resolve(store, values, cap)?;
        Ok(apply(s)?)
    }

    /// Keeps at most `cap` series handles per family from now on.
    #[cfg(test)]
    pub(crate) fn set_series_cap(&mut self, cap: usize) {
        self.series_cap = cap.max(2);
    }

    /// How many series handles family `token` keeps.
    #[cfg(test)]
    pub(crate) fn cached_series(&self, token: u32) -> usize {
        self.families[token as usize - 1].series.len()
    }
}

impl Cached {
    fn resolve(&mut self, store: &Store, values: &[u8], cap: usize) -> Result<Series, FfiError> {
        let mut buf = [""; MAX_LABELS];
        let n = split(values, self.family.label_count(), &mut buf)?;
        let labels = &buf[..n];
        let found = match store.series(&self.family, labels) {
            Err(e) if e.kind() == ErrorKind::StaleHandle => {
                // Wiped since it was registered: register it again.
                self.family = store.register(&self.desc)?;
                self.series.clear();
                store.series(&self.family, labels)
            }
            r => r,
        };
        match found {
            Ok(s) => {
                if self.series.len() >= cap {
                    self.drop_half();
                }
                self.series.insert(values.into(), s);
                Ok(s)
            }
            Err(e) if e.kind() == ErrorKind::Overflow => e.overflow_series().ok_or(e.into()),
            Err(e) => Err(e.into()),
        }
    }
}

impl Cached {
    /// Drops every other series handle, in the map's (arbitrary) order:
    /// those still in use are looked up again at their next update.
    #[cold]
    fn drop_half(&mut self) {
        let mut keep = false;
        self.series.retain(|_, _| {
            keep = !keep;
            keep
        });
    }
}

/// Splits the joined label values into `buf`, checking their number
/// against the family's `want` and each for UTF-8. With no labels, only
/// the empty string is right; with one, the empty string is one empty
/// value.
fn split<'a>(
    values: &'a [u8],
    want: usize,
    buf: &mut [&'a str; MAX_LABELS],
) -> Result<usize, FfiError> {
    if want == 0 {
        if values.is_empty() {
            return Ok(0);
        }
        return Err(label_count(want, values));
    }
    let mut n = 0;
    for part in values.split(|&b| b == LABEL_SEPARATOR) {
        if n == want || n == MAX_LABELS {
            return Err(label_count(want, values));
        }
        buf[n] = std::str::from_utf8(part).map_err(|_| FfiError::Utf8("values"))?;
        n += 1;
    }
    if n != want {
        return Err(label_count(want, values));
    }
    Ok(n)
}

#[cold]
fn label_count(want: usize, values: &[u8]) -> FfiError {
    let got = if values.is_empty() && want == 0 {
        0
    } else {
        values.iter().filter(|&&b| b == LABEL_SEPARATOR).count() + 1
    };
    FfiError::Other(
        shmetrics_result::SHMETRICS_LABEL_COUNT,
        format!("expected {want} label values, got {got}"),
    )
}
