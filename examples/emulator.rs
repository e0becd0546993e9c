//! How an emulator embeds pm4core: it owns a flat guest RAM and shares it
//! with the GPU, its CPU thread writes labels straight into that RAM and
//! notifies, four host threads submit to the graphics queue and several
//! compute queues, interrupts arrive per queue, waits have timeouts, and a
//! stall is reported and then resolved by a CPU write.
//!
//! `cargo run --release --example emulator`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pm4core::backend::{Backend, Dispatch, Draw, Fence, QueueId};
use pm4core::gpu::{Gpu, GpuConfig, GpuError};
use pm4core::memory::{FlatMemory, GuestMemory};
use pm4core::packet::{Header, Opcode};

/// Guest RAM: 64 MiB at guest address 0x1_0000_0000.
const RAM_BASE: u64 = 0x1_0000_0000;
const RAM_SIZE: u64 = 64 << 20;
/// Where command buffers go, and where labels live.
const COMMANDS: u64 = RAM_BASE + 0x10_0000;
const LABELS: u64 = RAM_BASE + 0x100_0000;
/// Submitted frames per host thread.
const FRAMES: u32 = 50;

/// The emulator's renderer: counts what it is asked to do (a real one would
/// record Vulkan commands). The GPU asks it once per queue for that queue's
/// own recorder, which it then calls on the worker running the queue, with
/// no lock: queues record in parallel and share only these totals.
#[derive(Default)]
struct Renderer {
    draws: Arc<AtomicU64>,
    dispatches: Arc<AtomicU64>,
    fences: Arc<AtomicU64>,
}

impl Backend for Renderer {
    fn queue_backend(&mut self, queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        Some(Box::new(QueueRecorder {
            queue,
            draws: Arc::clone(&self.draws),
            dispatches: Arc::clone(&self.dispatches),
            fences: Arc::clone(&self.fences),
        }))
    }
}

/// One queue's recorder.
struct QueueRecorder {
    queue: QueueId,
    draws: Arc<AtomicU64>,
    dispatches: Arc<AtomicU64>,
    fences: Arc<AtomicU64>,
}

impl Backend for QueueRecorder {
    fn draw(&mut self, d: &Draw<'_>) {
        debug_assert_eq!(d.queue, self.queue);
        self.draws.fetch_add(1, Ordering::Relaxed);
    }
    fn dispatch(&mut self, d: &Dispatch<'_>) {
        debug_assert_eq!(d.queue, self.queue);
        self.dispatches.fetch_add(1, Ordering::Relaxed);
    }
    fn fence(&mut self, f: &Fence) {
        debug_assert_eq!(f.queue, self.queue);
        self.fences.fetch_add(1, Ordering::Relaxed);
    }
}

/// Writes PM4 packets into guest RAM, like the guest's driver does.
struct CommandWriter {
    words: Vec<u32>,
}

impl CommandWriter {
    fn new() -> Self {
        Self { words: Vec::new() }
    }
    fn packet(&mut self, opcode: Opcode, body: &[u32]) -> &mut Self {
        self.words.push(Header::type3(opcode, body.len() as u32).0);
        self.words.extend_from_slice(body);
        self
    }
    /// WAIT_REG_MEM: until the dword at `address` is >= `value`.
    fn wait_ge(&mut self, address: u64, value: u32) -> &mut Self {
        self.packet(Opcode::WAIT_REG_MEM, &[5 | (1 << 4), address as u32, (address >> 32) as u32, value, !0, 4])
    }
    fn write(&mut self, address: u64, value: u32) -> &mut Self {
        self.packet(Opcode::WRITE_DATA, &[(5 << 8) | (1 << 20), address as u32, (address >> 32) as u32, value])
    }
    /// RELEASE_MEM at the end of the pipe: writes `value`, raises an interrupt.
    fn release_interrupt(&mut self, address: u64, value: u32) -> &mut Self {
        self.packet(
            Opcode::RELEASE_MEM,
            &[0x28 | (5 << 8), (2 << 24) | (1 << 29), address as u32, (address >> 32) as u32, value, 0, 0],
        )
    }
    /// Stores the buffer at `address`; returns its size in dwords.
    fn store(&self, ram: &FlatMemory, address: u64) -> u32 {
        for (i, w) in self.words.iter().enumerate() {
            ram.write_u32(address + 4 * i as u64, *w).expect("command buffer inside guest RAM");
        }
        self.words.len() as u32
    }
}

fn main() -> Result<(), GpuError> {
    let ram = Arc::new(FlatMemory::new(RAM_BASE, RAM_SIZE).expect("guest RAM"));
    let renderer = Renderer::default();
    let (draws, dispatches, fences) =
        (Arc::clone(&renderer.draws), Arc::clone(&renderer.dispatches), Arc::clone(&renderer.fences));
    let config = GpuConfig { workers: 2, ..GpuConfig::default() };
    let gpu = Gpu::threaded(Arc::clone(&ram), renderer, config)?;
    println!("GPU: {} workers over {} MiB of shared guest RAM at {RAM_BASE:#x}", gpu.workers(), RAM_SIZE >> 20);

    // Each host thread owns one queue and one label the CPU advances: frame N
    // waits until the CPU says "N", draws or dispatches, and releases.
    let queues = [
        QueueId::GRAPHICS,
        QueueId::compute(0, 0).expect("queue"),
        QueueId::compute(1, 0).expect("queue"),
        QueueId::compute(2, 3).expect("queue"),
    ];
    let cpu_label = |t: usize| LABELS + 0x100 * t as u64;
    let fence_label = |t: usize| LABELS + 0x100 * t as u64 + 8;
    let interrupts: Vec<_> = queues.iter().map(|&q| gpu.interrupts(q)).collect::<Result<_, _>>()?;

    let ram_ref = &ram;
    std::thread::scope(|s| -> Result<(), GpuError> {
        let gpu = &gpu;
        let mut submitters = Vec::new();
        for (t, &queue) in queues.iter().enumerate() {
            submitters.push(s.spawn(move || -> Result<u64, GpuError> {
                let mut packets = 0;
                let mut last = None;
                for frame in 1..=FRAMES {
                    let mut cmd = CommandWriter::new();
                    cmd.wait_ge(cpu_label(t), frame);
                    if queue == QueueId::GRAPHICS {
                        cmd.packet(Opcode::DRAW_INDEX_AUTO, &[3, 2]);
                    } else {
                        cmd.packet(Opcode::DISPATCH_DIRECT, &[8, 8, 1, 1]);
                    }
                    cmd.release_interrupt(fence_label(t), frame);
                    let at = COMMANDS + (t as u64 * u64::from(FRAMES) + u64::from(frame)) * 0x100;
                    let size = cmd.store(ram_ref, at);
                    last = Some(gpu.submit(queue, at, size)?);
                }
                // Waits with a timeout: a frame that never comes is an answer, not a hang.
                if let Some(h) = last {
                    loop {
                        match h.wait_timeout(Duration::from_millis(500)) {
                            Some(result) => packets += result?.packets,
                            None => {
                                println!("{queue}: last frame not done after 500 ms, waiting on");
                                continue;
                            }
                        }
                        break;
                    }
                }
                Ok(packets)
            }));
        }
        // The CPU thread: advances every label frame by frame, writing guest
        // RAM directly and telling the GPU which bytes it wrote.
        s.spawn(move || {
            for frame in 1..=FRAMES {
                for t in 0..queues.len() {
                    ram_ref.write_u32(cpu_label(t), frame).expect("label inside guest RAM");
                    gpu.notify_host_write(cpu_label(t), 4).expect("label is mapped");
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        for (t, submitter) in submitters.into_iter().enumerate() {
            let packets = submitter.join().expect("submitter thread")?;
            println!("{}: {FRAMES} frames, last frame ran {packets} packets", queues[t]);
        }
        Ok(())
    })?;

    for (t, rx) in interrupts.iter().enumerate() {
        let got: Vec<_> = rx.try_iter().collect();
        let last = got.last().map(|i| i.fence.data);
        println!("{}: {} interrupts, last fence value {last:?}", queues[t], got.len());
        assert_eq!(got.len(), FRAMES as usize);
        assert_eq!(ram.read_u32(fence_label(t)).expect("label"), FRAMES);
    }

    // A stall: a compute queue waits for a label nobody has written yet. It
    // is reported on its own channel, the wait times out instead of failing,
    // and a CPU write resolves it.
    let stalls = gpu.stall_reports();
    let earlier = stalls.try_iter().count();
    println!("{earlier} stalls were reported while queues waited for the CPU (not errors)");
    let gate = LABELS + 0x1000;
    let mut cmd = CommandWriter::new();
    cmd.wait_ge(gate, 1).write(gate + 4, 0x600D);
    let at = COMMANDS + 0x80_0000;
    let size = cmd.store(&ram, at);
    let waiting = gpu.submit(QueueId::compute(6, 7).expect("queue"), at, size)?;
    let report = stalls.recv_timeout(Duration::from_secs(10))?.expect("the stall is reported");
    println!("stall reported: {report}");
    assert!(waiting.wait_timeout(Duration::from_millis(20)).is_none());
    println!("the wait timed out (the submission still waits for the CPU)");
    ram.write_u32(gate, 1).expect("gate inside guest RAM");
    gpu.notify_host_write(gate, 4)?;
    let done = waiting.wait()?;
    println!("after the CPU wrote the gate: {} packets, {} waits", done.packets, done.waits);
    assert_eq!(ram.read_u32(gate + 4).expect("result"), 0x600D);

    let stats = gpu.stats();
    println!(
        "totals: {} submissions, {} draws, {} dispatches, {} fences, {} interrupts, {} notifications, {} wakes, {} stalls",
        stats.completed,
        draws.load(Ordering::Relaxed),
        dispatches.load(Ordering::Relaxed),
        fences.load(Ordering::Relaxed),
        stats.interrupts,
        stats.host_notifications,
        stats.wakes,
        stats.stalls
    );
    assert_eq!(stats.completed, u64::from(FRAMES) * 4 + 1);
    Ok(())
}
