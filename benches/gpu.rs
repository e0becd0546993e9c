//! Costs of the GPU front end: a suspend/resume round trip (a queue waits on
//! a label, the host writes it, the queue resumes), scheduling one small
//! buffer on each of the 57 queues, in deterministic and threaded mode;
//! eight compute queues of dispatch-heavy streams on 1 and 2 workers (with
//! the null backend and with a per-queue recording backend, each also
//! measured interleaved: one run of each worker count in turn); and
//! the latency from a CPU write's notification to the resumed wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use pm4core::backend::{Backend, Dispatch, NullBackend, QueueId};
use pm4core::gpu::{Gpu, GpuConfig, RunStatus};
use pm4core::memory::{FlatMemory, GuestMemory, SparseMemory};

const CMD: u64 = 0x10_0000;
const DATA: u64 = 0x100_0000;

fn packet(out: &mut Vec<u32>, opcode: u8, body: &[u32]) {
    out.push(0xC000_0000 | ((body.len() as u32 - 1) << 16) | (u32::from(opcode) << 8));
    out.extend_from_slice(body);
}

fn write_data(out: &mut Vec<u32>, address: u64, value: u32) {
    packet(out, 0x37, &[(5 << 8) | (1 << 20), address as u32, (address >> 32) as u32, value]);
}

fn wait_eq(out: &mut Vec<u32>, address: u64, value: u32) {
    packet(out, 0x3C, &[3 | (1 << 4), address as u32, (address >> 32) as u32, value, 0xFFFF_FFFF, 4]);
}

/// RELEASE_MEM writing 32-bit data, no interrupt.
fn release(out: &mut Vec<u32>, address: u64, value: u32) {
    packet(out, 0x49, &[0x28 | (5 << 8), 1 << 29, address as u32, (address >> 32) as u32, value, 0, 0]);
}

struct Setup {
    memory: SparseMemory,
    next: u64,
}

impl Setup {
    fn new() -> Self {
        let memory = SparseMemory::new();
        memory.map_zeroed(CMD, 0x10_0000).unwrap();
        memory.map_zeroed(DATA, 0x1_0000).unwrap();
        Self { memory, next: CMD }
    }

    fn buffer(&mut self, dwords: &[u32]) -> (u64, u32) {
        let address = self.next;
        let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.memory.write_bytes(address, &bytes).unwrap();
        self.next = (address + bytes.len() as u64 + 255) & !255;
        (address, dwords.len() as u32)
    }
}

/// A buffer that waits for the label to be 1, then clears it.
fn round_trip_setup() -> (SparseMemory, (u64, u32)) {
    let mut s = Setup::new();
    let mut c = Vec::new();
    wait_eq(&mut c, DATA, 1);
    write_data(&mut c, DATA, 0);
    let buffer = s.buffer(&c);
    (s.memory, buffer)
}

/// One small buffer per queue: four writes and a release.
fn all_queues_setup() -> (SparseMemory, Vec<(u64, u32)>) {
    let mut s = Setup::new();
    let buffers = (0..QueueId::COUNT)
        .map(|q| {
            let base = DATA + 0x100 + u64::from(q) * 32;
            let mut c = Vec::new();
            for i in 0..4 {
                write_data(&mut c, base + i * 4, q * 16 + i as u32);
            }
            release(&mut c, base + 16, q);
            s.buffer(&c)
        })
        .collect();
    (s.memory, buffers)
}

fn suspend_resume(c: &mut Criterion) {
    let mut group = c.benchmark_group("suspend_resume");
    let label = 1u32.to_le_bytes();
    let queue = QueueId::compute(0, 0).unwrap();

    let (memory, buffer) = round_trip_setup();
    let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig::default());
    group.bench_function("deterministic", |b| {
        b.iter(|| {
            let h = gpu.submit(queue, buffer.0, buffer.1).unwrap();
            assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
            gpu.write_memory(DATA, &label).unwrap();
            gpu.run_until_idle().unwrap();
            h.poll()
        })
    });
    drop(gpu);

    let (memory, buffer) = round_trip_setup();
    let gpu = Gpu::threaded(memory, NullBackend, GpuConfig::default()).unwrap();
    group.bench_function("threaded", |b| {
        b.iter(|| {
            let h = gpu.submit(queue, buffer.0, buffer.1).unwrap();
            // The write is applied at once: let the queue suspend first.
            assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
            gpu.write_memory(DATA, &label).unwrap();
            let report = h.wait().unwrap();
            assert_eq!(report.waits, 1);
            report
        })
    });
    group.finish();
}

fn schedule_57_queues(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_57_queues");

    let (memory, buffers) = all_queues_setup();
    let gpu = Gpu::deterministic(memory, NullBackend, GpuConfig::default());
    group.bench_function("deterministic", |b| {
        b.iter(|| {
            for (q, &(address, size)) in buffers.iter().enumerate() {
                gpu.submit(QueueId(q as u32), address, size).unwrap();
            }
            gpu.run_until_idle().unwrap();
        })
    });
    drop(gpu);

    let (memory, buffers) = all_queues_setup();
    let gpu = Gpu::threaded(memory, NullBackend, GpuConfig::default()).unwrap();
    group.bench_function("threaded", |b| {
        b.iter(|| {
            let handles: Vec<_> = buffers
                .iter()
                .enumerate()
                .map(|(q, &(address, size))| gpu.submit(QueueId(q as u32), address, size).unwrap())
                .collect();
            for h in &handles {
                h.wait().unwrap();
            }
        })
    });
    group.finish();
}

/// Eight compute queues, each a stream of 4000 dispatches with user-data
/// writes between them, in one flat memory.
fn dispatch_heavy_setup() -> (Arc<FlatMemory>, Vec<(QueueId, u64, u32)>) {
    let ram = Arc::new(FlatMemory::new(0, 16 << 20).unwrap());
    let mut next = CMD;
    let streams = (0..8u32)
        .map(|q| {
            let mut c = Vec::new();
            for i in 0..4000u32 {
                // SET_SH_REG COMPUTE_USER_DATA_0..1, then DISPATCH_DIRECT.
                packet(&mut c, 0x76, &[0x240, i, q]);
                packet(&mut c, 0x15, &[1 + i % 7, 1, 1, 1]);
            }
            for (i, w) in c.iter().enumerate() {
                ram.write_u32(next + 4 * i as u64, *w).unwrap();
            }
            let stream = (QueueId::compute(q % 7, q / 7).unwrap(), next, c.len() as u32);
            next += (c.len() as u64 * 4).next_multiple_of(256);
            stream
        })
        .collect();
    (ram, streams)
}

/// A renderer's per-queue command recorder: each dispatch encoded as a
/// few words into the queue's own list (real work per backend call).
struct Recorder {
    words: Vec<u32>,
}

impl Backend for Recorder {
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        if self.words.len() >= 1 << 16 {
            self.words.clear();
        }
        let program = d.program.address as u32;
        self.words.extend_from_slice(&[0xD15, d.dims[0], d.dims[1], d.dims[2], d.initiator, program]);
        let user_data = d.registers.get(0x2C00 + 0x240);
        self.words.push(user_data.rotate_left(7) ^ d.location.address() as u32);
    }
}

/// The renderer: one recorder per queue (`Backend::queue_backend`).
struct Renderer;

impl Backend for Renderer {
    fn queue_backend(&mut self, _queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        Some(Box::new(Recorder { words: Vec::with_capacity(1 << 16) }))
    }
}

/// Runs the eight streams once and waits for them.
fn run_streams<B: Backend + Send + 'static>(gpu: &Gpu<Arc<FlatMemory>, B>, streams: &[(QueueId, u64, u32)]) {
    let handles: Vec<_> = streams.iter().map(|&(q, a, n)| gpu.submit(q, a, n).unwrap()).collect();
    for h in &handles {
        assert_eq!(h.wait().unwrap().dispatches, 4000);
    }
}

/// One worker against two on the same streams, one run of each in turn
/// (so both see the same machine load): the bench's time is the pair's,
/// and the median of each and of the ratio of neighbouring runs is printed.
/// Each run here starts from a parked pool while the other GPU's worker may
/// still be polling, so it measures a cold start: the ratio comes out lower
/// than the `1_workers`/`2_workers` benches, where one GPU runs back to back.
fn bench_interleaved<B: Backend + Send + 'static>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    ram: &Arc<FlatMemory>,
    streams: &[(QueueId, u64, u32)],
    backend: impl Fn() -> B,
) {
    let gpus: Vec<_> = [1usize, 2]
        .iter()
        .map(|&workers| {
            Gpu::threaded(Arc::clone(ram), backend(), GpuConfig { workers, ..GpuConfig::default() }).unwrap()
        })
        .collect();
    let time = |gpu| {
        let start = Instant::now();
        run_streams(gpu, streams);
        start.elapsed()
    };
    let pairs = std::cell::RefCell::new(Vec::new());
    group.bench_function(format!("interleaved_{name}"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (one, two) = (time(&gpus[0]), time(&gpus[1]));
                pairs.borrow_mut().push((one, two));
                total += one + two;
            }
            total
        })
    });
    let pairs = pairs.into_inner();
    if pairs.is_empty() {
        return;
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let one = median(pairs.iter().map(|p| p.0.as_secs_f64() * 1e3).collect());
    let two = median(pairs.iter().map(|p| p.1.as_secs_f64() * 1e3).collect());
    let ratio = median(pairs.iter().map(|p| p.0.as_secs_f64() / p.1.as_secs_f64()).collect());
    println!(
        "parallel_compute_8_queues/interleaved_{name}: 1 worker median {one:.3} ms, 2 workers median {two:.3} ms, \
         ratio median {ratio:.2} over {} pairs",
        pairs.len()
    );
}

fn parallel_queues(c: &mut Criterion) {
    let mut group = c.benchmark_group("parallel_compute_8_queues");
    let (ram, streams) = dispatch_heavy_setup();
    bench_interleaved(&mut group, "null_backend", &ram, &streams, || NullBackend);
    bench_interleaved(&mut group, "recording_backend", &ram, &streams, || Renderer);
    for workers in [1usize, 2] {
        let config = GpuConfig { workers, ..GpuConfig::default() };
        let gpu = Gpu::threaded(Arc::clone(&ram), NullBackend, config.clone()).unwrap();
        group.bench_function(format!("{workers}_workers"), |b| b.iter(|| run_streams(&gpu, &streams)));
        drop(gpu);
        let gpu = Gpu::threaded(Arc::clone(&ram), Renderer, config).unwrap();
        group
            .bench_function(format!("{workers}_workers_recording_backend"), |b| b.iter(|| run_streams(&gpu, &streams)));
    }
    group.finish();
}

/// From the CPU's notification to the waiting submission's completion: a
/// queue waits on a label, the CPU writes it directly and notifies.
fn notify_to_resume(c: &mut Criterion) {
    let mut group = c.benchmark_group("notify_to_resumed_wait");
    let ram = Arc::new(FlatMemory::new(0, 32 << 20).unwrap());
    let mut cmd = Vec::new();
    wait_eq(&mut cmd, DATA, 1);
    write_data(&mut cmd, DATA, 0);
    for (i, w) in cmd.iter().enumerate() {
        ram.write_u32(CMD + 4 * i as u64, *w).unwrap();
    }
    let queue = QueueId::compute(0, 0).unwrap();
    let gpu = Gpu::threaded(Arc::clone(&ram), NullBackend, GpuConfig::default()).unwrap();
    // `parked`: the workers have gone to sleep before the write.
    for (name, pause) in [("spinning_worker", Duration::ZERO), ("parked_worker", Duration::from_millis(1))] {
        let one = |pause: Duration| {
            let h = gpu.submit(queue, CMD, cmd.len() as u32).unwrap();
            assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
            std::thread::sleep(pause);
            let start = Instant::now();
            ram.write_u32(DATA, 1).unwrap();
            gpu.notify_host_write(DATA, 4).unwrap();
            h.wait().unwrap();
            start.elapsed()
        };
        let mut samples: Vec<Duration> = (0..400).map(|_| one(pause)).collect();
        samples.sort();
        println!("notify_to_resumed_wait/{name}: median {:?} over {} runs", samples[samples.len() / 2], samples.len());
        group.bench_function(name, |b| b.iter_custom(|iters| (0..iters).map(|_| one(pause)).sum()));
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    targets = suspend_resume, schedule_57_queues, parallel_queues, notify_to_resume
}
criterion_main!(benches);
