//! The line of a text most similar to a target line, found within a time and work budget.
//!
//! When the model's `original` is stale, [`super::locate`] explains the mismatch with the
//! current text around the line most similar to `original`'s first line. Similarity is
//! similar's (and Python difflib's) `ratio` on characters: `2·M / (|a| + |b|)`, M the length of
//! the longest common subsequence. A full Myers diff for every line would take seconds on a few
//! megabytes of long lines; instead:
//!
//! 1. a linear scan keeps the lines whose cheap upper bound (lengths, then shared characters
//!    counted as multisets) can reach the cutoff, and a lower bound (common prefix and suffix);
//! 2. the few candidates with the best lower bounds are compared first, to find a good match
//!    early, then the others in decreasing order of upper bound, stopping as soon as no
//!    remaining candidate can beat the best ratio found;
//! 3. each comparison computes the LCS length bit-parallel (Hyyrö's algorithm, 64 characters of
//!    the target per machine word), so a 1,000-character pair costs about 16,000 word steps.
//!
//! Without the budget the result is exact: the line with the highest ratio at or above the
//! cutoff, the first such line on ties. The [`Budget`] (a deadline and a count of character
//! steps) cuts the search short on large adversarial texts; the result is then the best line
//! found so far and says so.

use std::collections::HashMap;
use std::time::Instant;

use super::SearchCut;

/// What [`SearchCut::what`] says when the scan of the lines was cut.
pub const SCANNED: &str = "lines scanned";
/// What [`SearchCut::what`] says when the comparisons were cut.
pub const COMPARED: &str = "similar-looking lines compared";

/// Characters of a line taken into account; longer lines are compared by their beginning.
pub const MAX_CHARS: usize = 2048;

/// Candidates compared first, chosen by their lower bound.
const SEEDS: usize = 4;

/// Lines scanned between two looks at the clock.
const CLOCK_EVERY: usize = 256;

/// Time and work allowed to a search.
#[derive(Debug, Clone)]
pub struct Budget {
    deadline: Instant,
    work_left: u64,
    exhausted: bool,
}

impl Budget {
    /// A budget ending at DEADLINE or after WORK character steps, whichever comes first.
    pub fn new(deadline: Instant, work: u64) -> Self {
        Budget {
            deadline,
            work_left: work,
            exhausted: false,
        }
    }

    /// Spend WORK steps; false once the work is used up (or the time, as last seen).
    pub fn spend(&mut self, work: u64) -> bool {
        if self.exhausted || work > self.work_left {
            self.exhausted = true;
            return false;
        }
        self.work_left -= work;
        true
    }

    /// Look at the clock; false once the deadline has passed (or the work is used up).
    pub fn in_time(&mut self) -> bool {
        if !self.exhausted && Instant::now() >= self.deadline {
            self.exhausted = true;
        }
        !self.exhausted
    }

    /// Whether the budget ran out.
    #[cfg(test)]
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }
}

/// The outcome of [`closest_line`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Index of the most similar line found, if any reached the cutoff.
    pub line: Option<usize>,
    /// Set when the budget ran out: candidate lines compared exactly, of those that could have
    /// reached the cutoff (or lines scanned of all lines, when the scan itself was cut).
    pub cut_short: Option<SearchCut>,
}

/// A similarity ratio `num / den`, compared exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ratio {
    num: u64,
    den: u64,
}

impl Ratio {
    fn new(common: usize, total: usize) -> Self {
        Ratio {
            num: 2 * common as u64,
            den: (total as u64).max(1),
        }
    }

    fn cmp(self, other: Ratio) -> std::cmp::Ordering {
        (self.num * other.den).cmp(&(other.num * self.den))
    }

    /// The fewest common characters that give a pair of TOTAL characters at least this ratio.
    fn shared_needed(self, total: usize) -> usize {
        // 2·s / total >= num / den  <=>  s >= num·total / (2·den)
        let total = total as u64;
        (self.num * total).div_ceil(2 * self.den) as usize
    }

    /// At least 1/2, the cutoff (as similar's `get_close_matches` with 0.5).
    fn reaches_cutoff(self) -> bool {
        2 * self.num >= self.den
    }
}

/// The target line prepared for comparisons: character classes, bit masks, counts.
struct Pattern {
    chars: usize,
    words: usize,
    ascii: [u16; 128],
    other: HashMap<char, u16>,
    /// `masks[k * words + w]`: bit i set when the target's character i is of class k.
    masks: Vec<u64>,
    /// Occurrences of each class in the target.
    counts: Vec<u32>,
}

impl Pattern {
    fn new(target: &str) -> Self {
        let mut ascii = [0u16; 128];
        let mut other = HashMap::new();
        let mut classes: Vec<u32> = Vec::new();
        let mut of_char = Vec::new();
        for c in target.chars() {
            let slot = if (c as u32) < 128 {
                &mut ascii[c as usize]
            } else {
                other.entry(c).or_insert(0)
            };
            if *slot == 0 {
                classes.push(0);
                // At most MAX_CHARS characters, so at most MAX_CHARS classes: fits in u16.
                *slot = classes.len() as u16;
            }
            let k = usize::from(*slot - 1);
            classes[k] += 1;
            of_char.push(k);
        }
        let chars = of_char.len();
        let words = chars.div_ceil(64).max(1);
        let mut masks = vec![0u64; classes.len() * words];
        for (i, &k) in of_char.iter().enumerate() {
            masks[k * words + i / 64] |= 1 << (i % 64);
        }
        Pattern {
            chars,
            words,
            ascii,
            other,
            masks,
            counts: classes,
        }
    }

    fn class(&self, c: char) -> Option<usize> {
        let slot = if (c as u32) < 128 {
            self.ascii[c as usize]
        } else {
            *self.other.get(&c)?
        };
        usize::from(slot).checked_sub(1)
    }

    /// Characters TEXT shares with the target, counted as multisets (an upper bound of the
    /// LCS), or `None` as soon as it is sure to be below NEED.
    fn shared_chars(&self, text: &str, chars: usize, need: usize, avail: &mut Vec<u32>) -> Option<usize> {
        avail.clear();
        avail.extend_from_slice(&self.counts);
        let allowed_misses = chars.checked_sub(need)?;
        let mut misses = 0;
        let mut take = |k: Option<usize>| -> bool {
            match k {
                Some(k) if avail[k] > 0 => avail[k] -= 1,
                _ => misses += 1,
            }
            misses <= allowed_misses
        };
        let complete = if text.is_ascii() {
            text.as_bytes()
                .iter()
                .all(|&b| take(usize::from(self.ascii[usize::from(b)]).checked_sub(1)))
        } else {
            text.chars().all(|c| take(self.class(c)))
        };
        complete.then(|| chars - misses)
    }

    /// Length of the longest common subsequence of the target and TEXT (Hyyrö, 2004).
    fn lcs(&self, text: &str, v: &mut Vec<u64>) -> usize {
        let words = self.words;
        v.clear();
        v.resize(words, !0);
        for c in text.chars() {
            let Some(k) = self.class(c) else { continue };
            let masks = &self.masks[k * words..(k + 1) * words];
            let mut carry = false;
            for (x, &m) in v.iter_mut().zip(masks) {
                let u = *x & m;
                let (sum, c1) = x.overflowing_add(u);
                let (sum, c2) = sum.overflowing_add(u64::from(carry));
                carry = c1 || c2;
                *x = sum | (*x & !m);
            }
        }
        let mut ones = 0usize;
        for (w, x) in v.iter().enumerate() {
            let bits = (self.chars - (w * 64).min(self.chars)).min(64);
            let mask = if bits == 64 { !0 } else { (1u64 << bits) - 1 };
            ones += (x & mask).count_ones() as usize;
        }
        self.chars - ones
    }
}

/// TEXT cut to its first [`MAX_CHARS`] characters, and its length in characters.
fn prefix_chars(text: &str) -> (&str, usize) {
    if text.len() <= MAX_CHARS {
        return (text, text.chars().count());
    }
    match text.char_indices().nth(MAX_CHARS) {
        Some((end, _)) => (&text[..end], MAX_CHARS),
        None => (text, text.chars().count()),
    }
}

/// Characters at the start and end that A and B share (at most the shorter length), a lower
/// bound of their LCS.
fn common_ends(a: &str, b: &str) -> usize {
    let mut prefix = 0;
    let (mut ai, mut bi) = (a.chars(), b.chars());
    let (rest_a, rest_b) = loop {
        let rest = (ai.as_str(), bi.as_str());
        match (ai.next(), bi.next()) {
            (Some(x), Some(y)) if x == y => prefix += 1,
            _ => break rest,
        }
    };
    let suffix = rest_a
        .chars()
        .rev()
        .zip(rest_b.chars().rev())
        .take_while(|(x, y)| x == y)
        .count();
    prefix + suffix
}

struct Candidate<'a> {
    index: usize,
    text: &'a str,
    chars: usize,
    lower: Ratio,
}

/// The best line so far: its ratio and index.
#[derive(Clone, Copy)]
struct Best {
    ratio: Ratio,
    index: usize,
}

/// Whether a line INDEX whose ratio is at most BOUND can still beat BEST (ties go to the
/// first line).
fn can_beat(bound: Ratio, index: usize, best: Option<Best>) -> bool {
    match best {
        None => bound.reaches_cutoff(),
        Some(b) => bound.cmp(b.ratio).then(b.index.cmp(&index)).is_gt(),
    }
}

/// The index of the line of LINES most similar to TARGET (both compared trimmed, by their first
/// [`MAX_CHARS`] characters), among the lines whose ratio is at least 1/2, within BUDGET.
pub fn closest_line(lines: &[&str], target: &str, budget: &mut Budget) -> Found {
    let (target, target_chars) = prefix_chars(target.trim());
    if target_chars == 0 {
        return Found {
            line: None,
            cut_short: None,
        };
    }
    let pattern = Pattern::new(target);

    // Pass 1, linear and cheap: the lines whose lengths allow the cutoff, with the lower bound
    // that their common start and end with the target give.
    let mut candidates = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if index % CLOCK_EVERY == 0 && !budget.in_time() {
            // No time left to compare: the line sharing the longest start and end with the
            // target, when that alone proves a ratio of at least 1/2.
            let line = candidates
                .iter()
                .filter(|c: &&Candidate| c.lower.reaches_cutoff())
                .min_by(|a, b| b.lower.cmp(a.lower).then(a.index.cmp(&b.index)))
                .map(|c| c.index);
            return Found {
                line,
                cut_short: Some(SearchCut {
                    done: index,
                    total: lines.len(),
                    what: SCANNED,
                }),
            };
        }
        let (text, chars) = prefix_chars(line.trim());
        budget.spend(text.len() as u64 / 16);
        let total = target_chars + chars;
        if chars == 0 || !Ratio::new(target_chars.min(chars), total).reaches_cutoff() {
            continue;
        }
        candidates.push(Candidate {
            index,
            text,
            chars,
            lower: Ratio::new(common_ends(target, text), total),
        });
    }

    let mut best: Option<Best> = None;
    let mut compared = 0;
    let mut v = Vec::new();
    let mut compare = |c: &Candidate, best: &mut Option<Best>, budget: &mut Budget| -> bool {
        if !budget.spend((pattern.words * c.chars) as u64) || !budget.in_time() {
            return false;
        }
        compared += 1;
        let ratio = Ratio::new(pattern.lcs(c.text, &mut v), target_chars + c.chars);
        if can_beat(ratio, c.index, *best) {
            *best = Some(Best { ratio, index: c.index });
        }
        true
    };

    // Seeds: the candidates sharing the longest start and end with the target (a small edit of
    // the target scores high here), compared first so that the pruning starts from a good ratio.
    let mut seeds: Vec<usize> = (0..candidates.len()).collect();
    let by_lower = |&a: &usize, &b: &usize| {
        let (a, b): (&Candidate, &Candidate) = (&candidates[a], &candidates[b]);
        b.lower.cmp(a.lower).then(a.index.cmp(&b.index))
    };
    if SEEDS < seeds.len() {
        seeds.select_nth_unstable_by(SEEDS - 1, by_lower);
        seeds.truncate(SEEDS);
    }
    seeds.sort_unstable_by(by_lower);
    let mut cut = false;
    for &k in &seeds {
        if !compare(&candidates[k], &mut best, budget) {
            cut = true;
            break;
        }
    }

    // Pass 2, in order: a line is compared only if its length, then the characters it shares
    // with the target, still allow it to beat the best ratio so far.
    let mut avail = Vec::new();
    if !cut {
        for (k, c) in candidates.iter().enumerate() {
            if k % CLOCK_EVERY == 0 && !budget.in_time() {
                cut = true;
                break;
            }
            if seeds.contains(&k) {
                continue;
            }
            let total = target_chars + c.chars;
            if !can_beat(Ratio::new(target_chars.min(c.chars), total), c.index, best) {
                continue;
            }
            budget.spend(c.text.len() as u64 / 4);
            let need = best.map_or(0, |b| b.ratio.shared_needed(total));
            let Some(shared) = pattern.shared_chars(c.text, c.chars, need, &mut avail) else {
                continue;
            };
            if !can_beat(Ratio::new(shared, total), c.index, best) {
                continue;
            }
            if !compare(c, &mut best, budget) {
                cut = true;
                break;
            }
        }
    }
    Found {
        line: best.map(|b| b.index),
        cut_short: cut.then_some(SearchCut {
            done: compared,
            total: candidates.len(),
            what: COMPARED,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn unlimited() -> Budget {
        Budget::new(Instant::now() + Duration::from_secs(3600), u64::MAX)
    }

    /// The LCS length by dynamic programming.
    fn lcs_reference(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        let mut row = vec![0usize; b.len() + 1];
        for x in &a {
            let mut diag = 0;
            for (j, y) in b.iter().enumerate() {
                let up = row[j + 1];
                row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
                diag = up;
            }
        }
        row[b.len()]
    }

    /// The ratio similar computes (a full Myers diff of the characters).
    fn similar_ratio(a: &str, b: &str) -> f32 {
        similar::TextDiff::from_chars(a, b).ratio()
    }

    /// The closest line by comparing every line in full: highest ratio >= 0.5, first on ties.
    fn closest_reference(lines: &[&str], target: &str) -> Option<usize> {
        let target = target.trim();
        let mut best: Option<(Ratio, usize)> = None;
        for (i, line) in lines.iter().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let ratio = Ratio::new(
                lcs_reference(target, line),
                target.chars().count() + line.chars().count(),
            );
            if ratio.reaches_cutoff() && best.is_none_or(|(r, _)| ratio.cmp(r).is_gt()) {
                best = Some((ratio, i));
            }
        }
        best.map(|(_, i)| i)
    }

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
        fn text(&mut self, alphabet: &[&str], len: u64) -> String {
            (0..len)
                .map(|_| alphabet[self.below(alphabet.len() as u64) as usize])
                .collect()
        }
    }

    #[test]
    fn bit_parallel_lcs_equals_the_reference_and_similar() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let alphabet = ["a", "b", "c", "é", " ", "λ", "x"];
        for round in 0..400 {
            // Lengths around the word boundaries (63, 64, 65, 128...) as well as short ones.
            let la = if round % 4 == 0 {
                60 + rng.below(75)
            } else {
                rng.below(20)
            };
            let lb = rng.below(150);
            let a = rng.text(&alphabet, la);
            let b = rng.text(&alphabet, lb);
            if a.is_empty() {
                continue;
            }
            let pattern = Pattern::new(&a);
            let lcs = pattern.lcs(&b, &mut Vec::new());
            assert_eq!(lcs, lcs_reference(&a, &b), "{a:?} {b:?}");
            let total = a.chars().count() + b.chars().count();
            let ratio = 2.0 * lcs as f32 / total as f32;
            assert!((ratio - similar_ratio(&a, &b)).abs() < 1e-6, "{a:?} {b:?}");
            let chars = b.chars().count();
            let shared = pattern.shared_chars(&b, chars, 0, &mut Vec::new()).expect("no bound");
            assert!(shared >= lcs);
            assert_eq!(pattern.shared_chars(&b, chars, shared, &mut Vec::new()), Some(shared));
            assert_eq!(pattern.shared_chars(&b, chars, shared + 1, &mut Vec::new()), None);
            assert!(common_ends(&a, &b) <= lcs);
        }
    }

    #[test]
    fn exact_on_small_inputs() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let words = ["let", "x", "=", "1;", "foo(bar)", "  ", "é", "{", "}"];
        for _ in 0..300 {
            let count = rng.below(40) as usize;
            let owned: Vec<String> = (0..count)
                .map(|_| {
                    let n = rng.below(8);
                    rng.text(&words, n)
                })
                .collect();
            let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
            let n = 1 + rng.below(8);
            let target = rng.text(&words, n);
            let found = closest_line(&lines, &target, &mut unlimited());
            assert_eq!(found.cut_short, None);
            assert_eq!(found.line, closest_reference(&lines, &target), "{lines:?} / {target:?}");
        }
    }

    #[test]
    fn ties_go_to_the_first_line_and_the_cutoff_holds() {
        let lines = ["abcx", "zzzz", "abcy", "abcx"];
        assert_eq!(closest_line(&lines, "abcd", &mut unlimited()).line, Some(0));
        assert_eq!(closest_line(&lines, "qqqq", &mut unlimited()).line, None);
        assert_eq!(closest_line(&lines, "   ", &mut unlimited()).line, None);
        assert_eq!(closest_line(&[], "abc", &mut unlimited()).line, None);
    }

    #[test]
    fn long_lines_are_compared_by_their_beginning() {
        let long = "word ".repeat(2000);
        let other = "else ".repeat(2000);
        let lines = [other.as_str(), long.as_str()];
        let target = format!("{}!", "word ".repeat(1000));
        assert_eq!(closest_line(&lines, &target, &mut unlimited()).line, Some(1));
    }

    /// Lines that are all permutations of the same words have the same upper bound as the
    /// best match, which defeats the pruning; the budget then cuts the search, which still
    /// returns the near-copy of the target (compared first thanks to its common start and end)
    /// and says it was cut short.
    #[test]
    fn adversarial_input_is_cut_short_with_a_sensible_match() {
        let mut rng = Rng(7);
        let mut words: Vec<String> = (0..150).map(|i| format!("w{i:03}x")).collect();
        let owned: Vec<String> = (0..10_000)
            .map(|_| {
                for i in (1..words.len()).rev() {
                    words.swap(i, rng.below(i as u64 + 1) as usize);
                }
                words.join(" ")
            })
            .collect();
        let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
        let mut target = owned[7_777].clone();
        target.replace_range(500..501, "#");
        assert!(!owned.contains(&target));
        let mut budget = Budget::new(Instant::now() + Duration::from_secs(60), 20_000_000);
        let found = closest_line(&lines, &target, &mut budget);
        assert_eq!(found.line, Some(7_777));
        let cut = found.cut_short.expect("the work budget runs out");
        assert_eq!(cut.what, COMPARED);
        assert!(cut.done < cut.total, "{cut:?}");
        assert!(budget.exhausted());
        // An exhausted clock stops the scan itself.
        let mut late = Budget::new(Instant::now(), u64::MAX);
        let found = closest_line(&lines, &target, &mut late);
        assert_eq!(
            found.cut_short,
            Some(SearchCut {
                done: 0,
                total: 10_000,
                what: SCANNED
            })
        );
        assert_eq!(found.line, None);
    }
}
