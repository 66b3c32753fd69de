//! One exposed name, one family: a family is refused if a name it would
//! take in the expositions (its metric family name or a sample name) is
//! one another family of the store takes, whatever the two types. Else a
//! page would hold two families of one name, which Prometheus refuses
//! whole.

use std::sync::atomic::Ordering::*;

use super::Store;
use crate::error::{Error, ErrorKind, Result};
use crate::family::{FamilyDesc, Kind, EXPOSED_SUFFIXES};

impl Store {
    /// Under the lock, before a new family `d` is inserted: fails if a
    /// name `d` would expose is exposed by another family. A family that
    /// exposes `x` is named `x` less one of its kind's suffixes, so the
    /// candidates are looked up by name, never by a scan of every family.
    pub(super) fn check_exposed_names(&self, d: &FamilyDesc, epoch: u32) -> Result<()> {
        let families = self.live_range_families();
        for suffix in d.kind.exposed_suffixes() {
            let exposed = format!("{}{suffix}", d.name);
            for other_suffix in EXPOSED_SUFFIXES {
                let Some(other) = exposed.strip_suffix(other_suffix) else {
                    continue;
                };
                if other == d.name || other.is_empty() {
                    continue;
                }
                let Some(i) = self.family_position(other, epoch) else {
                    continue;
                };
                let Some(kind) = Kind::from_u32(families[i].kind.load(Relaxed)) else {
                    continue;
                };
                if kind.exposed_suffixes().contains(&other_suffix) {
                    return Err(self.collision(d, &exposed, other, kind));
                }
            }
        }
        Ok(())
    }

    fn collision(&self, d: &FamilyDesc, exposed: &str, other: &str, kind: Kind) -> Error {
        Error::new(
            ErrorKind::Conflict,
            format!(
                "the {} {:?} would expose the name {exposed:?}, which the {} {other:?} already \
                 exposes; a scrape would then hold two families of that name, which Prometheus \
                 refuses: choose another name for one of them",
                d.kind.as_str(),
                d.name,
                kind.as_str(),
            ),
        )
        .with_path(self.path())
    }
}
