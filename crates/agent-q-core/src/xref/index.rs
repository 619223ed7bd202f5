//! Bloom filters of the symbols of each file, cached while the file is unchanged, so that a scan
//! skips without reading the files that cannot contain the name.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use super::read::{open_source, read_open_source};
use super::source::index_source;

/// Index the FILES not yet indexed (or changed) in CACHE, one at a time, holding the lock only
/// to look up and to insert, so that scans can run meanwhile. Unreadable files are skipped (a
/// scan reports them). Returns the number of files indexed.
pub fn index_files(cache: &Mutex<ScanCache>, files: &[PathBuf], max_file_size: u64) -> usize {
    let lock = || cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let (mut buf, mut compressed) = (Vec::new(), Vec::new());
    let mut indexed = 0;
    for file in files {
        let Ok((mut handle, stamp)) = open_source(file, max_file_size) else {
            continue;
        };
        let fresh = lock().files.get(file).is_some_and(|(known, _)| *known == stamp);
        if fresh || read_open_source(&mut handle, max_file_size, &mut buf, &mut compressed).is_err() {
            continue;
        }
        let index = index_source(&buf);
        lock().insert(file.clone(), stamp, index);
        indexed += 1;
    }
    indexed
}

/// A 64-bit hash of a symbol name (FxHash-style; not for adversarial input, which only costs
/// a needless parse).
pub(super) fn symbol_hash(name: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = name.len() as u64;
    let mut chunks = name.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
    }
    // Final mix so that the low and high halves both depend on every byte.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A Bloom filter of the symbols one source file contains (about 1.5 bytes per distinct
/// symbol, 1% false positives): a later scan skips the file without reading it when the
/// filter says the symbol is absent.
#[derive(Debug, Clone)]
pub struct SymbolIndex {
    bits: Vec<u64>,
}

impl SymbolIndex {
    const PROBES: u64 = 7;

    pub(super) fn new(mut hashes: Vec<u64>) -> Self {
        hashes.sort_unstable();
        hashes.dedup();
        let wanted_bits = (hashes.len() * 10).max(64);
        let words = wanted_bits.next_power_of_two() / 64;
        let mut index = SymbolIndex { bits: vec![0; words] };
        for h in hashes {
            index.for_each_bit(h, |bits, word, bit| bits[word] |= bit);
        }
        index
    }

    fn for_each_bit(&mut self, hash: u64, mut f: impl FnMut(&mut [u64], usize, u64)) {
        let mask = (self.bits.len() as u64 * 64) - 1;
        let step = (hash >> 32) | 1;
        for i in 0..Self::PROBES {
            let n = hash.wrapping_add(i.wrapping_mul(step)) & mask;
            f(&mut self.bits, (n / 64) as usize, 1 << (n % 64));
        }
    }

    /// Whether the file may contain the symbol NAME (false: it certainly does not).
    pub fn may_contain(&self, name: &[u8]) -> bool {
        let hash = symbol_hash(name);
        let mask = (self.bits.len() as u64 * 64) - 1;
        let step = (hash >> 32) | 1;
        (0..Self::PROBES).all(|i| {
            let n = hash.wrapping_add(i.wrapping_mul(step)) & mask;
            self.bits
                .get((n / 64) as usize)
                .is_some_and(|w| w & (1 << (n % 64)) != 0)
        })
    }

    /// The memory the filter uses, in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.bits.len() * 8
    }
}

/// What identifies one version of a file: its size and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stamp {
    pub(super) len: u64,
    pub(super) modified: Option<std::time::SystemTime>,
}

/// Indexes of the files already read, reused by later
/// [`scan_files_cached`](super::scan_files_cached) calls while a file's size and modification
/// time are unchanged. Bounded to [`ScanCache::MAX_FILES`] files.
#[derive(Debug, Default)]
pub struct ScanCache {
    pub(super) files: HashMap<PathBuf, (Stamp, SymbolIndex)>,
}

impl ScanCache {
    /// The most files indexed; beyond, the cache starts over.
    pub const MAX_FILES: usize = 50_000;

    /// An empty cache.
    pub fn new() -> Self {
        ScanCache::default()
    }

    pub(super) fn insert(&mut self, file: PathBuf, stamp: Stamp, index: SymbolIndex) {
        if self.files.len() >= ScanCache::MAX_FILES && !self.files.contains_key(&file) {
            self.files.clear();
        }
        self.files.insert(file, (stamp, index));
    }

    /// Whether every one of FILES has an index (regardless of whether it is still fresh).
    pub fn covers(&self, files: &[PathBuf]) -> bool {
        files.iter().all(|f| self.files.contains_key(f))
    }

    /// Forget every index.
    pub fn clear(&mut self) {
        self.files.clear();
    }

    /// The number of files indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is indexed.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The memory used by the indexes, in bytes (approximately).
    pub fn size_in_bytes(&self) -> usize {
        self.files
            .iter()
            .map(|(path, (_, index))| index.size_in_bytes() + path.as_os_str().len() + 64)
            .sum()
    }
}
