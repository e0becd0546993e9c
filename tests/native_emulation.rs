//! The GPU as an emulator that runs guest code natively embeds it: stores
//! nobody notifies, memory the emulator owns (each kind meets the
//! contract), callbacks that call back into the GPU, a shared GPU shut down
//! while threads wait, submissions checked before they run, panics told by
//! whose they were, and a builder that refuses what does not fit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pm4core::backend::{
    Backend, CacheAction, Dispatch, Draw, Event, Fence, Flip, Marker, NotEmulated, NullBackend, QueueId,
    RecordingBackend, UnknownPacket,
};
use pm4core::gpu::{Gpu, GpuConfig, GpuError, RunStatus, WaitPolling};
use pm4core::memory::{contract, FlatMemory, GuestMemory, HostAccess, MemoryError, SparseMemory, TranslatedMemory};
use pm4core::packet::body::{CompareFunction, SetRegisters, WriteData};
use pm4core::packet::builder::{BuildError, CommandBuffer, Signal, MAX_BODY_DW};
use pm4core::packet::{Header, Opcode, PacketLocation};
use pm4core::processor::ProcessorConfig;
use pm4core::regs::gfx103 as r;

const CMD: u64 = 0x1000;
const LABEL: u64 = 0x8_0000;

fn comp(pipe: u32, queue: u32) -> QueueId {
    QueueId::compute(pipe, queue).unwrap()
}

/// Places `cb` in `memory` at `at`; returns its size.
fn place(memory: &dyn GuestMemory, at: u64, cb: &CommandBuffer) -> u32 {
    memory.write_bytes(at, &cb.to_bytes()).unwrap();
    cb.len_dw()
}

/// WAIT_REG_MEM `*label == 1`, then WRITE_DATA 7 to `label + 4`.
fn wait_then_write(label: u64) -> CommandBuffer {
    let mut cb = CommandBuffer::new();
    cb.wait_mem(label, CompareFunction::Equal, 1, u32::MAX).unwrap().write_mem(label + 4, &[7]).unwrap();
    cb
}

/// Fails the test (instead of hanging it) when `f` takes longer than `limit`.
fn within<R: Send + 'static>(limit: Duration, what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(_) => panic!("{what} did not finish within {limit:?} (a hang)"),
    }
}

// ---------------------------------------------------------------- memory kinds

/// An emulator's own page table, reached through its functions.
#[derive(Default)]
struct PageTable {
    pages: Mutex<HashMap<u64, Box<[u8; 4096]>>>,
}

impl PageTable {
    fn with_pages(base: u64, len: u64) -> Self {
        let table = Self::default();
        for page in base / 4096..(base + len) / 4096 {
            table.pages.lock().insert(page, Box::new([0; 4096]));
        }
        table
    }

    fn access(&self, address: u64, len: usize, mut f: impl FnMut(&mut u8, usize)) -> Result<(), MemoryError> {
        let mut pages = self.pages.lock();
        if !(0..len as u64).all(|i| pages.contains_key(&((address + i) / 4096))) {
            return Err(MemoryError::Unmapped { address, len: len as u64 });
        }
        for i in 0..len {
            let a = address + i as u64;
            if let Some(page) = pages.get_mut(&(a / 4096)) {
                f(&mut page[(a % 4096) as usize], i);
            }
        }
        Ok(())
    }
}

impl HostAccess for PageTable {
    fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let mut bytes = vec![0u8; out.len()];
        self.access(address, out.len(), |b, i| bytes[i] = *b)?;
        out.copy_from_slice(&bytes);
        Ok(())
    }
    fn write(&self, address: u64, data: &[u8]) -> Result<(), MemoryError> {
        self.access(address, data.len(), |b, i| *b = data[i])
    }
    fn is_mapped(&self, address: u64, len: u64) -> bool {
        let pages = self.pages.lock();
        (address / 4096..=(address + len - 1) / 4096).all(|p| pages.contains_key(&p))
    }
    fn compare_exchange_u32(&self, address: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
        // One lock over the read and the write: indivisible.
        let mut pages = self.pages.lock();
        let page = pages.get_mut(&(address / 4096)).ok_or(MemoryError::Unmapped { address, len: 4 })?;
        let at = (address % 4096) as usize;
        let seen = u32::from_le_bytes(page[at..at + 4].try_into().unwrap());
        if seen != current {
            return Ok(Err(seen));
        }
        page[at..at + 4].copy_from_slice(&new.to_le_bytes());
        Ok(Ok(seen))
    }
    fn compare_exchange_u64(&self, address: u64, current: u64, new: u64) -> Result<Result<u64, u64>, MemoryError> {
        let mut pages = self.pages.lock();
        let page = pages.get_mut(&(address / 4096)).ok_or(MemoryError::Unmapped { address, len: 8 })?;
        let at = (address % 4096) as usize;
        let seen = u64::from_le_bytes(page[at..at + 8].try_into().unwrap());
        if seen != current {
            return Ok(Err(seen));
        }
        page[at..at + 8].copy_from_slice(&new.to_le_bytes());
        Ok(Ok(seen))
    }
}

#[test]
fn every_memory_kind_of_the_crate_meets_the_contract() {
    contract::check(&FlatMemory::new(0x1000, 0x4000).unwrap(), 0x2000, 0x10_0000).unwrap();
    let sparse = SparseMemory::new();
    sparse.map_zeroed(0x1000, 0x4000).unwrap();
    contract::check(&sparse, 0x2000, 0x10_0000).unwrap();
    let shared = SparseMemory::new();
    shared.map_bytes(0x1000, &[0xEE; 0x4000]).unwrap();
    contract::check(&shared, 0x1000, 0x10_0000).unwrap();
    contract::check(&TranslatedMemory::new(PageTable::with_pages(0x1000, 0x4000)), 0x2000, 0x10_0000).unwrap();
}

#[test]
fn the_contract_check_catches_a_read_modify_write_that_is_not_one() {
    /// Compare-exchange made of a read and a write with a yield between:
    /// what the old default `atomic_update` was.
    struct Torn(PageTable);
    impl HostAccess for Torn {
        fn read(&self, a: u64, o: &mut [u8]) -> Result<(), MemoryError> {
            self.0.read(a, o)
        }
        fn write(&self, a: u64, d: &[u8]) -> Result<(), MemoryError> {
            self.0.write(a, d)
        }
        fn is_mapped(&self, a: u64, l: u64) -> bool {
            self.0.is_mapped(a, l)
        }
        fn compare_exchange_u32(&self, a: u64, current: u32, new: u32) -> Result<Result<u32, u32>, MemoryError> {
            let mut b = [0u8; 4];
            self.0.read(a, &mut b)?;
            let seen = u32::from_le_bytes(b);
            std::thread::yield_now();
            if seen != current {
                return Ok(Err(seen));
            }
            self.0.write(a, &new.to_le_bytes()).map(|()| Ok(seen))
        }
        fn compare_exchange_u64(&self, a: u64, c: u64, n: u64) -> Result<Result<u64, u64>, MemoryError> {
            self.0.compare_exchange_u64(a, c, n)
        }
    }
    let torn = TranslatedMemory::new(Torn(PageTable::with_pages(0x1000, 0x4000)));
    let violation = contract::check(&torn, 0x2000, 0x10_0000).unwrap_err();
    assert!(violation.what.starts_with("4 threads x 1000 atomic increments"), "{violation}");
}

// ------------------------------------------------------ stores nobody notifies

/// A threaded GPU over `memory` waits on a label; a CPU thread stores it
/// without telling the GPU; the wait ends by the GPU's polling alone, with
/// the effect of the packet after it.
fn unnotified_store_wakes_the_wait<M: GuestMemory + Clone + 'static>(memory: M) {
    let size = place(&memory, CMD, &wait_then_write(LABEL));
    let gpu = Gpu::threaded(memory.clone(), NullBackend, GpuConfig { workers: 1, ..GpuConfig::default() }).unwrap();
    let done = gpu.submit(comp(0, 0), CMD, size).unwrap();
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
    memory.write_u32(LABEL, 1).unwrap(); // no notify_host_write
    let report = within(Duration::from_secs(20), "the polled wait", move || done.wait()).unwrap();
    assert_eq!((report.waits, report.packets), (1, 2));
    assert_eq!(memory.read_u32(LABEL + 4).unwrap(), 7);
    let stats = gpu.stats();
    assert_eq!((stats.host_notifications, stats.poll_wakes), (0, 1));
    assert!(stats.poll_rounds >= 1);
}

#[test]
fn an_unnotified_store_wakes_a_wait_in_flat_memory() {
    unnotified_store_wakes_the_wait(Arc::new(FlatMemory::new(0, 1 << 20).unwrap()));
}

#[test]
fn an_unnotified_store_wakes_a_wait_in_sparse_memory() {
    let memory = Arc::new(SparseMemory::new());
    memory.map_zeroed(0, 1 << 20).unwrap();
    unnotified_store_wakes_the_wait(memory);
}

#[test]
fn an_unnotified_store_wakes_a_wait_in_translated_memory() {
    unnotified_store_wakes_the_wait(Arc::new(TranslatedMemory::new(PageTable::with_pages(0, 1 << 20))));
}

#[test]
fn without_polling_an_unnotified_store_is_not_seen_and_a_notification_is() {
    let memory = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
    let size = place(&*memory, CMD, &wait_then_write(LABEL));
    let config = GpuConfig { workers: 1, wait_polling: None, ..GpuConfig::default() };
    let gpu = Gpu::threaded(Arc::clone(&memory), NullBackend, config).unwrap();
    let done = gpu.submit(comp(0, 0), CMD, size).unwrap();
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
    memory.write_u32(LABEL, 1).unwrap();
    assert!(done.wait_timeout(Duration::from_millis(20)).is_none());
    assert_eq!(gpu.stats().poll_rounds, 0);
    gpu.notify_host_write(LABEL, 4).unwrap();
    assert_eq!(done.wait().unwrap().waits, 1);
}

#[test]
fn a_wait_resumed_by_polling_ends_as_one_resumed_by_a_notification() {
    // The same stream (a wait, then a release with an interrupt) gives the
    // same log and memory whether the store is notified or polled.
    let run = |notify: bool| {
        let memory = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
        let mut cb = wait_then_write(LABEL);
        cb.release32(LABEL + 8, 0x55, Signal::Interrupt).unwrap();
        let size = place(&*memory, CMD, &cb);
        let config = GpuConfig { workers: 1, ..GpuConfig::default() };
        let gpu = Gpu::threaded(Arc::clone(&memory), RecordingBackend::new(), config).unwrap();
        let done = gpu.submit(comp(1, 2), CMD, size).unwrap();
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        memory.write_u32(LABEL, 1).unwrap();
        if notify {
            gpu.notify_host_write(LABEL, 4).unwrap();
        }
        let report = done.wait().unwrap();
        let log = gpu.with_backend(|b| b.lines.clone()).unwrap();
        let bytes: Vec<u32> = (0..3).map(|i| memory.read_u32(LABEL + 4 * i).unwrap()).collect();
        (report.waits, report.fences, log, bytes)
    };
    let notified = run(true);
    assert_eq!(notified, run(false));
    assert_eq!(notified.3, [1, 7, 0x55]);
}

#[test]
fn threaded_gpu_stress_resumed_by_polling_alone() {
    // 4 queues, each a chain of 50 waits on labels a CPU thread stores in
    // turn without ever notifying; every wait must end, every write land.
    const ROUNDS: u32 = 50;
    let memory = Arc::new(FlatMemory::new(0, 4 << 20).unwrap());
    let queues = [comp(0, 0), comp(1, 0), comp(2, 3), QueueId::GRAPHICS];
    let mut handles = Vec::new();
    let config = GpuConfig {
        workers: 2,
        wait_polling: Some(WaitPolling { first: Duration::from_micros(5), ceiling: Duration::from_micros(200) }),
        ..GpuConfig::default()
    };
    let gpu = Gpu::threaded(Arc::clone(&memory), NullBackend, config).unwrap();
    for (q, queue) in queues.iter().enumerate() {
        let label = LABEL + 0x100 * q as u64;
        let mut cb = CommandBuffer::new();
        for round in 1..=ROUNDS {
            cb.wait_mem(label, CompareFunction::GreaterEqual, round, u32::MAX).unwrap();
            cb.write_mem(label + 4, &[round]).unwrap();
        }
        let at = CMD + 0x10_000 * q as u64;
        let size = place(&*memory, at, &cb);
        handles.push(gpu.submit(*queue, at, size).unwrap());
    }
    let cpu = {
        let memory = Arc::clone(&memory);
        std::thread::spawn(move || {
            for round in 1..=ROUNDS {
                for q in 0..4u64 {
                    let label = LABEL + 0x100 * q;
                    // Wait (bounded) until the queue caught up, then store.
                    let start = Instant::now();
                    while memory.read_u32(label + 4).unwrap() + 1 < round && start.elapsed() < Duration::from_secs(20) {
                        std::thread::yield_now();
                    }
                    memory.write_u32(label, round).unwrap();
                }
            }
        })
    };
    let results = within(Duration::from_secs(60), "the polled stress", move || {
        handles.into_iter().map(|h| h.wait()).collect::<Vec<_>>()
    });
    cpu.join().unwrap();
    for result in results {
        assert_eq!(result.unwrap().packets, 2 * u64::from(ROUNDS));
    }
    for q in 0..4u64 {
        assert_eq!(memory.read_u32(LABEL + 0x100 * q + 4).unwrap(), ROUNDS);
    }
    assert_eq!(gpu.stats().host_notifications, 0);
    assert!(gpu.stats().poll_wakes >= 1);
}

// ------------------------------------------------------------- stall reports

#[test]
fn a_momentary_stall_is_not_reported_and_a_lasting_one_is_once() {
    let memory = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
    let size = place(&*memory, CMD, &wait_then_write(LABEL));
    let config = GpuConfig { workers: 1, stall_report_delay: Duration::from_millis(300), ..GpuConfig::default() };
    let gpu = Gpu::threaded(Arc::clone(&memory), NullBackend, config).unwrap();
    let stalls = gpu.stall_reports();
    let done = gpu.submit(comp(0, 0), CMD, size).unwrap();
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
    // Resolved at once: well under the delay.
    memory.write_u32(LABEL, 1).unwrap();
    gpu.notify_host_write(LABEL, 4).unwrap();
    done.wait().unwrap();
    assert_eq!(stalls.recv_timeout(Duration::from_millis(600)).unwrap(), None);
    assert_eq!(gpu.stats().stalls, 0);
    // A stall that lasts: reported once.
    memory.write_u32(LABEL + 0x100, 0).unwrap();
    let size = place(&*memory, CMD + 0x1000, &wait_then_write(LABEL + 0x100));
    let _waiting = gpu.submit(comp(0, 1), CMD + 0x1000, size).unwrap();
    let report = stalls.recv_timeout(Duration::from_secs(20)).unwrap().expect("a lasting stall is reported");
    assert_eq!(report.queues[0].queue, comp(0, 1));
    assert_eq!(report.queues[0].reason.watched_address(), Some(LABEL + 0x100));
    assert_eq!(stalls.recv_timeout(Duration::from_millis(100)).unwrap(), None);
    assert_eq!(gpu.stats().stalls, 1);
}

#[test]
fn a_full_interrupt_channel_counts_what_it_drops() {
    let memory = SparseMemory::new();
    memory.map_zeroed(0, 1 << 20).unwrap();
    let mut cb = CommandBuffer::new();
    for i in 0..5 {
        cb.release32(LABEL, i, Signal::Interrupt).unwrap();
    }
    let size = place(&memory, CMD, &cb);
    let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig { interrupt_capacity: 2, ..GpuConfig::default() });
    let interrupts = gpu.interrupts(QueueId::GRAPHICS).unwrap();
    gpu.submit(QueueId::GRAPHICS, CMD, size).unwrap();
    gpu.run_until_idle().unwrap();
    let kept: Vec<u64> = interrupts.try_iter().map(|i| i.fence.data).collect();
    assert_eq!(kept, [3, 4]);
    assert_eq!(interrupts.dropped(), 3);
    assert_eq!((gpu.stats().interrupts, gpu.stats().interrupts_dropped), (5, 3));
}

// -------------------------------------------------------- checked submissions

#[test]
fn a_submission_is_checked_before_anything_runs() {
    let memory = SparseMemory::new();
    memory.map_zeroed(0x1000, 0x1000).unwrap();
    let gpu = Gpu::deterministic(memory, RecordingBackend::new(), GpuConfig::default());
    let refused = |address, size_dw| gpu.submit(QueueId::GRAPHICS, address, size_dw).unwrap_err();
    assert_eq!(
        refused(0x1002, 4),
        GpuError::InvalidSubmission {
            queue: QueueId::GRAPHICS,
            address: 0x1002,
            size_dw: 4,
            source: MemoryError::Misaligned { address: 0x1002 }
        }
    );
    // An overrun past the mapping: refused whole, not after earlier packets ran.
    assert!(matches!(
        refused(0x1F00, 0x80),
        GpuError::InvalidSubmission { source: MemoryError::Unmapped { address: 0x1F00, len: 0x200 }, .. }
    ));
    // An empty submission at an unmapped address.
    assert!(matches!(refused(0x8000, 0), GpuError::InvalidSubmission { source: MemoryError::Unmapped { .. }, .. }));
    assert!(matches!(
        refused(u64::MAX - 3, 1),
        GpuError::InvalidSubmission { source: MemoryError::OutOfRange { .. }, .. }
    ));
    assert_eq!(gpu.submit(QueueId(57), 0x1000, 1).unwrap_err(), GpuError::QueueOutOfRange { queue: 57 });
    // Refused submissions still take their id; nothing ran.
    let ok = gpu.submit(QueueId::GRAPHICS, 0x1000, 0).unwrap();
    assert_eq!(ok.id().0, 4);
    gpu.run_until_idle().unwrap();
    assert_eq!(gpu.stats().submissions, 1);
    assert_eq!(gpu.with_backend(|b| b.lines.len()).unwrap(), 0);
    // The message says what and where.
    assert_eq!(
        refused(0x1002, 4).to_string(),
        "submission of 4 dwords at 0x1002 on gfx refused: guest address 0x1002 is not aligned for this access"
    );
}

// ------------------------------------------------------------------- panics

#[test]
fn a_panic_is_told_as_the_memorys_the_backends_or_pm4cores() {
    struct PanickyMemory(SparseMemory, u64);
    impl GuestMemory for PanickyMemory {
        fn read_bytes(&self, a: u64, o: &mut [u8]) -> Result<(), MemoryError> {
            self.0.read_bytes(a, o)
        }
        fn write_bytes(&self, a: u64, d: &[u8]) -> Result<(), MemoryError> {
            assert_ne!(a, self.1, "the memory's own bug");
            self.0.write_bytes(a, d)
        }
        fn is_mapped(&self, a: u64, l: u64) -> bool {
            self.0.is_mapped(a, l)
        }
        fn read_u32(&self, a: u64) -> Result<u32, MemoryError> {
            self.0.read_u32(a)
        }
        fn read_u64(&self, a: u64) -> Result<u64, MemoryError> {
            self.0.read_u64(a)
        }
        fn write_u32(&self, a: u64, v: u32) -> Result<(), MemoryError> {
            assert_ne!(a, self.1, "the memory's own bug");
            self.0.write_u32(a, v)
        }
        fn write_u64(&self, a: u64, v: u64) -> Result<(), MemoryError> {
            self.0.write_u64(a, v)
        }
        fn compare_exchange_u32(&self, a: u64, c: u32, n: u32) -> Result<Result<u32, u32>, MemoryError> {
            self.0.compare_exchange_u32(a, c, n)
        }
        fn compare_exchange_u64(&self, a: u64, c: u64, n: u64) -> Result<Result<u64, u64>, MemoryError> {
            self.0.compare_exchange_u64(a, c, n)
        }
    }
    struct PanickyBackend;
    impl Backend for PanickyBackend {
        fn draw(&mut self, _: &Draw<'_>) {
            panic!("the renderer's own bug");
        }
    }
    let sparse = SparseMemory::new();
    sparse.map_zeroed(0, 0x10000).unwrap();
    let mut cb = CommandBuffer::new();
    cb.write_mem(0x8000, &[1]).unwrap();
    let write = place(&sparse, CMD, &cb);
    let mut cb = CommandBuffer::new();
    cb.pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]).unwrap();
    let draw = place(&sparse, CMD + 0x100, &cb);
    let gpu = Gpu::deterministic(PanickyMemory(sparse, 0x8000), PanickyBackend, GpuConfig::default());
    let first = gpu.submit(QueueId::GRAPHICS, CMD, write).unwrap();
    let second = gpu.submit(QueueId::GRAPHICS, CMD + 0x100, draw).unwrap();
    let third = gpu.submit(QueueId::GRAPHICS, CMD + 0x100, 0).unwrap();
    gpu.run_until_idle().unwrap();
    let Some(Err(GpuError::MemoryPanicked { message, .. })) = first.poll() else { panic!("{:?}", first.poll()) };
    assert!(message.starts_with("assertion `left != right` failed: the memory's own bug"), "{message}");
    assert!(
        matches!(second.poll(), Some(Err(GpuError::BackendPanicked { message, .. })) if message == "the renderer's own bug")
    );
    // The queue went on.
    assert_eq!(third.poll().unwrap().unwrap().packets, 0);
}

// ------------------------------------------------------------------ shutdown

#[test]
fn shutdown_through_an_arc_wakes_every_waiter_and_later_calls_answer_shut_down() {
    let memory = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
    let size = place(&*memory, CMD, &wait_then_write(LABEL));
    let gpu = Arc::new(Gpu::threaded(Arc::clone(&memory), NullBackend, GpuConfig::default()).unwrap());
    let waiting = gpu.submit(comp(0, 0), CMD, size).unwrap();
    let queued = gpu.submit(comp(0, 0), CMD, size).unwrap();
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
    let interrupts = gpu.interrupts(comp(0, 0)).unwrap();
    let stalls = gpu.stall_reports();
    let mut waiters: Vec<std::thread::JoinHandle<(&str, Result<(), GpuError>)>> = Vec::new();
    {
        let gpu = Arc::clone(&gpu);
        waiters.push(std::thread::spawn(move || {
            ("wait_interrupt", gpu.wait_interrupt(comp(0, 0), Duration::from_secs(60)).map(drop))
        }));
    }
    waiters.push(std::thread::spawn(move || ("InterruptReceiver::recv", interrupts.recv().map(drop))));
    waiters.push(std::thread::spawn(move || {
        // Take the one report of the stall first, then wait for another.
        let _ = stalls.recv_timeout(Duration::from_secs(10));
        ("StallReceiver::recv", stalls.recv().map(drop))
    }));
    {
        let waiting = waiting.clone();
        waiters.push(std::thread::spawn(move || ("Submission::wait", waiting.wait().map(drop))));
    }
    waiters.push(std::thread::spawn(move || ("queued Submission::wait", queued.wait().map(drop))));
    std::thread::sleep(Duration::from_millis(50));
    let gpu_for_shutdown = Arc::clone(&gpu);
    within(Duration::from_secs(20), "shutdown", move || gpu_for_shutdown.shutdown());
    for waiter in waiters {
        let (what, result) = within(Duration::from_secs(20), "a waiter", move || waiter.join().unwrap());
        assert_eq!(result, Err(GpuError::ShutDown), "{what}");
    }
    // Idempotent; later calls that give work answer ShutDown; looks still work.
    gpu.shutdown();
    assert_eq!(gpu.submit(comp(0, 0), CMD, size).unwrap_err(), GpuError::ShutDown);
    assert_eq!(gpu.write_memory(LABEL, &[1]).unwrap_err(), GpuError::ShutDown);
    assert_eq!(gpu.notify_host_write(LABEL, 4).unwrap_err(), GpuError::ShutDown);
    assert_eq!(gpu.run_until_idle().unwrap_err(), GpuError::ShutDown);
    assert_eq!(gpu.interrupts(comp(0, 0)).unwrap_err(), GpuError::ShutDown);
    assert_eq!(gpu.declare_deadlock().unwrap_err(), GpuError::ShutDown);
    assert_eq!(gpu.processor_stats(comp(0, 0)).unwrap().waits, 1);
    assert_eq!(memory.read_u32(LABEL + 4).unwrap(), 0);
}

#[test]
fn shutdown_of_a_deterministic_gpu_cancels_queued_host_writes_and_submissions() {
    let memory = SparseMemory::new();
    memory.map_zeroed(0, 1 << 20).unwrap();
    let size = place(&memory, CMD, &wait_then_write(LABEL));
    let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig::default());
    let submitted = gpu.submit(QueueId::GRAPHICS, CMD, size).unwrap();
    let write = gpu.write_memory(LABEL, &1u32.to_le_bytes()).unwrap();
    gpu.shutdown();
    assert_eq!(submitted.wait(), Err(GpuError::ShutDown));
    assert_eq!(write.wait(), Err(GpuError::ShutDown));
    assert_eq!(gpu.with_memory_ref(|m| m.read_u32(LABEL).unwrap()), 0);
}

// ------------------------------------------------------ callbacks call back

/// What one call from a callback answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    Worked,
    Refused,
}

/// Calls every `Gpu` method from inside a callback and notes each answer:
/// `Worked` or `Refused` (CalledFromCallback); anything else fails the test.
fn call_everything<B: Backend + Send + 'static>(
    gpu: &Gpu<Arc<FlatMemory>, B>,
    own: QueueId,
) -> Vec<(&'static str, Answer)> {
    // Work submitted from the callbacks goes to `idle`; `untouched` never
    // has any (so no worker has its processor out).
    let (idle, untouched) = (comp(6, 7), comp(4, 4));
    let mut answers = Vec::new();
    let mut note = |what: &'static str, result: Result<(), GpuError>| {
        let answer = match result {
            Ok(()) => Answer::Worked,
            Err(GpuError::CalledFromCallback { .. }) => Answer::Refused,
            Err(other) => panic!("{what} from a callback answered {other}"),
        };
        answers.push((what, answer));
    };
    let mut nop = CommandBuffer::new();
    nop.pkt3(Opcode::NOP, &[0]).unwrap();
    let size = place(&**gpu.memory(), 0xF_0000, &nop);
    note("submit", gpu.submit(idle, 0xF_0000, size).map(drop));
    let fresh = gpu.submit(idle, 0xF_0000, size);
    note("write_memory", gpu.write_memory(LABEL + 0x800, &[1, 2, 3, 4]).map(drop));
    note("notify_host_write", gpu.notify_host_write(LABEL + 0x800, 4).map(drop));
    note("run_until_stalled", gpu.run_until_stalled().map(drop));
    note("run_until_idle", gpu.run_until_idle());
    match fresh {
        Ok(handle) => note("run_until_complete", gpu.run_until_complete(&handle).map(drop)),
        Err(e) => panic!("submit from a callback: {e}"),
    }
    if !gpu.is_threaded() {
        note("run_slices", gpu.run_slices(1).map(drop));
    }
    let _ = gpu.stall_report();
    let _ = gpu.stall_reports().try_recv();
    note("declare_deadlock", gpu.declare_deadlock().map(drop));
    note("abort (an idle queue)", gpu.abort(comp(5, 5)).map(drop));
    note("interrupts", gpu.interrupts(own).map(drop));
    note("wait_interrupt", gpu.wait_interrupt(idle, Duration::ZERO).map(drop));
    gpu.with_memory(|m| m.write_u32(LABEL + 0x900, 1).unwrap());
    gpu.with_memory_ref(|m| m.read_u32(LABEL + 0x900).unwrap());
    note("with_backend", gpu.with_backend(|_| ()));
    gpu.with_shaders(|s| s.len());
    note("with_shared", gpu.with_shared(|_, _, _| ()));
    note("with_processor (own queue)", gpu.with_processor(own, |_| ()));
    note("with_processor (idle queue)", gpu.with_processor(untouched, |_| ()));
    note("with_processor_and_memory", gpu.with_processor_and_memory(own, |_, _| ()));
    note("with_registers_mut", gpu.with_registers_mut(own, |_| ()));
    note("processor_stats (own queue)", gpu.processor_stats(own).map(drop));
    note("processor_stats (idle queue)", gpu.processor_stats(untouched).map(drop));
    note("queue_status", gpu.queue_status(own).map(drop));
    let _ = (gpu.global(), gpu.stats(), gpu.memory(), gpu.is_threaded(), gpu.workers());
    answers
}

/// Where a backend finds the `Gpu` it belongs to (set once it exists).
type GpuCell<B> = Arc<OnceLock<Weak<Gpu<Arc<FlatMemory>, B>>>>;

/// What each callback kind's calls answered.
type Answers = Arc<StdMutex<HashMap<&'static str, Vec<(&'static str, Answer)>>>>;

/// A backend whose every callback calls [`call_everything`] once per kind.
struct CallingBack {
    gpu: GpuCell<CallingBack>,
    seen: Answers,
    per_queue: bool,
    queue: QueueId,
}

impl CallingBack {
    fn call(&mut self, kind: &'static str) {
        if self.seen.lock().unwrap().contains_key(kind) {
            return;
        }
        self.seen.lock().unwrap().insert(kind, Vec::new());
        let Some(gpu) = self.gpu.get().and_then(Weak::upgrade) else { return };
        let answers = call_everything(&gpu, self.queue);
        self.seen.lock().unwrap().insert(kind, answers);
    }
}

impl Backend for CallingBack {
    fn packet(&mut self, _: QueueId, _: Header, _: &PacketLocation) {
        self.call("packet");
    }
    fn draw(&mut self, _: &Draw<'_>) {
        self.call("draw");
    }
    fn dispatch(&mut self, _: &Dispatch<'_>) {
        self.call("dispatch");
    }
    fn event(&mut self, _: &Event) {
        self.call("event");
    }
    fn cache_action(&mut self, _: QueueId, _: &CacheAction) {
        self.call("cache_action");
    }
    fn fence(&mut self, _: &Fence) {
        self.call("fence");
    }
    fn flip(&mut self, _: &Flip) {
        self.call("flip");
    }
    fn marker(&mut self, _: QueueId, _: &Marker<'_>) {
        self.call("marker");
    }
    fn host_command(&mut self, _: QueueId, _: u32, _: &[u32]) {
        self.call("host_command");
    }
    fn not_emulated(&mut self, _: &NotEmulated) {
        self.call("not_emulated");
    }
    fn unknown_packet(&mut self, _: &UnknownPacket) {
        self.call("unknown_packet");
    }
    fn skipped_indirect_buffer(&mut self, _: QueueId, _: &PacketLocation, _: u64, _: u32) {
        self.call("skipped_indirect_buffer");
    }
    fn gpu_clock(&mut self) -> Option<u64> {
        self.call("gpu_clock");
        Some(1234)
    }
    fn queue_backend(&mut self, queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        self.call("queue_backend");
        self.per_queue.then(|| {
            Box::new(CallingBack { gpu: Arc::clone(&self.gpu), seen: Arc::clone(&self.seen), per_queue: true, queue })
                as Box<dyn Backend + Send>
        })
    }
}

/// A stream that makes every callback kind fire once on the graphics queue.
fn every_callback(memory: &FlatMemory) -> u32 {
    let mut cb = CommandBuffer::new();
    cb.pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]).unwrap(); // draw
    cb.compute(&pm4core::packet::body::DispatchDirect { dims: [1, 1, 1], initiator: 1 }).unwrap(); // dispatch
    cb.pkt3(Opcode::EVENT_WRITE, &[0x16]).unwrap(); // event (a plain one)
    cb.pkt3(Opcode::ACQUIRE_MEM, &[0, u32::MAX, 0xFF_FFFF, 0, 0, 10, 0]).unwrap(); // cache action
    cb.release32(LABEL, 1, Signal::Interrupt).unwrap(); // fence
    cb.flip().unwrap(); // flip
    cb.pkt3(Opcode::NOP, &[0x6875_0002]).unwrap(); // marker (pop)
    cb.pkt3(Opcode::NOP, &[pm4core::processor::HOST_COMMAND_SIGNATURE | 7, 1]).unwrap(); // host command
    cb.pkt3(Opcode::GET_LOD_STATS, &[0, 0, 0]).unwrap(); // not emulated
    cb.pkt3(Opcode(0xEE), &[0]).unwrap(); // unknown
    cb.pkt3(Opcode::INDIRECT_BUFFER, &[0x40_0000, 0x7000, 4 | (1 << 23)]).unwrap(); // skipped IB
    cb.pkt3(Opcode::COPY_DATA, &[9 | (5 << 8) | (1 << 16) | (1 << 20), 0, 0, LABEL as u32 + 0x40, 0]).unwrap(); // GPU clock
    place(memory, CMD, &cb)
}

#[test]
fn every_gpu_method_from_every_callback_works_or_says_why_not() {
    for threaded in [false, true] {
        for per_queue in [false, true] {
            let memory = Arc::new(FlatMemory::new(0, 4 << 20).unwrap());
            let size = every_callback(&memory);
            let seen = Arc::new(StdMutex::new(HashMap::new()));
            let cell = Arc::new(OnceLock::new());
            let backend =
                CallingBack { gpu: Arc::clone(&cell), seen: Arc::clone(&seen), per_queue, queue: QueueId::GRAPHICS };
            let config = GpuConfig {
                workers: 2,
                processor: ProcessorConfig {
                    report_packets: true,
                    skip_unmapped_ibs: true,
                    host_commands: vec![(7, pm4core::processor::HostCommand::Custom)],
                    ..ProcessorConfig::default()
                },
                ..GpuConfig::default()
            };
            let gpu = Arc::new(if threaded {
                Gpu::threaded(Arc::clone(&memory), backend, config).unwrap()
            } else {
                Gpu::deterministic(Arc::clone(&memory), backend, config)
            });
            cell.set(Arc::downgrade(&gpu)).ok();
            let done = gpu.submit(QueueId::GRAPHICS, CMD, size).unwrap();
            let gpu2 = Arc::clone(&gpu);
            within(Duration::from_secs(60), "the callback matrix", move || {
                gpu2.run_until_idle().unwrap();
            });
            done.wait().unwrap();
            let seen = seen.lock().unwrap();
            let mut kinds: Vec<_> = seen.keys().copied().collect();
            kinds.sort_unstable();
            assert_eq!(
                kinds,
                [
                    "cache_action",
                    "dispatch",
                    "draw",
                    "event",
                    "fence",
                    "flip",
                    "gpu_clock",
                    "host_command",
                    "marker",
                    "not_emulated",
                    "packet",
                    "queue_backend",
                    "skipped_indirect_buffer",
                    "unknown_packet"
                ],
                "threaded {threaded}, per-queue {per_queue}"
            );
            for (kind, answers) in seen.iter() {
                let refused: Vec<&str> =
                    answers.iter().filter(|(_, a)| *a == Answer::Refused).map(|(what, _)| *what).collect();
                // The backend's lock is held by a slice whose calls go to
                // it (and always while the factory is asked).
                let shared = !per_queue || *kind == "queue_backend";
                let mut want = vec!["run_until_stalled", "run_until_idle", "run_until_complete"];
                if !threaded {
                    want.push("run_slices");
                }
                if shared {
                    want.extend(["with_backend", "with_shared"]);
                }
                want.extend([
                    "with_processor (own queue)",
                    "with_processor_and_memory",
                    "with_registers_mut",
                    "processor_stats (own queue)",
                ]);
                assert_eq!(refused, want, "{kind}: threaded {threaded}, per-queue {per_queue}");
            }
        }
    }
}

#[test]
fn shutdown_from_a_callback_stops_the_gpu_without_joining_itself() {
    struct ShutsDown(GpuCell<ShutsDown>, Arc<AtomicBool>);
    impl Backend for ShutsDown {
        fn draw(&mut self, _: &Draw<'_>) {
            if let Some(gpu) = self.0.get().and_then(Weak::upgrade) {
                gpu.shutdown();
                self.1.store(true, Ordering::SeqCst);
            }
        }
    }
    for threaded in [false, true] {
        let memory = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
        let mut cb = CommandBuffer::new();
        cb.pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]).unwrap().write_mem(LABEL, &[9]).unwrap();
        let size = place(&*memory, CMD, &cb);
        let cell = Arc::new(OnceLock::new());
        let done_flag = Arc::new(AtomicBool::new(false));
        let backend = ShutsDown(Arc::clone(&cell), Arc::clone(&done_flag));
        let gpu = Arc::new(if threaded {
            Gpu::threaded(Arc::clone(&memory), backend, GpuConfig::default()).unwrap()
        } else {
            Gpu::deterministic(Arc::clone(&memory), backend, GpuConfig::default())
        });
        cell.set(Arc::downgrade(&gpu)).ok();
        let handle = gpu.submit(QueueId::GRAPHICS, CMD, size).unwrap();
        let gpu2 = Arc::clone(&gpu);
        let run = within(Duration::from_secs(20), "a run that shuts down", move || gpu2.run_until_idle());
        assert!(done_flag.load(Ordering::SeqCst));
        assert_eq!(handle.wait(), Err(GpuError::ShutDown));
        if !threaded {
            assert_eq!(run, Err(GpuError::ShutDown));
        }
        within(Duration::from_secs(20), "dropping the GPU", move || drop(gpu));
    }
}

// ------------------------------------------------------------------ builder

#[test]
fn the_builder_refuses_what_does_not_fit_and_leaves_the_buffer_as_it_was() {
    let mut cb = CommandBuffer::new();
    cb.pkt3(Opcode::NOP, &[0]).unwrap();
    let before = cb.dwords().to_vec();
    let long = vec![0u32; MAX_BODY_DW + 1];
    assert_eq!(
        cb.pkt3(Opcode::NOP, &long).unwrap_err(),
        BuildError::BodyTooLong { opcode: Opcode::NOP, dwords: 0x4000 }
    );
    assert!(cb.pkt3(Opcode::NOP, &long[..MAX_BODY_DW]).is_ok());
    cb.dwords_mut();
    let mut cb = CommandBuffer::new();
    cb.pkt3(Opcode::NOP, &[0]).unwrap();
    let values = vec![0u32; MAX_BODY_DW];
    assert!(matches!(
        cb.packet(&WriteData::memory(0x1000, &values)),
        Err(BuildError::BodyTooLong { opcode: Opcode::WRITE_DATA, dwords: 0x4002 })
    ));
    assert_eq!(cb.call(0x1000, 0x10_0000).unwrap_err(), BuildError::IndirectBufferSize { size_dw: 0x10_0000 });
    assert_eq!(cb.chain(0x1000, 0).unwrap_err(), BuildError::IndirectBufferSize { size_dw: 0 });
    assert_eq!(cb.call(0x1002, 4).unwrap_err(), BuildError::BadAddress { address: 0x1002, alignment: 4 });
    assert_eq!(cb.write_mem(1 << 48, &[1]).unwrap_err(), BuildError::BadAddress { address: 1 << 48, alignment: 4 });
    assert_eq!(
        cb.set_context(r::SPI_SHADER_PGM_LO_PS, &[1]).unwrap_err(),
        BuildError::RegisterOutsideSpace {
            opcode: Opcode::SET_CONTEXT_REG,
            register: r::SPI_SHADER_PGM_LO_PS,
            space_start: 0xA000,
            space_end: 0xC000
        }
    );
    // A run that starts inside the space and leaves it.
    assert!(matches!(cb.set_sh(0x2FFF, &[1, 2]), Err(BuildError::RegisterOutsideSpace { .. })));
    assert_eq!(cb.set_uconfig(r::VGT_PRIMITIVE_TYPE, &[]).unwrap_err(), BuildError::NoRegisterValues);
    // A typed body whose field does not fit its bits.
    let wide = SetRegisters { opcode: Opcode::SET_SH_REG, offset: 0x1_0000, index: 0, values: &[1] };
    assert!(
        matches!(cb.packet(&wide), Err(BuildError::FieldDoesNotFit { opcode: Opcode::SET_SH_REG, .. })),
        "{:?}",
        cb.packet(&wide)
    );
    assert_eq!(
        cb.release64(0x1004, 1, Signal::Silent).unwrap_err(),
        BuildError::BadAddress { address: 0x1004, alignment: 8 }
    );
    assert_eq!(cb.patch(cb.label(), 3, 0).unwrap_err(), BuildError::PatchOutOfRange { index: 5, len_dw: 2 });
    assert_eq!(cb.dwords(), &before[..]);
}

#[test]
fn the_builder_writes_into_a_callers_buffer_and_says_when_it_is_full() {
    let mut guest = [0xFFFF_FFFFu32; 12];
    {
        let mut cb = CommandBuffer::in_buffer(&mut guest);
        cb.flip().unwrap();
        cb.event_write_eop(0x28, LABEL, 5, Signal::Silent).unwrap();
        assert_eq!(cb.remaining_dw(), 4);
        assert_eq!(
            cb.release32(LABEL, 1, Signal::Interrupt).unwrap_err(),
            BuildError::BufferFull { capacity_dw: 12, used_dw: 8, needed_dw: 8 }
        );
        assert_eq!(cb.len_dw(), 8);
    }
    let want = [
        // The flip: NOP 0x68750777.
        0xC000_1000,
        0x6875_0777,
        // EVENT_WRITE_EOP BOTTOM_OF_PIPE_TS, DATA_SEL 1, INT_SEL 0, data 5.
        0xC004_4700,
        0x28 | (5 << 8),
        LABEL as u32,
        1 << 29,
        5,
        0,
        // Untouched.
        0xFFFF_FFFF,
        0xFFFF_FFFF,
        0xFFFF_FFFF,
        0xFFFF_FFFF,
    ];
    assert_eq!(guest, want);
}

#[test]
fn the_builders_flip_fence_and_releases_run_as_they_say() {
    let memory = SparseMemory::new();
    memory.map_zeroed(0, 1 << 20).unwrap();
    let mut cb = CommandBuffer::new();
    cb.flip_with_label(LABEL, 3).unwrap();
    cb.event_write_eop(0x28, LABEL + 8, 5, Signal::Interrupt).unwrap();
    cb.release32(LABEL + 16, 6, Signal::Silent).unwrap();
    cb.release64(LABEL + 24, 0x1_0000_0007, Signal::Interrupt).unwrap();
    let size = place(&memory, CMD, &cb);
    let gpu = Gpu::deterministic(memory, RecordingBackend::new(), GpuConfig::default());
    let interrupts = gpu.interrupts(QueueId::GRAPHICS).unwrap();
    gpu.submit(QueueId::GRAPHICS, CMD, size).unwrap();
    gpu.run_until_idle().unwrap();
    let read = |a| gpu.with_memory_ref(|m| m.read_u64(a).unwrap());
    assert_eq!([read(LABEL), read(LABEL + 8), read(LABEL + 16), read(LABEL + 24)], [3, 5, 6, 0x1_0000_0007]);
    let raised: Vec<u64> = interrupts.try_iter().map(|i| i.fence.data).collect();
    assert_eq!(raised, [5, 0x1_0000_0007]);
    let log = gpu.with_backend(|b| b.lines.clone()).unwrap();
    assert_eq!(log[0], format!("gfx flip kind=0x778 label={:#x}=0x3", LABEL));
    assert_eq!(log.len(), 4);
}
