//! Host-mapped guest memory as an emulator that maps guest RAM itself uses
//! it: the contract, mappings refused for what can be checked, accesses that
//! span two mappings, and a threaded GPU over it woken by stores nobody
//! notifies, under a CPU thread and four submitting threads.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pm4core::backend::{NullBackend, QueueId};
use pm4core::gpu::{Gpu, GpuConfig, RunStatus};
use pm4core::memory::{contract, GuestMemory, MemoryError};
use pm4core::packet::body::CompareFunction;
use pm4core::packet::builder::CommandBuffer;
use pm4core_hostmem::{HostMappedMemory, HostMapping, MappingError};

/// The emulator's RAM: host memory it owns and keeps for the test's length.
struct Ram {
    words: Box<[u64]>,
}

impl Ram {
    fn new(bytes: usize) -> Self {
        Self { words: vec![0u64; bytes / 8].into_boxed_slice() }
    }

    fn host(&mut self, offset: usize) -> *mut u8 {
        self.words.as_mut_ptr().cast::<u8>().wrapping_add(offset)
    }

    fn len(&self) -> usize {
        self.words.len() * 8
    }

    /// One mapping of the whole RAM at `guest_base`.
    fn map(&mut self, guest_base: u64) -> HostMappedMemory {
        let mapping = HostMapping { guest_base, host: self.host(0), len: self.len() };
        // SAFETY: the RAM lives until the end of the test that maps it (the
        // memory is dropped first) and is only reached through the mapping.
        unsafe { HostMappedMemory::new(&[mapping]) }.unwrap()
    }
}

#[test]
fn host_mapped_memory_meets_the_contract() {
    let mut ram = Ram::new(0x4000);
    let memory = ram.map(0x1_0000_0000);
    contract::check(&memory, 0x1_0000_1000, 0x2000).unwrap();
    drop(memory);
    // The GPU's writes are the emulator's bytes (the 4 threads' counter).
    assert_eq!(ram.words[(0x1000 + 1024) / 8] as u32, 4000);
}

#[test]
fn mappings_are_checked_and_an_access_may_span_two() {
    let mut ram = Ram::new(0x4000);
    let (a, b) = (ram.host(0), ram.host(0x2000));
    // SAFETY (for each `new` below): `ram` outlives every memory made here
    // and is only reached through them.
    let misaligned = unsafe { HostMappedMemory::new(&[HostMapping { guest_base: 0x1004, host: a, len: 16 }]) };
    assert!(matches!(misaligned, Err(MappingError::Misaligned { guest_base: 0x1004, .. })));
    let overlap = unsafe {
        HostMappedMemory::new(&[
            HostMapping { guest_base: 0x1000, host: a, len: 0x2000 },
            HostMapping { guest_base: 0x2000, host: b, len: 0x1000 },
        ])
    };
    assert_eq!(overlap.unwrap_err(), MappingError::Overlap { first: 0x1000, second: 0x2000 });
    let beyond = unsafe { HostMappedMemory::new(&[HostMapping { guest_base: (1 << 48) - 8, host: a, len: 16 }]) };
    assert!(matches!(beyond, Err(MappingError::OutOfRange { .. })));
    let null = unsafe { HostMappedMemory::new(&[HostMapping { guest_base: 0, host: std::ptr::null_mut(), len: 16 }]) };
    assert_eq!(null.unwrap_err(), MappingError::InvalidHost { guest_base: 0 });
    // Two host blocks at contiguous guest addresses, in either order.
    let memory = unsafe {
        HostMappedMemory::new(&[
            HostMapping { guest_base: 0x9000, host: b, len: 0x1000 },
            HostMapping { guest_base: 0x8000, host: a, len: 0x1000 },
        ])
    }
    .unwrap();
    assert_eq!(memory.mappings().collect::<Vec<_>>(), [(0x8000, 0x1000), (0x9000, 0x1000)]);
    memory.write_bytes(0x8FFC, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    assert_eq!(memory.read_u64(0x8FFC).unwrap(), 0x0807_0605_0403_0201);
    assert_eq!(memory.read_u32(0xA000), Err(MemoryError::Unmapped { address: 0xA000, len: 4 }));
    // A write that runs off the end writes nothing.
    assert_eq!(memory.write_bytes(0x9FFE, &[9; 4]), Err(MemoryError::Unmapped { address: 0x9FFE, len: 4 }));
    assert_eq!(memory.read_u32(0x9FFC).unwrap(), 0);
    // A compare-exchange across the two mappings is refused, not split.
    assert_eq!(memory.compare_exchange_u64(0x8FFC, 0, 1), Err(MemoryError::Misaligned { address: 0x8FFC }));
    drop(memory);
    assert_eq!(ram.words[0x1FF], 0x0403_0201 << 32);
    assert_eq!(ram.words[0x400], 0x0807_0605);
}

#[test]
fn a_threaded_gpu_over_host_mapped_memory_is_woken_by_stores_nobody_notifies() {
    const ROUNDS: u32 = 40;
    const LABELS: u64 = 0x8_0000;
    let mut ram = Ram::new(4 << 20);
    let memory = Arc::new(ram.map(0));
    let queues = [
        QueueId::GRAPHICS,
        QueueId::compute(0, 0).unwrap(),
        QueueId::compute(3, 1).unwrap(),
        QueueId::compute(6, 7).unwrap(),
    ];
    let gpu = Arc::new(
        Gpu::threaded(Arc::clone(&memory), NullBackend, GpuConfig { workers: 2, ..GpuConfig::default() }).unwrap(),
    );
    // Four submitting threads: each queue waits on its label round by
    // round and records the round it saw.
    let submitters: Vec<_> = queues
        .iter()
        .enumerate()
        .map(|(q, &queue)| {
            let (gpu, memory) = (Arc::clone(&gpu), Arc::clone(&memory));
            std::thread::spawn(move || {
                let label = LABELS + 0x100 * q as u64;
                (1..=ROUNDS)
                    .map(|round| {
                        let mut cb = CommandBuffer::new();
                        cb.wait_mem(label, CompareFunction::GreaterEqual, round, u32::MAX)
                            .unwrap()
                            .write_mem(label + 4, &[round])
                            .unwrap();
                        let at = 0x1000 + 0x1_0000 * q as u64 + 0x100 * u64::from(round);
                        memory.write_bytes(at, &cb.to_bytes()).unwrap();
                        gpu.submit(queue, at, cb.len_dw()).unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    // The CPU thread stores each label when its queue has caught up,
    // never telling the GPU.
    let cpu = {
        let memory = Arc::clone(&memory);
        std::thread::spawn(move || {
            for round in 1..=ROUNDS {
                for q in 0..4u64 {
                    let label = LABELS + 0x100 * q;
                    let start = Instant::now();
                    while memory.read_u32(label + 4).unwrap() + 1 < round && start.elapsed() < Duration::from_secs(30) {
                        std::thread::yield_now();
                    }
                    memory.write_u32(label, round).unwrap();
                }
            }
        })
    };
    let handles: Vec<_> = submitters.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(handles.into_iter().map(|h| h.wait().map(|r| r.waits <= 1)).collect::<Vec<_>>());
    });
    let results = rx.recv_timeout(Duration::from_secs(60)).expect("every submission completes (no hang)");
    cpu.join().unwrap();
    assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
    for q in 0..4u64 {
        assert_eq!(memory.read_u32(LABELS + 0x100 * q + 4).unwrap(), ROUNDS);
    }
    let stats = gpu.stats();
    assert_eq!(stats.host_notifications, 0);
    assert_eq!(stats.completed, 4 * u64::from(ROUNDS));
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Idle));
    gpu.shutdown();
    drop(gpu);
    drop(memory);
    // The GPU wrote the emulator's own bytes.
    assert_eq!(ram.words[(LABELS as usize + 4) / 8] >> 32, u64::from(ROUNDS));
}
