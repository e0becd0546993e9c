//! Replay's peak heap stays within a small multiple of the trace file:
//! the file is read once into the buffer the trace keeps, memory regions
//! are mapped from those bytes without copying, pages are copied only when
//! written, and idle queues cost nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use pm4core::limits::{read_file, Limits};
use pm4core::replay::{replay, ReplayOptions};
use pm4core::trace::Trace;

struct Peak;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Peak {
    // SAFETY: forwards to the system allocator unchanged; only counts bytes.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    // SAFETY: forwards to the system allocator unchanged; only counts bytes.
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Peak = Peak;

#[test]
fn replay_peak_heap_beyond_written_pages_is_within_1_2_times_the_trace_size() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.retain(|p| p.extension().is_some_and(|e| e == "pm4t"));
    paths.sort();
    let mut report = String::new();
    let mut worst = 0.0f64;
    for path in paths {
        let size = std::fs::metadata(&path).unwrap().len() as usize;
        let base = CURRENT.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        // The file is read as `pm4 replay` reads it: once, into the buffer
        // the trace keeps (no second copy).
        let bytes = read_file(&path, Limits::default().max_file_bytes).unwrap();
        let trace = Trace::parse(bytes).unwrap();
        let outcome = replay(&trace, &ReplayOptions::default());
        assert!(outcome.succeeded());
        let written = outcome.written_page_bytes;
        drop(outcome);
        drop(trace);
        let peak = PEAK.load(Ordering::Relaxed) - base;
        // Pages the stream itself writes (DMA copies and fills into zero
        // regions) must be stored whatever the design: they are not counted.
        let ratio = (peak - written) as f64 / size as f64;
        worst = worst.max(ratio);
        report.push_str(&format!(
            "{}: file {size} B, peak {peak} B ({written} B of written pages), {ratio:.2}x\n",
            path.display()
        ));
    }
    println!("{report}");
    assert!(worst <= 1.2, "{report}");
}
