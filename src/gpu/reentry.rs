//! What the GPU knows about the thread calling it: whether it is inside one
//! of its own slices (a backend or memory callback calling back), and, when
//! a slice unwinds, whose code panicked.
//!
//! A slice marks its thread for its whole length ([`SliceMark::enter`]). A
//! [`Gpu`](super::Gpu) method that would wait for something only the slice
//! itself can give (its queue's processor, the quiescence of the GPU, the
//! shared backend's lock it holds) asks [`in_slice`] first and answers
//! [`GpuError::CalledFromCallback`] instead of blocking for ever.
//!
//! Panics are attributed by guards that cost nothing unless the thread
//! unwinds: a guard is forgotten on the normal path, and only its `Drop`
//! during unwinding notes where it stood.

use std::cell::Cell;

use super::error::GpuError;

/// The slice a thread is running: which GPU, which queue, and whether its
/// backend calls go to the GPU's shared backend (whose lock the slice may
/// hold during a callback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SliceMark {
    /// The GPU's identity (the address of its shared state).
    pub(crate) gpu: usize,
    pub(crate) queue: usize,
    pub(crate) shared_backend: bool,
}

thread_local! {
    static CURRENT: Cell<Option<SliceMark>> = const { Cell::new(None) };
    static PANIC_SITE: Cell<Option<PanicSite>> = const { Cell::new(None) };
}

/// Restores the thread's previous mark when the slice ends (or unwinds).
pub(crate) struct Entered {
    previous: Option<SliceMark>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

impl SliceMark {
    /// Marks the current thread as running this slice until the returned
    /// guard is dropped.
    pub(crate) fn enter(self) -> Entered {
        Entered { previous: CURRENT.with(|c| c.replace(Some(self))) }
    }
}

/// The slice of GPU `gpu` this thread is running, if it runs one.
pub(crate) fn in_slice(gpu: usize) -> Option<SliceMark> {
    CURRENT.with(Cell::get).filter(|mark| mark.gpu == gpu)
}

/// Whether this thread runs a slice of any GPU (a handle cannot tell which
/// GPU it belongs to).
pub(crate) fn in_any_slice() -> bool {
    CURRENT.with(Cell::get).is_some()
}

/// [`GpuError::CalledFromCallback`] for `call` when this thread runs a
/// slice of GPU `gpu`.
pub(crate) fn refuse_in_slice(gpu: usize, call: &'static str, why: &'static str) -> Result<(), GpuError> {
    match in_slice(gpu) {
        Some(_) => Err(GpuError::CalledFromCallback { call, why }),
        None => Ok(()),
    }
}

/// Whose code a panic came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PanicSite {
    /// A [`GuestMemory`](crate::memory::GuestMemory) method.
    Memory,
    /// A [`Backend`](crate::backend::Backend) method.
    Backend,
}

/// Notes `site` if the thread unwinds while the guard lives. Forget it
/// ([`SiteGuard::done`]) on the normal path.
pub(crate) struct SiteGuard(PanicSite);

impl SiteGuard {
    #[inline(always)]
    pub(crate) fn new(site: PanicSite) -> Self {
        SiteGuard(site)
    }

    /// The guarded call returned: nothing to note.
    #[inline(always)]
    pub(crate) fn done(self) {
        std::mem::forget(self);
    }
}

impl Drop for SiteGuard {
    #[cold]
    fn drop(&mut self) {
        // Only reached while unwinding (the normal path forgets the guard).
        // The innermost guard is dropped first and wins.
        PANIC_SITE.with(|s| {
            if s.get().is_none() {
                s.set(Some(self.0));
            }
        });
    }
}

/// Runs `call` under a guard for `site`.
#[inline(always)]
pub(crate) fn guarded<R>(site: PanicSite, call: impl FnOnce() -> R) -> R {
    let guard = SiteGuard::new(site);
    let result = call();
    guard.done();
    result
}

/// Where the panic that just unwound came from (and forgets it).
pub(crate) fn take_panic_site() -> Option<PanicSite> {
    PANIC_SITE.with(Cell::take)
}
