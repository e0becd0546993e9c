//! The page lookup of a region: its written pages, in the order first
//! written, and the hints that let a lookup skip the search.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::page::Page;

/// The written pages of a [`Region`]: kept in the order they were first
/// written (never removed), with an ordered index from page number to
/// place for the range questions (how many in a range, the first at or
/// after a page). A lookup tries the place the last one found, then the
/// one after it (accesses in a row mostly hit one page, or walk pages
/// written in order, as a fill or copy does), then the page's distance
/// from the first page written (a buffer first written whole, in order),
/// before the index. These are only guesses: the page at a place says
/// which page it is.
#[derive(Clone, Default)]
pub(super) struct Pages {
    pub(super) slots: Vec<(u64, Page)>,
    pub(super) index: BTreeMap<u64, usize>,
    pub(super) last: Hint,
    /// The last run of places found holding consecutive pages in order,
    /// as `start << 32 | count` (none when `count` is 0). Places are only
    /// ever added and never change their page, so a run found once stays
    /// one: a fill or copy of a buffer written before looks its run up
    /// once, not each time (see [`Pages::run_start`]). One word, so never
    /// torn.
    pub(super) run: Hint,
}

impl Pages {
    /// The place of `page`, if written.
    #[inline]
    pub(super) fn slot(&self, page: u64) -> Option<usize> {
        if let Some(slot) = self.hinted(page) {
            return Some(slot);
        }
        // Pages first written in order from the first one (a buffer a
        // fill or a copy wrote whole) sit at their distance from it.
        if let Some(&(first, _)) = self.slots.first() {
            let guess = usize::try_from(page.wrapping_sub(first)).unwrap_or(usize::MAX);
            if self.slots.get(guess).is_some_and(|&(p, _)| p == page) {
                self.last.set(guess);
                return Some(guess);
            }
        }
        let slot = *self.index.get(&page)?;
        self.last.set(slot);
        Some(slot)
    }

    /// The place of `page` when it is the hint's or the next one.
    #[inline]
    pub(super) fn hinted(&self, page: u64) -> Option<usize> {
        let last = self.last.get();
        let guess = [last, last.wrapping_add(1)]
            .into_iter()
            .find(|&guess| self.slots.get(guess).is_some_and(|&(p, _)| p == page))?;
        self.last.set(guess);
        Some(guess)
    }

    #[inline]
    pub(super) fn get(&self, page: u64) -> Option<&Page> {
        let slot = self.slot(page)?;
        self.slots.get(slot).map(|(_, p)| p)
    }

    #[inline]
    pub(super) fn get_mut(&mut self, page: u64) -> Option<&mut Page> {
        let slot = self.slot(page)?;
        self.slots.get_mut(slot).map(|(_, p)| p)
    }

    /// Adds `page`, not written before.
    pub(super) fn insert(&mut self, page: u64, content: Page) {
        let slot = self.slots.len();
        self.slots.push((page, content));
        self.index.insert(page, slot);
        self.last.set(slot);
    }

    /// How many of pages `first..=last` are written.
    pub(super) fn count_in(&self, first: u64, last: u64) -> u64 {
        // A short range page by page; a long one in one compare of its
        // places when they hold it in order (as a fill or a copy wrote
        // them), else in one walk over the index.
        if last - first < 4 {
            return (first..=last).filter(|&page| self.slot(page).is_some()).count() as u64;
        }
        let count = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        if self.run_start(first, count).is_some() {
            return last - first + 1;
        }
        self.index.range(first..=last).count() as u64
    }

    /// The place of `first` when pages `first..first + count` are all
    /// written and sit in consecutive places, in order (pages a fill or a
    /// copy wrote first in one go): a run of whole pages is then written
    /// with no lookup per page ([`Pages::run_mut`]).
    #[inline]
    pub(super) fn run_start(&self, first: u64, count: usize) -> Option<usize> {
        // Inside the last run found: no compare.
        let known = self.run.word();
        let (known_start, known_count) = ((known >> 32) as usize, known & 0xFFFF_FFFF);
        if let Some(&(known_first, _)) = self.slots.get(known_start) {
            let end = first.checked_add(count as u64)?;
            if known_first <= first && end <= known_first.saturating_add(known_count) {
                return Some(known_start + (first - known_first) as usize);
            }
        }
        let start = self.slot(first)?;
        let run = self.slots.get(start..start.checked_add(count)?)?;
        let found = run.iter().zip(first..).all(|(&(page, _), want)| page == want);
        if found {
            if let (Ok(start32), Ok(count32)) = (u32::try_from(start), u32::try_from(count)) {
                self.run.set_word(u64::from(start32) << 32 | u64::from(count32));
            }
        }
        found.then_some(start)
    }

    /// Pages `first..first + count`, written before, when they sit in
    /// consecutive places (see [`Pages::run_start`]).
    #[inline]
    pub(super) fn run_mut(&mut self, first: u64, count: usize) -> Option<&mut [(u64, Page)]> {
        let start = self.run_start(first, count)?;
        self.last.set((start + count).saturating_sub(1));
        self.slots.get_mut(start..start + count)
    }

    /// Pages `first..first + count`, written before, when they sit in
    /// consecutive places (see [`Pages::run_start`]).
    #[inline]
    pub(super) fn run(&self, first: u64, count: usize) -> Option<&[(u64, Page)]> {
        let start = self.run_start(first, count)?;
        self.last.set((start + count).saturating_sub(1));
        self.slots.get(start..start + count)
    }

    /// The first written page at or after `page`.
    pub(super) fn first_from(&self, page: u64) -> Option<u64> {
        self.index.range(page..).next().map(|(&p, _)| p)
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }
}

/// Where a lookup last found what it looked for (the index of a region in
/// the list, the place of a page in its region's pages): accesses in a row
/// mostly hit one region (a fence's, a query buffer's, a DMA's) and one
/// page, so a lookup tries it before searching. Only a hint: it is checked
/// each time (the region holds the address, the place holds the page), so
/// a stale one (after a mapping, or another reader's lookup) just costs the
/// search. Relaxed atomics, because readers share the lock.
#[derive(Default)]
pub(super) struct Hint(AtomicU64);

impl Hint {
    /// The index or place last stored (any value: it is checked on use).
    #[inline]
    pub(super) fn get(&self) -> usize {
        usize::try_from(self.word()).unwrap_or(usize::MAX)
    }

    #[inline]
    pub(super) fn set(&self, value: usize) {
        self.set_word(value as u64);
    }

    /// The whole word, for a hint packed into it.
    #[inline]
    pub(super) fn word(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    #[inline]
    pub(super) fn set_word(&self, word: u64) {
        self.0.store(word, Ordering::Relaxed);
    }
}

impl Clone for Hint {
    fn clone(&self) -> Self {
        Hint(AtomicU64::new(self.word()))
    }
}
