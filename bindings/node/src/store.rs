//! `NativeStore`, one open store file, and `NativeFamily`, a family
//! registered in it.

use std::sync::{Arc, Mutex};

use napi_derive::napi;
use shmetrics_core::{Family, Options, PathNow, Series, Snapshot, Store};
use shmetrics_expo::Format;

use napi::Result;

use crate::errors::{invalid, to_js};
use crate::hot;
use crate::read::{read_family, SeriesOut};
use crate::spec::FamilySpec;

/// The capacity of a store that is created, as the core's [`Options`]
/// name it (a store that exists keeps its own).
#[napi(object)]
#[derive(Debug, Default)]
pub struct StoreOptions {
    /// Most series, over all families.
    pub max_series: Option<u32>,
    /// Most families.
    pub max_families: Option<u32>,
    /// Bytes for names, help texts, label names and values.
    pub label_bytes: Option<f64>,
    /// Most processes writing at once.
    pub max_writers: Option<u32>,
}

impl StoreOptions {
    fn core(&self) -> Result<Options> {
        let mut o = Options::default();
        o.max_series = self.max_series.unwrap_or(o.max_series);
        o.max_families = self.max_families.unwrap_or(o.max_families);
        o.max_writers = self.max_writers.unwrap_or(o.max_writers);
        if let Some(b) = self.label_bytes {
            if !(b.is_finite() && b >= 0.0 && b.fract() == 0.0) {
                return Err(invalid(format!(
                    "labelBytes must be a whole number of bytes, got {b}"
                )));
            }
            o.label_bytes = b as u64;
        }
        Ok(o)
    }
}

/// An open store file. Every process that opens the same path adds to
/// the same metrics.
#[napi]
#[derive(Debug)]
pub struct NativeStore {
    store: Arc<Store>,
    /// Kept between reads, so each refresh decodes only what is new.
    snapshot: Arc<Mutex<Snapshot>>,
}

#[napi]
impl NativeStore {
    /// Opens (or creates) the store at `path`; without one, the core's
    /// default (`$SHMETRICS_STORE`, else `/dev/shm/shmetrics`). `options`
    /// size a store this call creates.
    #[napi(constructor)]
    pub fn new(path: Option<String>, options: Option<StoreOptions>) -> napi::Result<Self> {
        let path = path.map_or_else(Store::default_path, Into::into);
        let store = Store::open(&path, &options.unwrap_or_default().core()?).map_err(to_js)?;
        Ok(NativeStore {
            store: Arc::new(store),
            snapshot: Arc::new(Mutex::new(Snapshot::default())),
        })
    }

    /// Whether the path now names another file than the one open (the
    /// store was removed and created again): the caller opens it again.
    #[napi]
    pub fn replaced(&self) -> bool {
        self.store.path_now() == PathNow::Other
    }

    /// The store file's path.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.store.path().display().to_string()
    }

    /// Registers a family (or finds the same definition registered by
    /// another process).
    #[napi]
    pub fn register(&self, spec: FamilySpec) -> Result<NativeFamily> {
        let desc = spec.desc()?;
        let family = self.store.register(&desc).map_err(to_js)?;
        Ok(NativeFamily {
            store: self.store.clone(),
            snapshot: self.snapshot.clone(),
            family,
            name: desc.stored_name().map_err(to_js)?,
        })
    }

    /// The whole store over all processes, as `shmetrics serve` writes
    /// it: the Prometheus text format, or OpenMetrics (with `# EOF`).
    /// For `AggregatorRegistry.clusterMetrics()` in a primary.
    #[napi]
    pub fn render(&self, openmetrics: bool) -> Result<String> {
        let mut snap = self.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        self.store.snapshot_into(&mut snap).map_err(to_js)?;
        let format = if openmetrics {
            Format::OpenMetrics
        } else {
            Format::PrometheusText
        };
        let mut out = Vec::new();
        shmetrics_expo::encode(&snap, format, &mut out);
        // UNWRAP-free: the exposition writes UTF-8 (names and values are
        // `str`), but a lossy conversion costs nothing when it is.
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Brings the kept snapshot up to date; `NativeFamily.read` reads it.
    #[napi]
    pub fn refresh(&self) -> Result<()> {
        let mut snap = self.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        self.store.snapshot_into(&mut snap).map_err(to_js)
    }
}

/// A family in a store.
#[napi]
#[derive(Debug)]
pub struct NativeFamily {
    store: Arc<Store>,
    snapshot: Arc<Mutex<Snapshot>>,
    family: Family,
    name: String,
}

impl NativeFamily {
    fn lookup(&self, values: &[String]) -> Result<Series> {
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        self.store
            .series_or_overflow(&self.family, &refs)
            .map_err(to_js)
    }
}

/// Exemplar labels as the flat `[name, value, name, value, ...]` list
/// `lib/` passes.
fn pairs(flat: &[String]) -> Result<Vec<(&str, &str)>> {
    if !flat.len().is_multiple_of(2) {
        return Err(invalid("exemplar labels come in name, value pairs"));
    }
    Ok(flat
        .chunks_exact(2)
        .map(|p| (p[0].as_str(), p[1].as_str()))
        .collect())
}

#[napi]
impl NativeFamily {
    /// The id, for the update callbacks (`inc(id, v)`, ...), of the series
    /// with these label values (in label-name order), made if new. A
    /// label set the family or the store has no room for gets the family's
    /// overflow series: the update is counted there, not lost.
    #[napi]
    pub fn series_id(&self, values: Vec<String>) -> Result<u32> {
        Ok(hot::keep(self.store.clone(), self.lookup(&values)?))
    }

    /// Looks the series of `id` up again, after another process removed
    /// it (an update answered `StaleHandle`).
    #[napi]
    pub fn renew(&self, id: u32, values: Vec<String>) -> Result<()> {
        let series = self.lookup(&values)?;
        if hot::replace(id, self.store.clone(), series) {
            Ok(())
        } else {
            Err(invalid(format!("no series with id {id}")))
        }
    }

    /// Adds `v` to a counter series and records an exemplar (`labels`
    /// flat: name, value, name, value, ...).
    #[napi]
    pub fn inc_exemplar(&self, values: Vec<String>, v: f64, labels: Vec<String>) -> Result<()> {
        let s = self.lookup(&values)?;
        self.store
            .counter_add_with_exemplar(s, v, &pairs(&labels)?)
            .map_err(to_js)
    }

    /// Observes `v` in a histogram series and records an exemplar in its
    /// bucket.
    #[napi]
    pub fn observe_exemplar(&self, values: Vec<String>, v: f64, labels: Vec<String>) -> Result<()> {
        let s = self.lookup(&values)?;
        self.store
            .observe_with_exemplar(s, v, &pairs(&labels)?)
            .map_err(to_js)
    }

    /// Deletes the series with these label values, in every process.
    /// Whether it existed.
    #[napi]
    pub fn remove(&self, values: Vec<String>) -> Result<bool> {
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        self.store.delete(&self.family, &refs).map_err(to_js)
    }

    /// Deletes every series of the family, in every process.
    #[napi]
    pub fn clear(&self) -> Result<u32> {
        let n = self.store.clear(&self.family).map_err(to_js)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The family's series over all processes, from the store's kept
    /// snapshot, refreshed first when `refresh` is true.
    #[napi]
    pub fn read(&self, refresh: bool) -> Result<Vec<SeriesOut>> {
        let mut snap = self.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if refresh {
            self.store.snapshot_into(&mut snap).map_err(to_js)?;
        }
        Ok(snap
            .family(&self.name)
            .map(|f| read_family(&f))
            .unwrap_or_default())
    }
}
