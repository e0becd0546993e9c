//! Who waits on which guest bytes: the index a write (a packet's, or the
//! host's through [`super::Gpu::notify_host_write`]) asks for the queues to
//! wake, at a cost in proportion to what overlaps rather than to the number
//! of queues; and the recent writes a queue that was running meanwhile
//! checks before it suspends, so a write racing with its last read is not
//! lost.

use std::collections::VecDeque;

/// What may end a suspension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Watch {
    /// A write overlapping `[start, end)`.
    Range(u64, u64),
    /// Any write to guest memory (waits without an address).
    AnyWrite,
    /// Only the host (a wait on the queue's own register file).
    Host,
    /// A change of the GPU-wide UCONFIG registers (by any queue or the
    /// host) after the given count of changes
    /// ([`crate::processor::GlobalState::uconfig_writes`]).
    Uconfig(u64),
}

impl Watch {
    /// Whether a write of `[start, end)` may end the wait.
    pub(crate) fn hit_by(&self, start: u64, end: u64) -> bool {
        match *self {
            Watch::Range(a, b) => a < end && start < b,
            Watch::AnyWrite => true,
            Watch::Host | Watch::Uconfig(_) => false,
        }
    }
}

/// Suspended queues by watched range.
///
/// At most one watch per queue (57), so a sorted vector and a bit mask: no
/// allocation once the vector has grown, which a tree's nodes would cost
/// at every suspension and wake.
#[derive(Debug, Default)]
pub(crate) struct WatchIndex {
    /// `(start, queue, end)` of each watched range, sorted by `(start, queue)`.
    ranges: Vec<(u64, usize, u64)>,
    /// The longest watched range, so an overlap query knows how far before
    /// its start a watch may begin.
    longest: u64,
    /// Bit `q`: queue `q` is woken by any write.
    any: u64,
}

/// The bit of `queue` in [`WatchIndex::any`] (none past 63).
fn queue_bit(queue: usize) -> u64 {
    u32::try_from(queue).ok().and_then(|q| 1u64.checked_shl(q)).unwrap_or(0)
}

impl WatchIndex {
    pub(crate) fn insert(&mut self, queue: usize, watch: Watch) {
        match watch {
            Watch::Range(start, end) => {
                self.longest = self.longest.max(end.saturating_sub(start));
                match self.ranges.binary_search_by(|&(s, q, _)| (s, q).cmp(&(start, queue))) {
                    Ok(i) => {
                        if let Some(entry) = self.ranges.get_mut(i) {
                            entry.2 = end;
                        }
                    }
                    Err(i) => self.ranges.insert(i, (start, queue, end)),
                }
            }
            Watch::AnyWrite => self.any |= queue_bit(queue),
            Watch::Host | Watch::Uconfig(_) => {}
        }
    }

    pub(crate) fn remove(&mut self, queue: usize, watch: Watch) {
        match watch {
            Watch::Range(start, _) => {
                if let Ok(i) = self.ranges.binary_search_by(|&(s, q, _)| (s, q).cmp(&(start, queue))) {
                    self.ranges.remove(i);
                }
            }
            Watch::AnyWrite => self.any &= !queue_bit(queue),
            Watch::Host | Watch::Uconfig(_) => {}
        }
    }

    /// Adds every queue whose watch `[start, end)` overlaps to `out`.
    pub(crate) fn overlapping(&self, start: u64, end: u64, out: &mut Vec<usize>) {
        self.any_queues(out);
        let from = start.saturating_sub(self.longest);
        let first = self.ranges.partition_point(|&(s, _, _)| s < from);
        let watches = self.ranges.get(first..).unwrap_or(&[]);
        for &(_, queue, watch_end) in watches.iter().take_while(|&&(s, _, _)| s < end) {
            if start < watch_end {
                out.push(queue);
            }
        }
    }

    /// Adds every queue watching memory to `out`.
    pub(crate) fn all(&self, out: &mut Vec<usize>) {
        self.any_queues(out);
        out.extend(self.ranges.iter().map(|&(_, queue, _)| queue));
    }

    /// Adds the queues woken by any write to `out`, in queue order.
    fn any_queues(&self, out: &mut Vec<usize>) {
        let mut any = self.any;
        while any != 0 {
            out.push(any.trailing_zeros() as usize);
            any &= any - 1;
        }
    }
}

/// Most recent writes kept; a queue whose slice began before the oldest is
/// woken rather than risk missing one.
const RECENT: usize = 64;

/// The last writes (packet or host), numbered, for queues that were running
/// while they happened (threaded mode).
#[derive(Debug, Default)]
pub(crate) struct RecentWrites {
    entries: VecDeque<(u64, u64, u64)>,
    /// Number of the last write recorded.
    seq: u64,
}

impl RecentWrites {
    /// The number of the last write: a slice that begins now has seen it.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Records a write of `[start, end)` (`end == u64::MAX` and `start == 0`:
    /// anything).
    pub(crate) fn record(&mut self, start: u64, end: u64) {
        self.seq += 1;
        if self.entries.len() == RECENT {
            self.entries.pop_front();
        }
        self.entries.push_back((self.seq, start, end));
    }

    /// Whether a write recorded after `since` may end `watch`.
    pub(crate) fn hit_since(&self, since: u64, watch: &Watch) -> bool {
        if self.seq == since {
            return false;
        }
        match self.entries.front() {
            // Writes after `since` were dropped from the window.
            Some(&(oldest, _, _)) if oldest > since + 1 => true,
            None => true,
            Some(_) => self.entries.iter().rev().take_while(|e| e.0 > since).any(|&(_, s, e)| watch.hit_by(s, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_queries_find_exactly_the_watchers() {
        let mut index = WatchIndex::default();
        index.insert(3, Watch::Range(0x100, 0x104));
        index.insert(7, Watch::Range(0x104, 0x10C));
        index.insert(9, Watch::AnyWrite);
        index.insert(11, Watch::Host);
        let mut out = Vec::new();
        index.overlapping(0x102, 0x103, &mut out);
        assert_eq!(out, [9, 3]);
        out.clear();
        index.overlapping(0x10B, 0x200, &mut out);
        assert_eq!(out, [9, 7]);
        out.clear();
        index.remove(9, Watch::AnyWrite);
        index.overlapping(0x10C, 0x200, &mut out);
        assert!(out.is_empty());
        index.all(&mut out);
        assert_eq!(out, [3, 7]);
    }

    #[test]
    fn recent_writes_since_a_slice_began() {
        let mut recent = RecentWrites::default();
        let began = recent.seq();
        assert!(!recent.hit_since(began, &Watch::AnyWrite));
        recent.record(0x100, 0x104);
        assert!(recent.hit_since(began, &Watch::Range(0x100, 0x108)));
        assert!(!recent.hit_since(began, &Watch::Range(0x104, 0x108)));
        assert!(!recent.hit_since(recent.seq(), &Watch::Range(0x100, 0x108)));
        for i in 0..RECENT as u64 {
            recent.record(0x1000 + i * 8, 0x1004 + i * 8);
        }
        // The write that mattered fell out of the window: wake to be safe.
        assert!(recent.hit_since(began, &Watch::Range(0x9000, 0x9004)));
    }
}
