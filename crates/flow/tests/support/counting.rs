//! A global allocator that counts allocations (and reallocations) and
//! otherwise is the system's: the cost example reads [`ALLOCS`] (the whole
//! process's) before and after the requests it measures, the
//! no-allocation test [`this_thread`] (its own thread's: the test
//! harness's other threads allocate when they will, and once did inside
//! the measured requests).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counting;

#[allow(dead_code)] // the test reads `this_thread` only
pub static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static MINE: Cell<u64> = const { Cell::new(0) };
}

/// Allocations made so far by the calling thread.
#[allow(dead_code)] // the example reads `ALLOCS` only
pub fn this_thread() -> u64 {
    MINE.with(Cell::get)
}

fn count() {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    // A thread being torn down has no counter left; it is not measured.
    let _ = MINE.try_with(|m| m.set(m.get() + 1));
}

// SAFETY: forwards to the system allocator, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's layout contract is passed on unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `System` with layout `l` (alloc above).
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: as for dealloc; the caller's size contract passes on.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
