//! How an emulator that runs guest code natively embeds pm4core (the way
//! KytyPS5, prosper and shadPS4 run a game's x86-64 code on the host CPU):
//!
//! - it maps guest RAM itself and hands the GPU the mapping
//!   (`pm4core_hostmem::HostMappedMemory`: no copy, every access atomic);
//! - guest threads store labels straight into that RAM and never tell the
//!   GPU: the GPU polls its suspended waits and resumes them;
//! - its renderer's callbacks call back into the `Gpu` (counters, more
//!   work) through a `Weak` they keep;
//! - the emulator's own graphics library emits a packet of its own (a NOP
//!   with a code in header bits [7:2], as KytyPS5 encodes its
//!   sub-operations), registered in a private-packet table: it reaches the
//!   renderer as that packet, not as a NOP or an unknown packet;
//! - at exit the GPU is shut down through an `Arc` while threads still
//!   wait on it, and every one of them wakes.
//!
//! It prints what happened and the latencies it saw, and exits 0.
//!
//! `cargo run --release --example native_emulator`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use pm4core::backend::{Backend, Draw, Fence, QueueId};
use pm4core::gpu::{Gpu, GpuConfig, GpuError, InterruptReceiver};
use pm4core::memory::GuestMemory;
use pm4core::packet::body::CompareFunction;
use pm4core::packet::builder::{CommandBuffer, Signal};
use pm4core::packet::private::{PrivatePacket, PrivatePacketEntry, PrivatePackets};
use pm4core::processor::ProcessorConfig;
use pm4core_hostmem::{HostMappedMemory, HostMapping};

/// Guest RAM: 16 MiB at guest address 0x2_0000_0000, as the emulator maps it.
const RAM_BASE: u64 = 0x2_0000_0000;
const RAM_SIZE: usize = 16 << 20;
const COMMANDS: u64 = RAM_BASE + 0x10_0000;
const LABELS: u64 = RAM_BASE + 0x80_0000;
/// Frames each guest thread runs.
const FRAMES: u32 = 200;
/// The emulator's private present packet: a NOP with code 0x2A in header
/// bits [7:2] (its payload: the frame number).
const PRESENT_CODE: u32 = 0x2A;
const PRESENT_HEADER: u32 = 0xC000_1000 | PRESENT_CODE << 2;

type NativeGpu = Gpu<Arc<HostMappedMemory>, Renderer>;

/// The renderer. Its callbacks call back into the GPU they belong to.
#[derive(Default)]
struct Renderer {
    gpu: Arc<OnceLock<Weak<NativeGpu>>>,
    draws: AtomicU64,
    presents: AtomicU64,
    fences: AtomicU64,
    /// `Gpu::stats().completed` as the last present's callback read it.
    completed_seen_in_callback: AtomicU64,
}

impl Backend for Renderer {
    fn draw(&mut self, _: &Draw<'_>) {
        self.draws.fetch_add(1, Ordering::Relaxed);
    }
    fn fence(&mut self, _: &Fence) {
        self.fences.fetch_add(1, Ordering::Relaxed);
    }
    fn private_packet(&mut self, packet: &PrivatePacket<'_>) {
        if packet.code != PRESENT_CODE || packet.payload.len() != 1 {
            return;
        }
        self.presents.fetch_add(1, Ordering::Relaxed);
        // A callback that calls back: it reads the GPU's counters from
        // inside the packet that called it.
        if let Some(gpu) = self.gpu.get().and_then(Weak::upgrade) {
            self.completed_seen_in_callback.store(gpu.stats().completed, Ordering::Relaxed);
            // What it may not do there it is told, not left hanging.
            assert!(matches!(gpu.run_until_idle(), Err(GpuError::CalledFromCallback { .. })));
        }
    }
}

/// The emulator's guest RAM: host memory it allocated and maps itself.
struct GuestRam {
    words: Box<[u64]>,
}

/// Median and 99th percentile.
fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort_unstable();
    let at = |p: f64| samples.get(((samples.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default();
    (at(0.5), at(0.99))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut ram = GuestRam { words: vec![0u64; RAM_SIZE / 8].into_boxed_slice() };
    let host = ram.words.as_mut_ptr().cast::<u8>();
    // SAFETY: `ram` is dropped at the end of `main`, after the GPU and every
    // clone of the memory (they are dropped before it, below); nothing else
    // reaches its bytes meanwhile; the allocation is 8-byte aligned, as the
    // guest base is.
    let memory =
        Arc::new(unsafe { HostMappedMemory::new(&[HostMapping { guest_base: RAM_BASE, host, len: RAM_SIZE }]) }?);

    let renderer = Renderer::default();
    let cell = Arc::clone(&renderer.gpu);
    let config = GpuConfig {
        processor: ProcessorConfig {
            private_packets: PrivatePackets::new([
                PrivatePacketEntry::new("EMU_PRESENT", PRESENT_CODE).header(0xC000_FFFC, PRESENT_HEADER)
            ]),
            ..ProcessorConfig::default()
        },
        ..GpuConfig::default()
    };
    let gpu: Arc<NativeGpu> = Arc::new(Gpu::threaded(Arc::clone(&memory), renderer, config)?);
    cell.set(Arc::downgrade(&gpu)).ok();
    println!(
        "GPU with {} workers over {} MiB of guest RAM the emulator mapped at {RAM_BASE:#x}",
        gpu.workers(),
        RAM_SIZE >> 20
    );

    // Four guest threads, one compute queue each: every frame waits for the
    // label the thread stores next (natively: no notification), draws on
    // the graphics queue's behalf, presents through the private packet, and
    // fences with an interrupt.
    let queues = [QueueId::compute(0, 0), QueueId::compute(1, 0), QueueId::compute(2, 0), QueueId::compute(3, 0)];
    let interrupts: Vec<InterruptReceiver> =
        queues.iter().flatten().map(|&q| gpu.interrupts(q)).collect::<Result<_, _>>()?;
    let started = Instant::now();
    let threads: Vec<_> = queues
        .iter()
        .flatten()
        .enumerate()
        .map(|(t, &queue)| {
            let (gpu, memory) = (Arc::clone(&gpu), Arc::clone(&memory));
            std::thread::spawn(move || -> Result<Vec<Duration>, Box<dyn std::error::Error + Send + Sync>> {
                let label = LABELS + 0x100 * t as u64;
                let mut latencies = Vec::new();
                for frame in 1..=FRAMES {
                    let mut cb = CommandBuffer::new();
                    cb.wait_mem(label, CompareFunction::GreaterEqual, frame, u32::MAX)?
                        .raw(&[PRESENT_HEADER, frame])? // the private present, one payload dword
                        .release32(label + 4, frame, Signal::Interrupt)?;
                    let at = COMMANDS + 0x1_0000 * t as u64 + 0x40 * u64::from(frame % 512);
                    memory.write_bytes(at, &cb.to_bytes())?;
                    let done = gpu.submit(queue, at, cb.len_dw())?;
                    // Let the queue reach its wait, then store the label
                    // the way native guest code does: a plain store.
                    while gpu.queue_status(queue)?.suspended.is_none() && !done.is_complete() {
                        std::thread::yield_now();
                    }
                    let stored = Instant::now();
                    memory.write_u32(label, frame)?;
                    done.wait()?;
                    latencies.push(stored.elapsed());
                }
                Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for thread in threads {
        latencies.extend(thread.join().map_err(|_| "a guest thread panicked")?.map_err(|e| e.to_string())?);
    }
    let elapsed = started.elapsed();
    let raised: usize = interrupts.iter().map(|rx| rx.try_iter().count()).sum();
    let (median, p99) = percentiles(latencies);
    let stats = gpu.stats();
    let renderer_totals = gpu.with_backend(|r| {
        (
            r.presents.load(Ordering::Relaxed),
            r.fences.load(Ordering::Relaxed),
            r.completed_seen_in_callback.load(Ordering::Relaxed),
        )
    })?;
    println!(
        "{} frames in {elapsed:.2?}: {} presents through the private packet, {} fences, {raised} interrupts",
        4 * FRAMES,
        renderer_totals.0,
        renderer_totals.1
    );
    println!(
        "un-notified store -> resumed completion: median {median:.1?}, p99 {p99:.1?} ({} polling rounds woke {} waits, {} notifications)",
        stats.poll_rounds, stats.poll_wakes, stats.host_notifications
    );
    println!(
        "a present's callback read the GPU's counters from inside it: {} submissions completed then",
        renderer_totals.2
    );
    assert_eq!(renderer_totals.0, u64::from(4 * FRAMES));
    assert_eq!(raised, 4 * FRAMES as usize);
    assert_eq!(stats.host_notifications, 0);

    // Threads that still wait when the emulator exits: one for an interrupt
    // that never comes, one for a submission that waits on a label nobody
    // will store. Shutting the shared GPU down wakes both.
    let waiting = {
        let mut cb = CommandBuffer::new();
        cb.wait_mem(LABELS + 0x1000, CompareFunction::Equal, 1, u32::MAX)?;
        memory.write_bytes(COMMANDS + 0x8_0000, &cb.to_bytes())?;
        gpu.submit(QueueId::GRAPHICS, COMMANDS + 0x8_0000, cb.len_dw())?
    };
    let waiters = [
        {
            let gpu = Arc::clone(&gpu);
            std::thread::spawn(move || gpu.wait_interrupt(QueueId::GRAPHICS, Duration::from_secs(30)).map(drop))
        },
        std::thread::spawn(move || waiting.wait().map(drop)),
    ];
    std::thread::sleep(Duration::from_millis(20));
    let shutdown = Instant::now();
    gpu.shutdown();
    for waiter in waiters {
        let answer = waiter.join().map_err(|_| "a waiter panicked")?;
        assert_eq!(answer, Err(GpuError::ShutDown));
    }
    println!(
        "shutdown through an Arc woke 2 waiting threads in {:.1?}; later calls answer: {}",
        shutdown.elapsed(),
        gpu.submit(QueueId::GRAPHICS, COMMANDS, 1).unwrap_err()
    );

    drop(gpu);
    drop(memory);
    // The GPU wrote the emulator's own bytes: the last fence of thread 0.
    let fence_word = ram.words[((LABELS - RAM_BASE) as usize + 4) / 8];
    assert_eq!(fence_word >> 32, u64::from(FRAMES));
    Ok(())
}
