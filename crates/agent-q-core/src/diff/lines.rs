//! The line diff itself: which lines of the old text match which lines of the new one.
//!
//! similar's Myers, given the lines as `&str`, hashes every line with SipHash and compares
//! strings; at 100,000 lines that was most of the time of a diff. Here the lines equal at
//! both ends are set aside by comparing them, each line in between is hashed once, with a fast
//! keyed hash, and the diff runs on the 64-bit hashes:
//!
//! 1. lines that occur nowhere in the other text (per a small presence filter, which can only
//!    err by keeping a line) cannot be part of any common subsequence, so they are set aside
//!    before Myers runs, as GNU diff's `discard_confusing_lines` does; the longest common
//!    subsequence is unchanged, and with scattered edits the remaining sequences are nearly
//!    identical, which Myers handles in linear time;
//! 2. the matches found on the reduced sequences are mapped back to line numbers, the gaps
//!    between them become deletions and insertions, and similar's `Compact` and `Replace` hooks
//!    shape them exactly as `capture_diff` would;
//! 3. equal hashes are not proof of equal lines: every matched run is then compared byte for
//!    byte, and on a collision (never seen in practice; the key is random per process) the
//!    diff is computed again with exact line identities.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::OnceLock;
use std::time::Instant;

use similar::algorithms::{Capture, Compact, DiffHook, Replace};
use similar::DiffOp;

/// Byte offset of the start of each line of TEXT, plus the text's length at the end: line `i`
/// is `text[starts[i]..starts[i + 1]]`, its `\n` included. Slicing after a `\n` always falls
/// on a character boundary.
pub fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = Vec::with_capacity(bytes.len() / 32 + 2);
    starts.push(0);
    starts.extend(memchr::memchr_iter(b'\n', bytes).map(|end| end + 1));
    if starts.last() != Some(&text.len()) {
        starts.push(text.len());
    }
    starts
}

/// One side of the diff: a text and its line starts.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    /// The text.
    pub text: &'a str,
    /// Its line starts, as [`line_starts`] returns them.
    pub starts: &'a [usize],
}

impl Side<'_> {
    fn lines(&self) -> usize {
        self.starts.len() - 1
    }

    fn line(&self, i: usize) -> &[u8] {
        &self.text.as_bytes()[self.starts[i]..self.starts[i + 1]]
    }

    fn bytes(&self, first: usize, count: usize) -> &[u8] {
        &self.text.as_bytes()[self.starts[first]..self.starts[first + count]]
    }
}

/// The random key of the line hash, one per process.
fn key() -> u64 {
    static KEY: OnceLock<u64> = OnceLock::new();
    *KEY.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1)
}

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;
const P2: u64 = 0x8ebc_6af0_9c88_c6e3;

/// The high and low halves of the 128-bit product, folded.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

#[inline(always)]
fn read8(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

#[inline(always)]
fn read4(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u64::from(u32::from_le_bytes(word))
}

/// A fast keyed 64-bit hash of BYTES (multiply-fold, 16 bytes per step, as wyhash).
fn hash(bytes: &[u8], key: u64) -> u64 {
    let len = bytes.len();
    let mut h = key ^ fold(len as u64 ^ P0, key ^ P1);
    let mut at = 0;
    while at + 16 <= len {
        h = fold(read8(bytes, at) ^ P1 ^ h, read8(bytes, at + 8) ^ key);
        at += 16;
    }
    let rest = len - at;
    let (a, b) = if rest >= 8 {
        (read8(bytes, at), read8(bytes, len - 8))
    } else if rest >= 4 {
        (read4(bytes, at), read4(bytes, len - 4))
    } else if rest > 0 {
        let (x, y, z) = (bytes[at], bytes[at + rest / 2], bytes[len - 1]);
        ((u64::from(x) << 16) | (u64::from(y) << 8) | u64::from(z), 0)
    } else {
        (0, 0)
    };
    fold(fold(a ^ P2 ^ h, b ^ key ^ rest as u64), P0 ^ len as u64)
}

/// A set of hashes that may answer "present" for an absent hash, never the reverse.
struct PresenceFilter {
    bits: Vec<u64>,
    mask: u64,
}

impl PresenceFilter {
    /// A filter of the HASHES, about 16 bits per hash (two bits set for each): wrong "present"
    /// answers for about 1.4% of absent hashes.
    fn new(hashes: &[u64]) -> Self {
        let size = (hashes.len() * 16).next_power_of_two().clamp(1 << 12, 1 << 26);
        let mut filter = PresenceFilter {
            bits: vec![0; size / 64],
            mask: size as u64 - 1,
        };
        for &h in hashes {
            for bit in filter.positions(h) {
                filter.bits[(bit / 64) as usize] |= 1 << (bit % 64);
            }
        }
        filter
    }

    fn positions(&self, h: u64) -> [u64; 2] {
        [h & self.mask, h.rotate_left(32) & self.mask]
    }

    fn may_contain(&self, h: u64) -> bool {
        self.positions(h)
            .iter()
            .all(|&bit| self.bits[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }
}

/// Runs of matched lines `(old, new, len)`, in full line numbers, from a diff of the reduced
/// sequences whose elements came from lines OLD_KEPT and NEW_KEPT.
struct MatchedRuns<'a> {
    old_kept: &'a [usize],
    new_kept: &'a [usize],
    runs: Vec<(usize, usize, usize)>,
}

impl DiffHook for MatchedRuns<'_> {
    type Error = std::convert::Infallible;

    fn equal(&mut self, old_index: usize, new_index: usize, len: usize) -> Result<(), Self::Error> {
        let pairs = self.old_kept[old_index..old_index + len]
            .iter()
            .zip(&self.new_kept[new_index..new_index + len]);
        for (&o, &n) in pairs {
            match self.runs.last_mut() {
                Some((ro, rn, rl)) if *ro + *rl == o && *rn + *rl == n => *rl += 1,
                _ => self.runs.push((o, n, 1)),
            }
        }
        Ok(())
    }
}

/// The line diff operations (as `similar::capture_diff_slices_deadline` with Myers returns
/// them) from OLD to NEW, approximated after DEADLINE.
pub fn line_ops(old: Side, new: Side, deadline: Option<Instant>) -> Vec<DiffOp> {
    // Lines equal at both ends need no hashing: an edit in one place of a large file hashes
    // only the lines between its first and last change.
    let shorter = old.lines().min(new.lines());
    let prefix = (0..shorter).take_while(|&i| old.line(i) == new.line(i)).count();
    let suffix = (0..shorter - prefix)
        .take_while(|&k| old.line(old.lines() - 1 - k) == new.line(new.lines() - 1 - k))
        .count();
    let old_middle = prefix..old.lines() - suffix;
    let new_middle = prefix..new.lines() - suffix;
    let key = key();
    let old_ids: Vec<u64> = old_middle.clone().map(|i| hash(old.line(i), key)).collect();
    let new_ids: Vec<u64> = new_middle.clone().map(|j| hash(new.line(j), key)).collect();
    let runs = matched_runs(&old_ids, &new_ids, prefix, deadline);
    let ops = shape(old, new, prefix, &runs, suffix);
    if verified(&ops, old, new) {
        return ops;
    }
    // Two different lines with the same hash: number the lines exactly and diff again.
    let mut numbers: HashMap<&[u8], u64> = HashMap::new();
    let mut ids = Vec::with_capacity(old_middle.len() + new_middle.len());
    for line in old_middle
        .clone()
        .map(|i| old.line(i))
        .chain(new_middle.map(|j| new.line(j)))
    {
        let next = numbers.len() as u64;
        ids.push(*numbers.entry(line).or_insert(next));
    }
    let (old_ids, new_ids) = ids.split_at(old_middle.len());
    let runs = matched_runs(old_ids, new_ids, prefix, deadline);
    shape(old, new, prefix, &runs, suffix)
}

/// Whether every `Equal` operation of OPS covers identical bytes in OLD and NEW.
fn verified(ops: &[DiffOp], old: Side, new: Side) -> bool {
    ops.iter().all(|op| match *op {
        DiffOp::Equal {
            old_index,
            new_index,
            len,
        } => old.bytes(old_index, len) == new.bytes(new_index, len),
        _ => true,
    })
}

/// Runs `(old, new, len)` of matched lines between two sequences of line identities that
/// start at line OFFSET of both texts, in line numbers of the texts.
fn matched_runs(
    old_ids: &[u64],
    new_ids: &[u64],
    offset: usize,
    deadline: Option<Instant>,
) -> Vec<(usize, usize, usize)> {
    let in_new = PresenceFilter::new(new_ids);
    let in_old = PresenceFilter::new(old_ids);
    let old_kept: Vec<usize> = (0..old_ids.len()).filter(|&i| in_new.may_contain(old_ids[i])).collect();
    let new_kept: Vec<usize> = (0..new_ids.len()).filter(|&j| in_old.may_contain(new_ids[j])).collect();
    let old_reduced: Vec<u64> = old_kept.iter().map(|&i| old_ids[i]).collect();
    let new_reduced: Vec<u64> = new_kept.iter().map(|&j| new_ids[j]).collect();
    let mut matched = MatchedRuns {
        old_kept: &old_kept,
        new_kept: &new_kept,
        runs: Vec::new(),
    };
    let Ok(()) = similar::algorithms::myers::diff_deadline(
        &mut matched,
        &old_reduced[..],
        0..old_reduced.len(),
        &new_reduced[..],
        0..new_reduced.len(),
        deadline,
    );
    matched
        .runs
        .into_iter()
        .map(|(o, n, len)| (o + offset, n + offset, len))
        .collect()
}

impl std::ops::Index<usize> for Side<'_> {
    type Output = [u8];

    fn index(&self, i: usize) -> &[u8] {
        self.line(i)
    }
}

/// The full edit script from PREFIX equal lines, the matched RUNS and SUFFIX equal lines,
/// shaped as similar's `capture_diff` shapes Myers' output (`Compact`, then `Replace`).
fn shape(old: Side, new: Side, prefix: usize, runs: &[(usize, usize, usize)], suffix: usize) -> Vec<DiffOp> {
    let mut hook = Compact::new(Replace::new(Capture::new()), &old, &new);
    let (n, m) = (old.lines(), new.lines());
    let ends = [(n - suffix, m - suffix, suffix)];
    let (mut i, mut j) = (0, 0);
    for &(o, p, len) in [(0, 0, prefix)].iter().chain(runs).chain(&ends) {
        let Ok(()) = emit_gap(&mut hook, i..o, j..p);
        if len > 0 {
            let Ok(()) = hook.equal(o, p, len);
        }
        (i, j) = (o + len, p + len);
    }
    let Ok(()) = hook.finish();
    hook.into_inner().into_inner().into_ops()
}

/// Report the old lines OLD as deleted and the new lines NEW as inserted, to HOOK.
fn emit_gap<D: DiffHook>(
    hook: &mut D,
    old: std::ops::Range<usize>,
    new: std::ops::Range<usize>,
) -> Result<(), D::Error> {
    if !old.is_empty() {
        hook.delete(old.start, old.len(), new.start)?;
    }
    if !new.is_empty() {
        hook.insert(old.end, new.start, new.len())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use similar::Algorithm;

    fn split(text: &str) -> Vec<&str> {
        text.split_inclusive('\n').collect()
    }

    fn ops(old: &str, new: &str) -> Vec<DiffOp> {
        let (os, ns) = (line_starts(old), line_starts(new));
        line_ops(Side { text: old, starts: &os }, Side { text: new, starts: &ns }, None)
    }

    /// Lines matched by OPS.
    fn matched(ops: &[DiffOp]) -> usize {
        ops.iter()
            .map(|op| match *op {
                DiffOp::Equal { len, .. } => len,
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn line_starts_split_after_each_newline() {
        assert_eq!(line_starts(""), vec![0]);
        assert_eq!(line_starts("a"), vec![0, 1]);
        assert_eq!(line_starts("a\n"), vec![0, 2]);
        assert_eq!(line_starts("a\nbc\r\nd"), vec![0, 2, 6, 7]);
        assert_eq!(line_starts("\n\n"), vec![0, 1, 2]);
    }

    #[test]
    fn hash_separates_lengths_and_bytes() {
        let key = key();
        let mut seen = HashMap::new();
        // Every string of up to 3 bytes over a small alphabet, and longer ones differing in
        // one byte at every position: no collision.
        let alphabet = [b'a', b'b', b'\n', 0, 0xff];
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new()];
        for len in 1..=3 {
            let mut next = Vec::new();
            for prefix in inputs.iter().filter(|s| s.len() == len - 1) {
                for &c in &alphabet {
                    let mut s = prefix.clone();
                    s.push(c);
                    next.push(s);
                }
            }
            inputs.extend(next);
        }
        for len in [7, 8, 9, 15, 16, 17, 31, 32, 33, 100] {
            for at in 0..len {
                let mut s = vec![b'x'; len];
                s[at] = b'y';
                inputs.push(s);
            }
        }
        for s in &inputs {
            assert_eq!(seen.insert(hash(s, key), s.clone()), None, "collision on {s:?}");
        }
    }

    /// OPS cover OLD and NEW in order, and their equal runs are equal.
    fn assert_valid(ops: &[DiffOp], old: &str, new: &str) {
        let (os, ns) = (line_starts(old), line_starts(new));
        let (o, n) = (Side { text: old, starts: &os }, Side { text: new, starts: &ns });
        let (mut i, mut j) = (0, 0);
        for op in ops {
            assert_eq!((op.old_range().start, op.new_range().start), (i, j), "{ops:?}");
            (i, j) = (op.old_range().end, op.new_range().end);
        }
        assert_eq!((i, j), (o.lines(), n.lines()));
        assert!(verified(ops, o, n));
    }

    /// As short (minimal) as similar's own capture of a Myers diff of the lines, on random
    /// texts with many repeated lines (where the reduction and the compaction both matter);
    /// equally short scripts may align repeated lines differently.
    #[test]
    fn as_short_as_similar_on_random_texts() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut below = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let words = ["a\n", "b\n", "c\n", "}\n", "\n", "x y\n", "z"];
        for round in 0..500 {
            let len = if round % 10 == 0 { 600 } else { 30 };
            let old: String = (0..below(len)).map(|_| words[below(6) as usize]).collect();
            let mut new = String::new();
            for line in old.split_inclusive('\n') {
                match below(10) {
                    0 => {}
                    1 => new.push_str(words[below(7) as usize]),
                    2 => {
                        new.push_str(line);
                        new.push_str(&format!("new {}\n", below(3)));
                    }
                    _ => new.push_str(line),
                }
            }
            let ours = ops(&old, &new);
            let theirs = similar::capture_diff_slices_deadline(Algorithm::Myers, &split(&old), &split(&new), None);
            assert_eq!(matched(&ours), matched(&theirs), "{old:?} -> {new:?}");
            assert_valid(&ours, &old, &new);
        }
    }

    /// Lines that are mostly unique, as in source code: the very same script as similar's.
    #[test]
    fn same_ops_as_similar_on_code_like_texts() {
        let old: String = (0..3000)
            .map(|i| match i % 7 {
                0 => "\n".to_string(),
                1 => "    }\n".to_string(),
                _ => format!("    let x{i} = f({});\n", i % 13),
            })
            .collect();
        let mut new = String::new();
        for (i, line) in old.split_inclusive('\n').enumerate() {
            match i % 41 {
                3 => {}
                9 => new.push_str("    // inserted\n    }\n"),
                17 => new.push_str(&line.replace("f(", "g(")),
                _ => new.push_str(line),
            }
            if i % 41 == 9 {
                new.push_str(line);
            }
        }
        let ours = ops(&old, &new);
        let theirs = similar::capture_diff_slices_deadline(Algorithm::Myers, &split(&old), &split(&new), None);
        assert_eq!(ours, theirs);
        assert_valid(&ours, &old, &new);
    }

    #[test]
    fn scattered_changes_on_many_lines() {
        let old: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let new: String = (0..20_000)
            .map(|i| {
                if i % 97 == 5 {
                    format!("changed {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect();
        let ours = ops(&old, &new);
        assert_valid(&ours, &old, &new);
        assert_eq!(matched(&ours), 20_000 - 207);
        let replaced = ours.iter().filter(|op| matches!(op, DiffOp::Replace { .. })).count();
        assert_eq!(replaced, 207);
    }

    /// A forced collision (a constant hash) is caught by the verification, and the exact diff
    /// is the same as without it.
    #[test]
    fn verification_catches_equal_hashes_of_different_lines() {
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\n";
        let (os, ns) = (line_starts(old), line_starts(new));
        let (o, n) = (Side { text: old, starts: &os }, Side { text: new, starts: &ns });
        let runs = matched_runs(&[7, 7, 7], &[7, 7, 7], 0, None);
        assert_eq!(runs, vec![(0, 0, 3)]);
        assert!(!verified(&shape(o, n, 0, &runs, 0), o, n));
        assert_eq!(
            ops(old, new),
            vec![
                DiffOp::Equal {
                    old_index: 0,
                    new_index: 0,
                    len: 1
                },
                DiffOp::Replace {
                    old_index: 1,
                    old_len: 1,
                    new_index: 1,
                    new_len: 1
                },
                DiffOp::Equal {
                    old_index: 2,
                    new_index: 2,
                    len: 1
                },
            ]
        );
    }
}
