//! shmetrics for Node.js: the native half of the `shmetrics` npm package.
//!
//! This crate is thin on purpose. It opens the store, registers families,
//! finds series and writes updates (`store.rs`, `hot.rs`), and reads a
//! family back from a snapshot for the in-process `get()` (`read.rs`).
//! prom-client's API (label objects, registries, timers, default metrics)
//! is the JavaScript in `lib/`, which calls only this. Every error leaves
//! here as a JavaScript `Error` whose `code` is the core's error kind
//! (`errors.rs`); `lib/errors.js` turns it into the package's own class.

mod errors;
mod hot;
mod read;
mod spec;
mod store;

pub use hot::forget_series;
pub use read::{ExemplarOut, SeriesOut};
pub use spec::FamilySpec;
pub use store::{NativeFamily, NativeStore, StoreOptions};

use napi::bindgen_prelude::Object;
use napi::{Env, JsValue};

/// Adds the hot path's raw callbacks (`hot.rs`) to the exports, beside the
/// classes napi-rs registers, and `buildProfile` ("debug" or "release"),
/// by which the benchmarks refuse to time a debug build.
#[napi_derive::napi(module_exports)]
pub fn init(mut exports: Object, env: Env) -> napi::Result<()> {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    exports.set("buildProfile", profile)?;
    hot::export(env.raw(), exports.raw())
}
