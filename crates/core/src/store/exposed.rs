//! One exposed name, one family: a family is refused if a name it would
//! take in the expositions (its metric family name or a sample name) is
//! one another family of the store takes, whatever the two types. Else a
//! page would hold two families of one name, which Prometheus refuses
//! whole. Names are compared as scrapers that do not take UTF-8 see them
//! (escaped with `underscores`, the default): `a.b` and `a_b` are one
//! name there.

use std::sync::atomic::Ordering::*;
use std::sync::TryLockError;

use super::register::FamilyIndex;
use super::Store;
use crate::error::{Error, ErrorKind, Result};
use crate::family::FamilyDesc;
use crate::model::{Kind, EXPOSED_SUFFIXES};
use crate::names::{is_legacy_metric_name, underscored};

impl Store {
    /// Under the lock, before a new family `d` is inserted: fails if a
    /// name `d` would expose is exposed by another family. A family that
    /// exposes `x` is named `x` less one of its kind's suffixes, so the
    /// candidates are looked up by name, never by a scan of every family.
    pub(super) fn check_exposed_names(&self, d: &FamilyDesc, epoch: u32) -> Result<()> {
        let families = self.live_range_families();
        let seen = underscored(&d.name, true);
        for suffix in d.kind.exposed_suffixes() {
            // Suffixes are legacy: escaping `name + suffix` is escaping
            // `name`, then the suffix.
            let exposed = format!("{seen}{suffix}");
            for other_suffix in EXPOSED_SUFFIXES {
                let Some(other) = exposed.strip_suffix(other_suffix) else {
                    continue;
                };
                if other.is_empty() {
                    continue;
                }
                let mut candidates = self.families_underscored(other, epoch);
                candidates.extend(self.family_position(other, epoch));
                for i in candidates {
                    let f = &families[i];
                    if self.arena_str(&f.name) == Some(d.name.as_bytes()) {
                        continue; // `d` itself, registered again
                    }
                    let Some(kind) = Kind::from_u32(f.kind.load(Relaxed)) else {
                        continue;
                    };
                    if kind.exposed_suffixes().contains(&other_suffix) {
                        let name = self
                            .arena_str(&f.name)
                            .map(String::from_utf8_lossy)
                            .unwrap_or_default();
                        return Err(self.collision(d, &exposed, &name, kind));
                    }
                }
            }
        }
        Ok(())
    }

    /// The live families named outside the legacy set whose underscored
    /// name is `u`.
    fn families_underscored(&self, u: &str, epoch: u32) -> Vec<usize> {
        let families = self.live_range_families();
        match self.family_index.get().try_lock() {
            Ok(mut index) => index.find_underscored(self, families, epoch, u),
            Err(TryLockError::Poisoned(p)) => {
                let mut index = p.into_inner();
                *index = FamilyIndex::default();
                index.find_underscored(self, families, epoch, u)
            }
            // Another thread of this process holds it (see
            // `family_position`): an empty index scans.
            Err(TryLockError::WouldBlock) => {
                FamilyIndex::default().find_underscored(self, families, epoch, u)
            }
        }
    }

    fn collision(&self, d: &FamilyDesc, exposed: &str, other: &str, kind: Kind) -> Error {
        Error::new(
            ErrorKind::Conflict,
            format!(
                "the {} {:?} would expose the name {exposed:?}, which the {} {other:?} already \
                 exposes{}; a scrape would then hold two families of that name, which Prometheus \
                 refuses: choose another name for one of them",
                d.kind.as_str(),
                d.name,
                kind.as_str(),
                if is_legacy_metric_name(&d.name) && is_legacy_metric_name(other) {
                    ""
                } else {
                    " to scrapers that do not take UTF-8 names (escaping=underscores)"
                },
            ),
        )
        .with_path(self.path())
    }
}
