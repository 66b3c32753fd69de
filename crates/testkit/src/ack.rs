//! The acknowledgement file: a page of atomic `u64` words shared between a
//! worker and the test that spawned it, through a shared file mapping.
//!
//! The worker increments a word right after a store update returns `Ok`.
//! Because the words live in a file mapping, they survive the worker's
//! SIGKILL: the test reads them after the worker died.

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use memmap2::MmapRaw;

/// Number of words in an ack file.
pub const WORDS: usize = 512;

/// A mapped ack file.
#[derive(Debug)]
pub struct AckFile {
    map: MmapRaw,
    path: PathBuf,
}

impl AckFile {
    /// Creates (or truncates to zero) the ack file at `path`.
    pub fn create(path: impl AsRef<Path>) -> io::Result<AckFile> {
        let path = path.as_ref();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        file.set_len((WORDS * 8) as u64)?;
        AckFile::map(&file, path)
    }

    /// Opens an existing ack file.
    pub fn open(path: impl AsRef<Path>) -> io::Result<AckFile> {
        let path = path.as_ref();
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        if file.metadata()?.len() < (WORDS * 8) as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: not an ack file (too short)", path.display()),
            ));
        }
        AckFile::map(&file, path)
    }

    fn map(file: &std::fs::File, path: &Path) -> io::Result<AckFile> {
        let map = memmap2::MmapOptions::new().len(WORDS * 8).map_raw(file)?;
        Ok(AckFile {
            map,
            path: path.to_path_buf(),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Word `i` (panics if `i >= WORDS`).
    pub fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < WORDS, "ack word {i} out of range");
        // SAFETY: the mapping is WORDS * 8 bytes long, page-aligned (so
        // 8-aligned), shared and writable; `i < WORDS` was checked. Every
        // bit pattern is a valid u64, and all access, from this process and
        // from others, goes through atomics.
        unsafe { &*(self.map.as_ptr().add(i * 8) as *const AtomicU64) }
    }

    /// Reads word `i`.
    pub fn get(&self, i: usize) -> u64 {
        self.word(i).load(SeqCst)
    }

    /// Sets word `i`.
    pub fn set(&self, i: usize, v: u64) {
        self.word(i).store(v, SeqCst)
    }

    /// Adds `v` to word `i`.
    pub fn add(&self, i: usize, v: u64) {
        self.word(i).fetch_add(v, SeqCst);
    }
}
