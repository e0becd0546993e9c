//! The front end as an emulator embeds it: shared guest memory, program
//! bindings that follow shader re-creation, host writes that invalidate
//! what was cached.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::shader_builder::AgcBuilder;
use pm4core::backend::{Backend, Dispatch, Draw, QueueId};
use pm4core::memory::{FlatMemory, GuestMemory, SparseMemory};
use pm4core::packet::{Header, Opcode};
use pm4core::processor::{Env, ProcessStatus, Processor};
use pm4core::regs::gfx103 as r;
use pm4core::shader::{ShaderRegistry, ShaderType};

const CMD: u64 = 0x1000;
const HEADER_A: u64 = 0x10_0000;
const HEADER_B: u64 = 0x11_0000;
const CS_CODE: u64 = 0x20_0000;

fn pkt3(out: &mut Vec<u32>, op: Opcode, body: &[u32]) {
    out.push(Header::type3(op, body.len() as u32).0);
    out.extend_from_slice(body);
}

/// The header address of every program a dispatch or draw saw.
#[derive(Default)]
struct Programs {
    dispatches: Vec<Option<u64>>,
    draws: usize,
}

impl Backend for Programs {
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        self.dispatches.push(d.program.container.as_ref().map(|c| c.header_address()));
    }
    fn draw(&mut self, _: &Draw<'_>) {
        self.draws += 1;
    }
}

fn dispatch(cmd: &mut Vec<u32>) {
    pkt3(cmd, Opcode::DISPATCH_DIRECT, &[1, 1, 1, 1]);
}

#[test]
fn a_compute_shader_recreated_at_the_same_code_address_is_seen_after_a_draw() {
    let memory = SparseMemory::new();
    let container = AgcBuilder::new(ShaderType::Compute).build();
    memory.map_bytes(HEADER_A, &container).unwrap();
    memory.map_bytes(HEADER_B, &container).unwrap();
    memory.map_zeroed(CS_CODE, 0x1000).unwrap();
    let shaders = ShaderRegistry::new();
    shaders.create(&memory, HEADER_A, CS_CODE, false).unwrap();

    let mut first = Vec::new();
    pkt3(&mut first, Opcode::SET_SH_REG, &[r::COMPUTE_PGM_LO - 0x2C00, (CS_CODE >> 8) as u32, 0]);
    dispatch(&mut first);
    let mut second = Vec::new();
    pkt3(&mut second, Opcode::DRAW_INDEX_AUTO, &[3, 2]);
    dispatch(&mut second);
    memory.map_dwords(CMD, &first).unwrap();
    memory.map_dwords(CMD + 0x1000, &second).unwrap();

    let mut backend = Programs::default();
    let mut p = Processor::new(QueueId::GRAPHICS);
    p.submit(CMD, first.len() as u32).unwrap();
    let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
    assert_eq!(p.process(&mut env).unwrap(), ProcessStatus::Completed);
    // The guest re-creates the compute shader at the same code address from
    // another header; the next draw resolves the graphics stages first.
    shaders.create(&memory, HEADER_B, CS_CODE, false).unwrap();
    p.submit(CMD + 0x1000, second.len() as u32).unwrap();
    let mut env = Env { memory: &memory, backend: &mut backend, shaders: &shaders };
    assert_eq!(p.process(&mut env).unwrap(), ProcessStatus::Completed);
    assert_eq!(backend.draws, 1);
    assert_eq!(backend.dispatches, [Some(HEADER_A), Some(HEADER_B)]);
}

#[test]
fn flat_memory_behind_an_arc_serves_the_processor_and_the_cpu() {
    let ram = Arc::new(FlatMemory::new(0, 1 << 20).unwrap());
    let mut cmd = Vec::new();
    // ATOMIC_MEM add 5 (32-bit) at 0x8000, then WRITE_DATA 0x77 to 0x8008.
    pkt3(&mut cmd, Opcode::ATOMIC_MEM, &[0x0F, 0x8000, 0, 5, 0, 0, 0, 0]);
    pkt3(&mut cmd, Opcode::WRITE_DATA, &[5 << 8 | 1 << 20, 0x8008, 0, 0x77]);
    for (i, w) in cmd.iter().enumerate() {
        ram.write_u32(CMD + i as u64 * 4, *w).unwrap();
    }
    ram.write_u32(0x8000, 10).unwrap();
    let cpu = Arc::clone(&ram);
    let (mut backend, shaders) = (Programs::default(), ShaderRegistry::new());
    let mut p = Processor::new(QueueId::GRAPHICS);
    p.submit(CMD, cmd.len() as u32).unwrap();
    let memory: &dyn GuestMemory = &*ram;
    let mut env = Env { memory, backend: &mut backend, shaders: &shaders };
    assert_eq!(p.process(&mut env).unwrap(), ProcessStatus::Completed);
    assert_eq!(cpu.read_u32(0x8000).unwrap(), 15);
    assert_eq!(cpu.read_u32(0x8008).unwrap(), 0x77);
}

// ------------------------------------------------------------ the Gpu, embedded

use pm4core::backend::{Fence, NullBackend};
use pm4core::gpu::{Gpu, GpuConfig, GpuError, RunStatus};

/// WAIT_REG_MEM on memory: until `*address == value`.
fn wait_eq(out: &mut Vec<u32>, address: u64, value: u32) {
    pkt3(out, Opcode::WAIT_REG_MEM, &[3 | (1 << 4), address as u32, (address >> 32) as u32, value, !0, 4]);
}

/// WAIT_REG_MEM on memory: until `*address >= value`.
fn wait_ge(out: &mut Vec<u32>, address: u64, value: u32) {
    pkt3(out, Opcode::WAIT_REG_MEM, &[5 | (1 << 4), address as u32, (address >> 32) as u32, value, !0, 4]);
}

/// RELEASE_MEM BOTTOM_OF_PIPE_TS, interrupt after write confirm, 32-bit data.
fn release(out: &mut Vec<u32>, address: u64, data: u32) {
    pkt3(out, Opcode::RELEASE_MEM, &[0x28 | (5 << 8), (2 << 24) | (1 << 29), address as u32, 0, data, 0, 0]);
}

fn write_data(out: &mut Vec<u32>, address: u64, value: u32) {
    pkt3(out, Opcode::WRITE_DATA, &[(5 << 8) | (1 << 20), address as u32, (address >> 32) as u32, value]);
}

/// An emulator's RAM with command buffers placed from `CMD` on.
struct Ram {
    ram: Arc<FlatMemory>,
    next: u64,
}

const LABELS: u64 = 0x8_0000;

impl Ram {
    fn new() -> Self {
        Self { ram: Arc::new(FlatMemory::new(0, 4 << 20).unwrap()), next: CMD }
    }

    fn buffer(&mut self, words: &[u32]) -> (u64, u32) {
        let at = self.next;
        for (i, w) in words.iter().enumerate() {
            self.ram.write_u32(at + 4 * i as u64, *w).unwrap();
        }
        self.next += (words.len() as u64 * 4).next_multiple_of(256);
        (at, words.len() as u32)
    }
}

fn comp(pipe: u32, queue: u32) -> QueueId {
    QueueId::compute(pipe, queue).unwrap()
}

#[test]
fn notify_host_write_wakes_exactly_the_overlapping_waiters() {
    for threaded in [false, true] {
        let mut ram = Ram::new();
        let bufs: Vec<_> = (0..4u64)
            .map(|i| {
                let mut c = Vec::new();
                wait_eq(&mut c, LABELS + 8 * i, 1);
                write_data(&mut c, LABELS + 0x100 + 4 * i, 7);
                ram.buffer(&c)
            })
            .collect();
        // Notification alone: the GPU's own polling would see the stores.
        let config = GpuConfig { workers: 2, wait_polling: None, ..GpuConfig::default() };
        let gpu = if threaded {
            Gpu::threaded(Arc::clone(&ram.ram), NullBackend, config).unwrap()
        } else {
            Gpu::deterministic(Arc::clone(&ram.ram), NullBackend, config)
        };
        let handles: Vec<_> =
            bufs.iter().enumerate().map(|(i, b)| gpu.submit(comp(i as u32, 0), b.0, b.1).unwrap()).collect();
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(r) if r.queues.len() == 4));
        // The CPU writes two labels directly; nothing is woken before the notification.
        ram.ram.write_u32(LABELS + 8, 1).unwrap();
        ram.ram.write_u32(LABELS + 24, 1).unwrap();
        // A range touching neither label wakes nobody; one covering label 1 wakes queue 1 only.
        assert_eq!(gpu.notify_host_write(LABELS + 12, 4).unwrap(), 0);
        assert_eq!(gpu.notify_host_write(LABELS + 6, 4).unwrap(), 1);
        assert_eq!(gpu.notify_host_write(LABELS + 24, 4).unwrap(), 1);
        let RunStatus::Stalled(report) = gpu.run_until_stalled().unwrap() else { panic!("still stalled") };
        assert_eq!(report.queues.iter().map(|q| q.queue).collect::<Vec<_>>(), [comp(0, 0), comp(2, 0)]);
        assert!(handles[1].wait().is_ok() && handles[3].wait().is_ok());
        assert_eq!(ram.ram.read_u32(LABELS + 0x104).unwrap(), 7);
        assert_eq!(ram.ram.read_u32(LABELS + 0x100).unwrap(), 0);
        assert_eq!(gpu.stats().host_notifications, 3);
        assert_eq!(gpu.stats().wakes, 2);
    }
}

#[test]
fn a_waiting_host_thread_ends_its_wait_on_the_answer_or_its_deadline_whatever_its_spin() {
    // With a spin far longer than the test may take, every wait below must
    // end on its answer or its timeout, never on the spin's end; with none,
    // the host blocks at once.
    for spin in [Duration::from_secs(3600), Duration::ZERO] {
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            let mut ram = Ram::new();
            let mut c = Vec::new();
            wait_eq(&mut c, LABELS, 1);
            write_data(&mut c, LABELS + 4, 7);
            let b = ram.buffer(&c);
            let config = GpuConfig { workers: 1, host_spin: spin, ..GpuConfig::default() };
            let gpu = Gpu::threaded(Arc::clone(&ram.ram), NullBackend, config).unwrap();
            let h = gpu.submit(comp(0, 0), b.0, b.1).unwrap();
            // Ends when the queue has suspended (the worker says so).
            assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
            // No answer: the timeout ends the wait.
            assert_eq!(h.wait_timeout(Duration::from_millis(1)), None);
            ram.ram.write_u32(LABELS, 1).unwrap();
            assert_eq!(gpu.notify_host_write(LABELS, 4).unwrap(), 1);
            // The answer comes while it polls (or blocks).
            assert_eq!(h.wait().unwrap().waits, 1);
            assert_eq!(ram.ram.read_u32(LABELS + 4).unwrap(), 7);
            assert_eq!(gpu.run_until_idle(), Ok(()));
            let _ = done_tx.send(());
        });
        let outcome = done_rx.recv_timeout(Duration::from_secs(30));
        assert!(outcome.is_ok(), "spin {spin:?}: a host wait outlasted its answer or deadline ({outcome:?})");
    }
}

#[test]
fn notifications_of_unmapped_or_wrapping_ranges_are_errors() {
    let ram = Ram::new();
    let gpu = Gpu::threaded(Arc::clone(&ram.ram), NullBackend, GpuConfig::default()).unwrap();
    let unmapped = gpu.notify_host_write(4 << 20, 4).unwrap_err();
    assert!(matches!(unmapped, GpuError::HostWrite { address: 0x40_0000, len: 4, .. }), "{unmapped}");
    assert!(matches!(gpu.notify_host_write(u64::MAX - 2, 8), Err(GpuError::HostWrite { .. })));
    assert!(matches!(gpu.notify_host_write(1 << 48, 0), Err(GpuError::HostWrite { .. })));
    assert_eq!(gpu.stats().host_notifications, 0);
}

/// A compute container at `header` keyed by CS_CODE, and a buffer that
/// dispatches it; the backend records the header address it saw.
fn shader_setup(ram: &mut Ram) -> ((u64, u32), Vec<u8>) {
    let container = AgcBuilder::new(ShaderType::Compute).build();
    ram.ram.write_bytes(HEADER_A, &container).unwrap();
    let mut c = Vec::new();
    pkt3(&mut c, Opcode::SET_SH_REG, &[r::COMPUTE_PGM_LO - 0x2C00, (CS_CODE >> 8) as u32, 0]);
    dispatch(&mut c);
    (ram.buffer(&c), container)
}

#[derive(Default)]
struct SharedPrograms(Arc<parking_lot::Mutex<Vec<Option<u64>>>>);

impl Backend for SharedPrograms {
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        self.0.lock().push(d.program.container.as_ref().map(|c| c.header_address()));
    }
}

#[test]
fn every_host_write_path_drops_the_decoded_container() {
    // A host rewrite of the header that breaks it (bad magic): the next
    // dispatch must decode it again and find no container.
    for path in ["write_memory", "with_memory", "notify_host_write"] {
        let mut ram = Ram::new();
        let (buf, _) = shader_setup(&mut ram);
        let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let gpu = Gpu::threaded(Arc::clone(&ram.ram), SharedPrograms(Arc::clone(&seen)), GpuConfig::default()).unwrap();
        gpu.with_shared(|m, _, s| s.create(m, HEADER_A, CS_CODE, false).map(drop)).unwrap().unwrap();
        gpu.submit(QueueId::GRAPHICS, buf.0, buf.1).unwrap().wait().unwrap();
        let bad_magic = 0xDEAD_BEEFu32.to_le_bytes();
        match path {
            "write_memory" => drop(gpu.write_memory(HEADER_A, &bad_magic).unwrap()),
            "with_memory" => gpu.with_memory(|m| m.write_bytes(HEADER_A, &bad_magic).unwrap()),
            _ => {
                ram.ram.write_bytes(HEADER_A, &bad_magic).unwrap();
                gpu.notify_host_write(HEADER_A, 4).unwrap();
            }
        }
        gpu.submit(QueueId::GRAPHICS, buf.0, buf.1).unwrap().wait().unwrap();
        assert_eq!(*seen.lock(), [Some(HEADER_A), None], "{path}");
    }
}

/// Panics on its first dispatch.
struct Exploding;

impl Backend for Exploding {
    fn dispatch(&mut self, _: &Dispatch<'_>) {
        panic!("backend exploded");
    }
}

#[test]
fn a_panicking_backend_fails_its_submission_and_the_queue_goes_on() {
    let mut ram = Ram::new();
    let mut bad = Vec::new();
    dispatch(&mut bad);
    let bad = ram.buffer(&bad);
    let mut good = Vec::new();
    write_data(&mut good, LABELS, 5);
    let good = ram.buffer(&good);
    for threaded in [false, true] {
        let gpu = if threaded {
            Gpu::threaded(Arc::clone(&ram.ram), Exploding, GpuConfig::default()).unwrap()
        } else {
            Gpu::deterministic(Arc::clone(&ram.ram), Exploding, GpuConfig::default())
        };
        let h1 = gpu.submit(comp(1, 1), bad.0, bad.1).unwrap();
        let h2 = gpu.submit(comp(1, 1), good.0, good.1).unwrap();
        gpu.run_until_idle().unwrap();
        match h1.wait() {
            Err(GpuError::BackendPanicked { queue, message, .. }) => {
                assert_eq!(queue, comp(1, 1));
                assert_eq!(message, "backend exploded");
            }
            other => panic!("{other:?}"),
        }
        assert!(h2.wait().is_ok());
        assert_eq!(ram.ram.read_u32(LABELS).unwrap(), 5);
        ram.ram.write_u32(LABELS, 0).unwrap();
        assert_eq!(gpu.stats().failed, 1);
    }
}

#[test]
fn dropping_the_gpu_answers_threads_blocked_in_wait() {
    let mut ram = Ram::new();
    let mut c = Vec::new();
    wait_eq(&mut c, LABELS, 1);
    let c = ram.buffer(&c);
    let gpu = Gpu::threaded(Arc::clone(&ram.ram), NullBackend, GpuConfig::default()).unwrap();
    let handles: Vec<_> = (0..3).map(|q| gpu.submit(comp(q, 2), c.0, c.1).unwrap()).collect();
    let queued = gpu.submit(comp(0, 2), c.0, c.1).unwrap();
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
    std::thread::scope(|s| {
        let waiters: Vec<_> = handles.iter().chain([&queued]).map(|h| s.spawn(move || h.wait())).collect();
        drop(gpu);
        for w in waiters {
            assert_eq!(w.join().unwrap(), Err(GpuError::ShutDown));
        }
    });
}

/// Counts fences per queue (releases that retired).
#[derive(Default)]
struct FenceCount(Arc<parking_lot::Mutex<Vec<Fence>>>);

impl Backend for FenceCount {
    fn fence(&mut self, f: &Fence) {
        self.0.lock().push(*f);
    }
}

#[test]
fn stress_threads_submit_and_cpu_write_labels_concurrently() {
    // Four submitting threads, one per queue pair; each round a producer
    // queue waits for a CPU label, then writes a label its consumer queue
    // waits for; a CPU thread writes the labels directly and notifies.
    const THREADS: u64 = 4;
    const ROUNDS: u64 = 60;
    let ram = Arc::new(FlatMemory::new(0, 8 << 20).unwrap());
    let cmd_base = |t: u64, r: u64| 0x10_0000 + (t * ROUNDS + r) * 0x200;
    let cpu_label = |t: u64| LABELS + t * 0x40;
    let gpu_label = |t: u64| LABELS + t * 0x40 + 8;
    let out = |t: u64| LABELS + t * 0x40 + 16;
    for t in 0..THREADS {
        for r in 0..ROUNDS {
            let round = r as u32 + 1;
            let mut producer = Vec::new();
            wait_ge(&mut producer, cpu_label(t), round);
            write_data(&mut producer, gpu_label(t), round);
            let mut consumer = Vec::new();
            wait_ge(&mut consumer, gpu_label(t), round);
            write_data(&mut consumer, out(t), round);
            release(&mut consumer, out(t) + 4, round);
            for (i, w) in producer.iter().chain(consumer.iter()).enumerate() {
                ram.write_u32(cmd_base(t, r) + 4 * i as u64, *w).unwrap();
            }
        }
    }
    let fences = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let config = GpuConfig { workers: 2, slice_packets: 4, ..GpuConfig::default() };
    let gpu = Gpu::threaded(Arc::clone(&ram), FenceCount(Arc::clone(&fences)), config).unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (gpu, ram) = (&gpu, &ram);
            s.spawn(move || {
                let producer_q = if t == 0 { QueueId::GRAPHICS } else { comp(t as u32, 0) };
                let consumer_q = comp(t as u32, 1);
                let mut handles = Vec::new();
                for r in 0..ROUNDS {
                    let base = cmd_base(t, r);
                    handles.push(gpu.submit(producer_q, base, 12).unwrap());
                    handles.push(gpu.submit(consumer_q, base + 48, 20).unwrap());
                }
                for h in handles {
                    let report = h.wait().unwrap();
                    assert!(report.packets >= 2);
                }
                let _ = ram;
            });
        }
        // The CPU: advances every thread's label round by round, directly.
        s.spawn(|| {
            for r in 1..=ROUNDS as u32 {
                for t in 0..THREADS {
                    ram.write_u32(cpu_label(t), r).unwrap();
                    gpu.notify_host_write(cpu_label(t), 4).unwrap();
                }
                std::thread::yield_now();
            }
        });
    });
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Idle));
    for t in 0..THREADS {
        assert_eq!(ram.read_u32(cpu_label(t)).unwrap(), ROUNDS as u32);
        assert_eq!(ram.read_u32(gpu_label(t)).unwrap(), ROUNDS as u32);
        assert_eq!(ram.read_u32(out(t)).unwrap(), ROUNDS as u32);
    }
    let stats = gpu.stats();
    assert_eq!(stats.submissions, THREADS * ROUNDS * 2);
    assert_eq!(stats.completed, THREADS * ROUNDS * 2);
    assert_eq!(fences.lock().len() as u64, THREADS * ROUNDS);
}

/// What one queue's own backend saw: (the queue it was made for, the
/// queue of the call, the call).
type Seen = Arc<parking_lot::Mutex<Vec<(QueueId, QueueId, String)>>>;

/// One queue's recorder, made by [`PerQueue`].
struct QueueRecorder {
    queue: QueueId,
    seen: Seen,
}

impl Backend for QueueRecorder {
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        self.seen.lock().push((self.queue, d.queue, format!("dispatch {}", d.dims[0])));
    }
    fn fence(&mut self, f: &Fence) {
        self.seen.lock().push((self.queue, f.queue, format!("fence {}", f.data)));
    }
}

/// A renderer giving each queue its own recorder; it never sees a call
/// itself.
#[derive(Default)]
struct PerQueue {
    asked: Vec<QueueId>,
    seen: Seen,
    own_calls: u64,
}

impl Backend for PerQueue {
    fn queue_backend(&mut self, queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        self.asked.push(queue);
        Some(Box::new(QueueRecorder { queue, seen: Arc::clone(&self.seen) }))
    }
    fn dispatch(&mut self, _: &Dispatch<'_>) {
        self.own_calls += 1;
    }
    fn fence(&mut self, _: &Fence) {
        self.own_calls += 1;
    }
}

#[test]
fn each_queue_calls_its_own_backend_and_interrupts_still_reach_the_host() {
    for threaded in [false, true] {
        let mut ram = Ram::new();
        let queues = [QueueId::GRAPHICS, comp(0, 0), comp(3, 1)];
        let buffers: Vec<_> = queues
            .iter()
            .enumerate()
            .map(|(n, _)| {
                let mut c = Vec::new();
                for dims in 1..=3 {
                    pkt3(&mut c, Opcode::DISPATCH_DIRECT, &[10 * n as u32 + dims, 1, 1, 1]);
                }
                release(&mut c, LABELS + 8 * n as u64, n as u32 + 100);
                ram.buffer(&c)
            })
            .collect();
        let config = GpuConfig { workers: 2, slice_packets: 2, ..GpuConfig::default() };
        let gpu = if threaded {
            Gpu::threaded(Arc::clone(&ram.ram), PerQueue::default(), config).unwrap()
        } else {
            Gpu::deterministic(Arc::clone(&ram.ram), PerQueue::default(), config)
        };
        let handles: Vec<_> = queues.iter().zip(&buffers).map(|(&q, b)| gpu.submit(q, b.0, b.1).unwrap()).collect();
        gpu.run_until_idle().unwrap();
        for h in handles {
            assert_eq!(h.wait().unwrap().dispatches, 3);
        }
        for (n, &queue) in queues.iter().enumerate() {
            let interrupt = gpu.wait_interrupt(queue, std::time::Duration::from_secs(10)).unwrap().unwrap();
            assert_eq!((interrupt.fence.queue, interrupt.fence.data), (queue, n as u64 + 100));
        }
        let parts = gpu.into_parts().unwrap();
        let mut asked = parts.backend.asked.clone();
        asked.sort();
        assert_eq!(asked, queues, "asked once per queue that ran");
        assert_eq!(parts.backend.own_calls, 0);
        let seen = parts.backend.seen.lock().clone();
        for (n, &queue) in queues.iter().enumerate() {
            let calls: Vec<String> = seen
                .iter()
                .filter(|(made_for, _, _)| *made_for == queue)
                .map(|(_, q, c)| {
                    assert_eq!(*q, queue);
                    c.clone()
                })
                .collect();
            let base = 10 * n;
            let expected = [
                format!("dispatch {}", base + 1),
                format!("dispatch {}", base + 2),
                format!("dispatch {}", base + 3),
                format!("fence {}", n + 100),
            ];
            assert_eq!(calls, expected, "threaded: {threaded}");
        }
    }
}

#[test]
fn a_stall_reads_stall_and_a_declared_deadlock_reads_deadlock() {
    let mut ram = Ram::new();
    let mut c = Vec::new();
    wait_eq(&mut c, LABELS, 1);
    let c = ram.buffer(&c);
    let gpu = Gpu::threaded(Arc::clone(&ram.ram), NullBackend, GpuConfig::default()).unwrap();
    let h = gpu.submit(comp(1, 0), c.0, c.1).unwrap();
    let RunStatus::Stalled(report) = gpu.run_until_stalled().unwrap() else { panic!("not stalled") };
    let first = "1 queue waits and no host write is pending";
    assert_eq!(report.to_string().lines().next().unwrap(), format!("stall: {first}"));
    assert_eq!(gpu.declare_deadlock(), Ok(Some(report.clone())));
    let error = h.wait().unwrap_err();
    assert_eq!(error, GpuError::Deadlock(report));
    assert_eq!(error.to_string().lines().next().unwrap(), format!("deadlock: {first}"));
}

#[test]
fn a_resumed_queue_runs_the_command_dwords_the_cpu_rewrote_while_it_waited() {
    for threaded in [false, true] {
        let mut ram = Ram::new();
        let (flag, out) = (LABELS, LABELS + 0x40);
        let mut c = Vec::new();
        wait_eq(&mut c, flag, 1);
        write_data(&mut c, out, 1);
        let (at, len) = ram.buffer(&c);
        let gpu = if threaded {
            Gpu::threaded(Arc::clone(&ram.ram), NullBackend, GpuConfig::default()).unwrap()
        } else {
            Gpu::deterministic(Arc::clone(&ram.ram), NullBackend, GpuConfig::default())
        };
        let h = gpu.submit(comp(2, 3), at, len).unwrap();
        // Suspended in the wait, with the WRITE_DATA after it read ahead.
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        // The CPU rewrites the WRITE_DATA's value (its last dword), then the label.
        let value_dword = at + 4 * (u64::from(len) - 1);
        ram.ram.write_u32(value_dword, 2).unwrap();
        assert_eq!(gpu.notify_host_write(value_dword, 4).unwrap(), 0);
        ram.ram.write_u32(flag, 1).unwrap();
        assert_eq!(gpu.notify_host_write(flag, 4).unwrap(), 1);
        gpu.run_until_idle().unwrap();
        assert_eq!(h.wait().unwrap().packets, 2);
        assert_eq!(ram.ram.read_u32(out).unwrap(), 2, "threaded: {threaded}");
    }
}

#[test]
fn deterministic_waits_block_while_another_thread_drives_and_a_lone_driver_runs_to_completion() {
    let mut ram = Ram::new();
    let (flag, out) = (LABELS, LABELS + 0x40);
    let mut c = Vec::new();
    wait_eq(&mut c, flag, 1);
    write_data(&mut c, out, 9);
    let (at, len) = ram.buffer(&c);
    let gpu = Gpu::deterministic(Arc::clone(&ram.ram), NullBackend, GpuConfig::default());

    // A guest thread blocks in wait(); the emulator's thread drives.
    let h = gpu.submit(comp(1, 1), at, len).unwrap();
    std::thread::scope(|s| {
        let guest = s.spawn(|| h.wait());
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        assert!(!guest.is_finished());
        gpu.write_memory(flag, &1u32.to_le_bytes()).unwrap();
        gpu.run_until_idle().unwrap();
        let report = guest.join().unwrap().unwrap();
        assert_eq!((report.packets, report.waits), (2, 1));
    });
    assert_eq!(ram.ram.read_u32(out).unwrap(), 9);

    // One thread only: run_until_complete drives, and a stall is its answer.
    ram.ram.write_u32(flag, 0).unwrap();
    ram.ram.write_u32(out, 0).unwrap();
    gpu.notify_host_write(flag, 0x44).unwrap();
    let h = gpu.submit(comp(1, 1), at, len).unwrap();
    let Err(GpuError::Deadlock(report)) = gpu.run_until_complete(&h) else { panic!("not a stall") };
    assert_eq!(report.queues.len(), 1);
    assert_eq!(report.queues[0].queue, comp(1, 1));
    assert!(h.poll().is_none(), "nothing was cancelled");
    gpu.write_memory(flag, &1u32.to_le_bytes()).unwrap();
    let report = gpu.run_until_complete(&h).unwrap();
    assert_eq!((report.id, report.packets), (h.id(), 2));
    assert_eq!(ram.ram.read_u32(out).unwrap(), 9);
    // A completed submission answers at once.
    assert_eq!(gpu.run_until_complete(&h).unwrap(), report);
}
