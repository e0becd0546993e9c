//! The GPU as a native emulator uses it, measured in one run (medians and
//! 99th percentiles of many round trips; CPU time from the kernel's
//! accounting, the figures `getrusage(RUSAGE_SELF)` reports, read from
//! `/proc/self/stat`):
//!
//! - submit → completion of a one-packet submission;
//! - a host write with notification → the waiting submission's completion;
//! - an un-notified store → completion, the store made right after the
//!   queue suspended, after a random delay of up to 100 µs, and 5 ms after
//!   (the polling has backed off by then);
//! - the CPU an idle threaded GPU spends when each of its 57 queues waits
//!   on a label nobody writes, over 10 s;
//! - how long shutdown takes to wake a thread waiting on the GPU.
//!
//! `cargo bench --bench native` (`NATIVE_BENCH_IDLE_SECS` shortens the idle
//! measurement).

use std::sync::Arc;
use std::time::{Duration, Instant};

use pm4core::backend::{NullBackend, QueueId};
use pm4core::gpu::{Gpu, GpuConfig};
use pm4core::memory::{FlatMemory, GuestMemory};
use pm4core::packet::body::CompareFunction;
use pm4core::packet::builder::CommandBuffer;

const CMD: u64 = 0x1000;
const LABELS: u64 = 0x8_0000;

fn percentiles(mut samples: Vec<Duration>) -> String {
    samples.sort_unstable();
    let at = |p: f64| samples.get(((samples.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default();
    format!("median {:>8.2?}  p99 {:>8.2?}  ({} runs)", at(0.5), at(0.99), samples.len())
}

/// User + system CPU time of this process so far.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; `rest` starts at field 3.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    let ticks = field(14) + field(15);
    Duration::from_millis(ticks * 10)
}

/// A tiny xorshift for the random delays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn spin_for(delay: Duration) {
    let start = Instant::now();
    while start.elapsed() < delay {
        std::hint::spin_loop();
    }
}

fn main() {
    let ram = Arc::new(FlatMemory::new(0, 8 << 20).unwrap());
    let gpu = Gpu::threaded(Arc::clone(&ram), NullBackend, GpuConfig::default()).unwrap();
    let queue = QueueId::compute(0, 0).unwrap();

    // submit -> completion.
    let mut cb = CommandBuffer::new();
    cb.write_mem(LABELS + 0x800, &[1]).unwrap();
    ram.write_bytes(CMD, &cb.to_bytes()).unwrap();
    let size = cb.len_dw();
    let samples = (0..3000)
        .map(|_| {
            let start = Instant::now();
            gpu.submit(queue, CMD, size).unwrap().wait().unwrap();
            start.elapsed()
        })
        .skip(200)
        .collect();
    println!("submit -> completion:                         {}", percentiles(samples));

    // A wait, resolved with or without notification.
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut round_trip = |notify: bool, delay: &mut dyn FnMut(&mut Rng) -> Duration, runs: usize| {
        let mut samples = Vec::with_capacity(runs);
        for run in 0..runs as u32 {
            let label = LABELS + 8 * u64::from(run % 64);
            ram.write_u32(label, 0).unwrap();
            let mut cb = CommandBuffer::new();
            cb.wait_mem(label, CompareFunction::Equal, 1, u32::MAX).unwrap();
            let at = CMD + 0x1000 + 0x40 * u64::from(run % 64);
            ram.write_bytes(at, &cb.to_bytes()).unwrap();
            let done = gpu.submit(queue, at, cb.len_dw()).unwrap();
            while gpu.queue_status(queue).unwrap().suspended.is_none() {
                std::hint::spin_loop();
            }
            spin_for(delay(&mut rng));
            let start = Instant::now();
            ram.write_u32(label, 1).unwrap();
            if notify {
                gpu.notify_host_write(label, 4).unwrap();
            }
            done.wait().unwrap();
            samples.push(start.elapsed());
        }
        percentiles(samples)
    };
    println!("notified write -> completion:                 {}", round_trip(true, &mut |_| Duration::ZERO, 2000));
    println!("un-notified store -> completion, at once:     {}", round_trip(false, &mut |_| Duration::ZERO, 2000));
    println!(
        "un-notified store -> completion, 0-100 us on: {}",
        round_trip(false, &mut |rng| Duration::from_nanos(rng.next() % 100_000), 2000)
    );
    println!(
        "un-notified store -> completion, 5 ms on:     {}",
        round_trip(false, &mut |_| Duration::from_millis(5), 200)
    );

    // 57 queues waiting on labels nobody writes.
    let idle_secs: u64 = std::env::var("NATIVE_BENCH_IDLE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    let idle_gpu = Gpu::threaded(Arc::clone(&ram), NullBackend, GpuConfig::default()).unwrap();
    let mut handles = Vec::new();
    for q in 0..QueueId::COUNT {
        let label = LABELS + 0x1000 + 8 * u64::from(q);
        ram.write_u32(label, 0).unwrap();
        let mut cb = CommandBuffer::new();
        cb.wait_mem(label, CompareFunction::Equal, 1, u32::MAX).unwrap();
        let at = CMD + 0x4000 + 0x40 * u64::from(q);
        ram.write_bytes(at, &cb.to_bytes()).unwrap();
        handles.push(idle_gpu.submit(QueueId(q), at, cb.len_dw()).unwrap());
    }
    // Let the suspensions and the first rounds pass, then measure.
    std::thread::sleep(Duration::from_millis(200));
    let (cpu_before, wall_before, rounds_before) = (cpu_time(), Instant::now(), idle_gpu.stats().poll_rounds);
    std::thread::sleep(Duration::from_secs(idle_secs));
    let (cpu, wall) = (cpu_time() - cpu_before, wall_before.elapsed());
    let rounds = idle_gpu.stats().poll_rounds - rounds_before;
    println!(
        "idle, 57 queues waiting for {wall:.1?}: {cpu:.2?} of CPU = {:.2} % of one core ({rounds} polling rounds, {:.0} a second)",
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        rounds as f64 / wall.as_secs_f64()
    );

    // Shutdown wakes a waiting thread.
    let idle_gpu = Arc::new(idle_gpu);
    let waiter = {
        let gpu = Arc::clone(&idle_gpu);
        std::thread::spawn(move || {
            let _ = gpu.wait_interrupt(QueueId::GRAPHICS, Duration::from_secs(60));
            Instant::now()
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let start = Instant::now();
    idle_gpu.shutdown();
    let woke = waiter.join().unwrap();
    let handle_woke = handles.iter().all(|h| h.is_complete());
    println!(
        "shutdown -> a waiting thread awake:           {:.1?} (every waiting handle complete: {handle_woke})",
        woke.saturating_duration_since(start)
    );
}
