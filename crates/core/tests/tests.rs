//! Integration tests of `shmetrics-core`, in one binary (one link, one
//! process), as ripgrep does. The modules live in `tests/suite/` so that
//! Cargo does not also build each of them as a test binary of its own.

#[path = "suite/common.rs"]
mod common;

#[path = "suite/capacity.rs"]
mod capacity;
#[path = "suite/consistency.rs"]
mod consistency;
#[path = "suite/corruption.rs"]
mod corruption;
#[path = "suite/deletion.rs"]
mod deletion;
#[path = "suite/exemplars.rs"]
mod exemplars;
#[path = "suite/exposed_names.rs"]
mod exposed_names;
#[path = "suite/faults.rs"]
mod faults;
#[path = "suite/file_mode.rs"]
mod file_mode;
#[path = "suite/fuzz.rs"]
mod fuzz;
#[path = "suite/lock.rs"]
mod lock;
#[path = "suite/names.rs"]
mod names;
#[path = "suite/native.rs"]
mod native;
#[path = "suite/snapshot_cache.rs"]
mod snapshot_cache;
#[path = "suite/summaries.rs"]
mod summaries;
#[path = "suite/trust.rs"]
mod trust;
#[path = "suite/ttl.rs"]
mod ttl;
#[path = "suite/values.rs"]
mod values;
#[path = "suite/wipe_flag.rs"]
mod wipe_flag;
