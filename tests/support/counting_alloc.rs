//! A global allocator that counts allocations (and reallocations) and
//! forwards everything to the system allocator: the no-allocation tests
//! install it and compare counts around the code they watch. Each thread
//! counts its own, so the test harness's other threads never add to the
//! count of the code a test watches.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The counting allocator (install with `#[global_allocator]`).
pub struct Counting;

thread_local! {
    // Constant-initialised and without a destructor: reading it never
    // allocates, so the allocator may use it.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// Allocations made so far by the calling thread.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

fn count() {
    // `try_with`: never a panic inside the allocator, even while the
    // thread's locals are torn down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    // SAFETY: forwards to the system allocator unchanged; only counts.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    // SAFETY: forwards to the system allocator unchanged.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    // SAFETY: forwards to the system allocator unchanged; only counts.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
