//! Throughput of the ProcessPm4 loop against the floor: a bare header walk
//! over the same dwords (read each header, add its length, nothing else).
//! Every figure is reported in the same run, so ratios to the floor are
//! meaningful on a noisy machine.

use criterion::{black_box, criterion_group, Criterion, Throughput};
use pm4core::backend::{NullBackend, QueueId};
use pm4core::memory::{FlatMemory, GuestMemory, SparseMemory};
use pm4core::packet::{Header, Opcode};
use pm4core::processor::{Env, ProcessStatus, Processor};
use pm4core::regs::gfx103 as r;
use pm4core::shader::ShaderRegistry;
use pm4core::trace::Trace;
use pm4core_hostmem::{HostMappedMemory, HostMapping};

fn pkt3(out: &mut Vec<u32>, op: Opcode, body: &[u32]) {
    out.push(Header::type3(op, body.len() as u32).0);
    out.extend_from_slice(body);
}

/// A register-heavy frame: runs of SET_CONTEXT_REG / SET_SH_REG with pads,
/// as a console frame's graphics stream mostly is, and a draw every 40 packets.
fn register_heavy() -> Vec<u32> {
    let mut s = Vec::new();
    for i in 0..20_000u32 {
        match i % 8 {
            0 => pkt3(&mut s, Opcode::SET_CONTEXT_REG, &[r::PA_CL_VPORT_XSCALE - 0xA000, i, i, i, i, i, i]),
            1 => pkt3(&mut s, Opcode::SET_SH_REG, &[r::SPI_SHADER_USER_DATA_PS_0 - 0x2C00, i, i, i, i]),
            2 => pkt3(&mut s, Opcode::SET_CONTEXT_REG, &[r::DB_RENDER_CONTROL - 0xA000, i]),
            3 => s.push(0xFFFF_1000),
            4 => pkt3(&mut s, Opcode::SET_UCONFIG_REG, &[r::VGT_PRIMITIVE_TYPE - 0xC000, 4]),
            5 => pkt3(&mut s, Opcode::SET_SH_REG, &[r::SPI_SHADER_USER_DATA_GS_0 - 0x2C00, i, i]),
            6 => pkt3(&mut s, Opcode::NOP, &[0]),
            _ if i % 40 == 7 => pkt3(&mut s, Opcode::DRAW_INDEX_AUTO, &[3, 2]),
            _ => pkt3(&mut s, Opcode::SET_CONTEXT_REG, &[r::CB_COLOR0_BASE - 0xA000, i, 0, 0, 0]),
        }
    }
    s
}

/// A draw-heavy frame: thousands of draws with state changes between them.
fn draw_heavy() -> Vec<u32> {
    let mut s = Vec::new();
    for i in 0..5_000u32 {
        pkt3(&mut s, Opcode::SET_SH_REG, &[r::SPI_SHADER_USER_DATA_VS_0 - 0x2C00, i, i + 1]);
        pkt3(&mut s, Opcode::SET_SH_REG, &[r::SPI_SHADER_PGM_LO_PS - 0x2C00, 0x100 + (i % 4), 0]);
        if i % 3 == 0 {
            pkt3(&mut s, Opcode::SET_CONTEXT_REG, &[r::PA_SC_VPORT_SCISSOR_0_TL - 0xA000, 0, 0x4000_4000]);
        }
        pkt3(&mut s, Opcode::NUM_INSTANCES, &[1 + i % 3]);
        if i % 2 == 0 {
            pkt3(&mut s, Opcode::DRAW_INDEX_AUTO, &[3 + i % 64, 2]);
        } else {
            pkt3(&mut s, Opcode::DRAW_INDEX_2, &[1000, 0x20_0000, 0, 36, 0]);
        }
    }
    s
}

/// The floor: a bare header walk, as the speed issue measures it (a C
/// loop at -O2): read each header and add its length (a type-2 filler or a
/// count of 0x3FFF is one dword, anything else its count plus two),
/// nothing else. On a well-formed stream it walks the packets the
/// processor decodes.
fn header_walk(words: &[u32]) -> u64 {
    let mut at = 0usize;
    let mut packets = 0u64;
    while let Some(&h) = words.get(at) {
        let (kind, count) = (h >> 30, (h >> 16) & 0x3FFF);
        at += if kind == 2 || (kind == 3 && count == 0x3FFF) { 1 } else { count as usize + 2 };
        packets += 1;
    }
    packets
}

fn run_stream(words: &[u32]) -> (SparseMemory, u32) {
    let memory = SparseMemory::new();
    memory.map_dwords(0x10_0000, words).unwrap();
    memory.map_zeroed(0x20_0000, 0x10_0000).unwrap();
    (memory, words.len() as u32)
}

/// Benchmarks the processor over the `size`-dword stream at 0x10_0000 of
/// `memory` as `name`.
fn bench_process(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: String,
    memory: &dyn GuestMemory,
    size: u32,
) {
    let mut processor = Processor::new(QueueId::GRAPHICS);
    let shaders = ShaderRegistry::default();
    group.bench_function(name, |b| {
        b.iter(|| {
            processor.submit(0x10_0000, size).unwrap();
            let mut env = Env { memory, backend: &mut NullBackend, shaders: &shaders };
            assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
        })
    });
}

fn bench_streams(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay");
    for (name, words) in [("register_heavy", register_heavy()), ("draw_heavy", draw_heavy())] {
        group.throughput(Throughput::Elements(words.len() as u64));
        group.bench_function(format!("{name}/header_walk"), |b| b.iter(|| black_box(header_walk(black_box(&words)))));
        let (memory, size) = run_stream(&words);
        bench_process(&mut group, format!("{name}/process"), &memory, size);
        // The same stream in an emulator's shared flat memory (atomic words).
        let flat = FlatMemory::new(0x10_0000, 0x20_0000).unwrap();
        // And in memory the emulator mapped itself (host-mapped: every
        // access an atomic on the emulator's own bytes).
        let mut host = vec![0u64; 0x20_0000 / 8].into_boxed_slice();
        let mapping = HostMapping { guest_base: 0x10_0000, host: host.as_mut_ptr().cast(), len: 0x20_0000 };
        // SAFETY: `host` outlives `mapped` (dropped at the end of this
        // iteration, after it) and is reached only through it.
        let mapped = unsafe { HostMappedMemory::new(&[mapping]) }.unwrap();
        for (kind, memory) in [("flat_memory", &flat as &dyn GuestMemory), ("host_mapped", &mapped)] {
            for (i, w) in words.iter().enumerate() {
                memory.write_u32(0x10_0000 + 4 * i as u64, *w).unwrap();
            }
            bench_process(&mut group, format!("{name}/process_{kind}"), memory, size);
        }
        drop(mapped);
        drop(host);
    }
    group.finish();
}

/// Records where every packet a processor decodes sits (the flattening walk).
#[derive(Default)]
struct PacketLog {
    packets: Vec<(u64, u32)>,
}

impl pm4core::backend::Backend for PacketLog {
    fn packet(&mut self, _: QueueId, header: Header, location: &pm4core::packet::PacketLocation) {
        self.packets.push((location.address(), header.length_dw().unwrap_or(1)));
    }
}

/// A trace's submissions flattened: the dwords of every packet its
/// processor decodes, in the order it decodes them (IBs and chains
/// followed), each INDIRECT_BUFFER turned into a NOP of its length so the
/// stream runs straight through; with the queue it ran on.
fn flatten(trace: &Trace, memory: &SparseMemory) -> (QueueId, Vec<u32>) {
    use pm4core::memory::GuestMemory;
    use pm4core::processor::ProcessorConfig;
    let submissions: Vec<(u32, u64, u32)> = trace.submissions().collect();
    let queue = QueueId(submissions.first().map_or(0, |s| s.0));
    let config = ProcessorConfig { report_packets: true, ..ProcessorConfig::default() };
    let mut processor = Processor::with_config(queue, config);
    let mut shaders = ShaderRegistry::default();
    let mut mem = memory.clone();
    let mut log = PacketLog::default();
    for &(q, address, size) in &submissions {
        assert_eq!(q, queue.0, "{}: every submission on one queue", queue);
        processor.submit(address, size).unwrap();
        let mut env = Env { memory: &mut mem, backend: &mut log, shaders: &mut shaders };
        assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
    }
    let mut words = Vec::new();
    for &(address, length) in &log.packets {
        let mut packet = vec![0u32; length as usize];
        memory.read_dwords(address, &mut packet).unwrap();
        let header = Header(packet[0]);
        let opcode = header.opcode();
        if header.packet_type() == pm4core::packet::PacketType::Type3
            && length > 1
            && (opcode == Opcode::INDIRECT_BUFFER || opcode == Opcode::INDIRECT_BUFFER_CONST)
        {
            packet.fill(0);
            packet[0] = Header::type3(Opcode::NOP, length - 1).0;
        }
        words.extend_from_slice(&packet);
    }
    (queue, words)
}

/// Where the flattened streams are mapped: below every trace's regions.
const FLAT_STREAM: u64 = 0x10_0000_0000;
/// A flattened stream is repeated up to at least this many dwords, so a
/// submission's start costs nothing next to its packets.
const FLAT_DWORDS: usize = 1 << 20;

/// Runs `run` `iters` times for criterion's `iter_custom`, noting the time
/// per run in `samples` (for the best ratio).
fn timed(samples: &std::cell::RefCell<Vec<f64>>, iters: u64, mut run: impl FnMut()) -> std::time::Duration {
    let start = std::time::Instant::now();
    for _ in 0..iters {
        run();
    }
    let elapsed = start.elapsed();
    samples.borrow_mut().push(elapsed.as_nanos() as f64 / iters as f64);
    elapsed
}

/// Median nanoseconds per iteration over criterion's samples.
fn median_ns(samples: &std::cell::RefCell<Vec<f64>>) -> f64 {
    let mut v = samples.borrow().clone();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Every real driver capture in traces/: its submissions flattened (see
/// [`flatten`]), repeated, mapped once with the trace's memory; the bare
/// header walk and the processor (one queue, a backend that does nothing)
/// over the same dwords, and the ratio of their dwords/s printed per trace.
fn bench_real_traces(c: &mut Criterion) {
    use std::cell::RefCell;
    use std::time::Instant;
    let mut group = c.benchmark_group("traces");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut paths: Vec<_> =
        std::fs::read_dir(&dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    paths.retain(|p| p.extension().is_some_and(|e| e == "pm4t"));
    paths.sort();
    assert!(!paths.is_empty(), "no traces in {}", dir.display());
    let mut table = Vec::new();
    for path in paths {
        let trace = Trace::read_file(&path).unwrap();
        let mut memory = trace.build_memory().unwrap();
        let (queue, flat) = flatten(&trace, &memory);
        let copies = FLAT_DWORDS.div_ceil(flat.len());
        let words: Vec<u32> = flat.iter().copied().cycle().take(flat.len() * copies).collect();
        memory.map_dwords(FLAT_STREAM, &words).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let mut processor = Processor::new(queue);
        let mut shaders = ShaderRegistry::default();
        let packets = header_walk(&words);
        processor.submit(FLAT_STREAM, words.len() as u32).unwrap();
        let mut env = Env { memory: &mut memory, backend: &mut NullBackend, shaders: &mut shaders };
        assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
        assert_eq!(processor.stats().packets, packets, "{name}: the processor decodes what the walk walks");
        assert_eq!(processor.stats().dwords, words.len() as u64);

        group.throughput(Throughput::Elements(words.len() as u64));
        let walk_ns = RefCell::new(Vec::new());
        group.bench_function(format!("{name}/header_walk"), |b| {
            b.iter_custom(|iters| {
                timed(&walk_ns, iters, || {
                    black_box(header_walk(black_box(&words)));
                })
            })
        });
        let process_ns = RefCell::new(Vec::new());
        group.bench_function(format!("{name}/process"), |b| {
            b.iter_custom(|iters| {
                timed(&process_ns, iters, || {
                    processor.submit(FLAT_STREAM, words.len() as u32).unwrap();
                    let mut env = Env { memory: &mut memory, backend: &mut NullBackend, shaders: &mut shaders };
                    black_box(processor.process(&mut env).unwrap());
                })
            })
        });
        // The best ratio: the fastest walk against the fastest processor
        // run, over every run of this trace (criterion's samples, as time
        // per iteration, and RATIO_RUNS more of each taken in turn). The
        // fastest run of each is the one least disturbed by anything else
        // on the machine; the processor's speed swings with other load far
        // more than the walk's, so its fastest run is looked for over the
        // whole measurement, not a moment of it.
        let fastest = |samples: &RefCell<Vec<f64>>| samples.borrow().iter().copied().fold(f64::MAX, f64::min);
        let (mut best_walk, mut best_process) = (fastest(&walk_ns), fastest(&process_ns));
        for _ in 0..RATIO_RUNS {
            let start = Instant::now();
            black_box(header_walk(black_box(&words)));
            best_walk = best_walk.min(start.elapsed().as_nanos() as f64);
            let start = Instant::now();
            processor.submit(FLAT_STREAM, words.len() as u32).unwrap();
            let mut env = Env { memory: &mut memory, backend: &mut NullBackend, shaders: &mut shaders };
            black_box(processor.process(&mut env).unwrap());
            best_process = best_process.min(start.elapsed().as_nanos() as f64);
        }
        table.push((
            name,
            words.len() as f64,
            packets as f64,
            median_ns(&walk_ns),
            median_ns(&process_ns),
            (best_walk, best_process),
        ));
    }
    group.finish();
    println!(
        "\n{:<24} {:>9} {:>13} {:>13} {:>10} {:>10} {:>7} {:>12}",
        "trace (flattened)",
        "dw/packet",
        "walk Mdw/s",
        "process Mdw/s",
        "walk ns/p",
        "proc ns/p",
        "ratio",
        "best ratio"
    );
    for (name, dwords, packets, walk, process, (best_walk, best_process)) in &table {
        println!(
            "{name:<24} {:>9.2} {:>13.0} {:>13.0} {:>10.2} {:>10.2} {:>6.1}% {:>11.1}%",
            dwords / packets,
            dwords / walk * 1e3,
            dwords / process * 1e3,
            walk / packets,
            process / packets,
            walk / process * 100.0,
            best_walk / best_process * 100.0
        );
    }
    println!(
        "(ratio: criterion's medians, measured apart; best ratio: the fastest walk against the fastest processor \
         run, over criterion's samples and {RATIO_RUNS} more of each taken in turn)"
    );
}

/// Walks and processor runs taken in turn, with criterion's samples, behind
/// each trace's "best ratio".
const RATIO_RUNS: usize = 31;

/// A compute-heavy stream across the 56 compute queues: each queue runs
/// dispatches and register writes, and waits on the label the previous
/// queue releases, so the scheduler suspends and wakes queues in a chain.
fn bench_compute_queues(c: &mut Criterion) {
    use pm4core::gpu::{Gpu, GpuConfig};
    const LABELS: u64 = 0x20_0000;
    let memory = SparseMemory::new();
    memory.map_zeroed(LABELS, 0x1000).unwrap();
    let mut buffers = Vec::new();
    let mut total_dw = 0u64;
    for q in 1..57u32 {
        let mut s = Vec::new();
        if q > 1 {
            let label = LABELS + u64::from(q - 1) * 8;
            pkt3(&mut s, Opcode::WAIT_REG_MEM, &[3 | (1 << 4), label as u32, 0, 1, 0xFFFF_FFFF, 10]);
        }
        for i in 0..200u32 {
            pkt3(&mut s, Opcode::SET_SH_REG, &[r::COMPUTE_USER_DATA_0 - 0x2C00, i, q, i ^ q, 0]);
            pkt3(&mut s, Opcode::SET_SH_REG, &[r::COMPUTE_NUM_THREAD_X - 0x2C00, 64, 1, 1]);
            pkt3(&mut s, Opcode::DISPATCH_DIRECT, &[1 + i % 8, 1, 1, 1]);
        }
        let label = LABELS + u64::from(q) * 8;
        pkt3(&mut s, Opcode::RELEASE_MEM, &[0x28 | (5 << 8), 1 << 29, label as u32, 0, 1, 0, 0]);
        let address = 0x100_0000 + u64::from(q) * 0x10_0000;
        memory.map_dwords(address, &s).unwrap();
        total_dw += s.len() as u64;
        buffers.push((q, address, s.len() as u32));
    }
    let mut group = c.benchmark_group("compute_queues");
    group.throughput(Throughput::Elements(total_dw));
    group.bench_function("56_queues_chained_waits", |b| {
        b.iter(|| {
            let gpu = Gpu::deterministic(memory.clone(), NullBackend, GpuConfig::default());
            // Submitted last-to-first so every queue but the first waits.
            for &(q, a, n) in buffers.iter().rev() {
                gpu.submit(QueueId(q), a, n).unwrap();
            }
            gpu.run_until_idle().unwrap();
        })
    });
    group.finish();
}

/// The full replay path (trace → deterministic GPU → summary) and the
/// disassembler (text to a sink) over the corpus frame and every radv trace.
fn bench_replay_and_disasm(c: &mut Criterion) {
    use pm4core::disasm::{DisasmOptions, Disassembler};
    use pm4core::replay::{replay, ReplayOptions};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut paths = vec![dir.join("corpus/frame.pm4t"), dir.join("radv-frame.pm4t"), dir.join("radv-chain_grow.pm4t")];
    paths.retain(|p| p.exists());
    let mut group = c.benchmark_group("tools");
    for path in paths {
        let trace = Trace::read_file(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let outcome = replay(&trace, &ReplayOptions::default());
        let dwords: u64 = outcome.summary.queues.iter().map(|q| q.dwords).sum();
        group.throughput(Throughput::Elements(dwords));
        group.bench_function(format!("{name}/replay"), |b| {
            b.iter(|| black_box(replay(&trace, &ReplayOptions::default()).summary.packets.total))
        });
        group.bench_function(format!("{name}/disasm_text"), |b| {
            b.iter(|| {
                let d = Disassembler::for_trace(&trace, DisasmOptions::default());
                black_box(d.write_text(&mut std::io::sink()).unwrap().packets)
            })
        });
    }
    group.finish();
}

/// `trace` with its submissions (and the host writes and shaders among
/// them) repeated `times` times after its regions: what `pm4 replay` of
/// a capture of `times` frames runs, the memory mapped once.
fn repeated(trace: &Trace, times: usize) -> Trace {
    use pm4core::trace::{TraceEvent, TraceWriter};
    let events = trace.events();
    let first = events.iter().position(|e| matches!(e, TraceEvent::Submit { .. })).unwrap_or(events.len());
    let mut writer = TraceWriter::new();
    for (key, value) in trace.info() {
        writer.info(key, value).unwrap();
    }
    let mut emit = |event: &TraceEvent| writer.event(trace, event).unwrap();
    events.iter().take(first).for_each(&mut emit);
    let frame = events.get(first..).unwrap_or(&[]);
    assert!(
        !frame.iter().any(|e| matches!(e, TraceEvent::MemRegion { .. } | TraceEvent::ZeroRegion { .. })),
        "a region after the first submission"
    );
    for _ in 0..times {
        frame.iter().for_each(&mut emit);
    }
    writer.finish_trace().unwrap()
}

/// `pm4 replay` end to end (the parsed trace through the deterministic GPU
/// and every queue to the summary) on the two radv streams the speed
/// issue names, each trace's submissions repeated to about 2^21 packets,
/// against the bare header walk over the same dwords (the trace's
/// flattened submissions, walked as many times); the ratio of their
/// speeds printed per trace, as the `traces` group does.
fn bench_replay_end_to_end(c: &mut Criterion) {
    use pm4core::limits::Limits;
    use pm4core::replay::{replay, ReplayOptions};
    use std::cell::RefCell;
    use std::time::Instant;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut group = c.benchmark_group("replay_end_to_end");
    let mut table = Vec::new();
    for name in ["radv-chain_grow", "radv-frame"] {
        let trace = Trace::read_file(&dir.join(format!("{name}.pm4t"))).unwrap();
        let (_, flat) = flatten(&trace, &trace.build_memory().unwrap());
        let per_frame = header_walk(&flat);
        let times = ((1u64 << 21) / per_frame).max(1) as usize;
        let frames = repeated(&trace, times);
        let options = ReplayOptions {
            limits: Limits { max_packets: per_frame * times as u64 * 2, ..Limits::default() },
            ..ReplayOptions::default()
        };
        let run = || replay(&frames, &options).summary.packets.total;
        assert_eq!(run(), per_frame * times as u64, "{name}: the replay runs what the walk walks");
        let walk = || (0..times).map(|_| header_walk(black_box(&flat))).sum::<u64>();
        group.throughput(Throughput::Elements((flat.len() * times) as u64));
        let walk_ns = RefCell::new(Vec::new());
        group.bench_function(format!("{name}/header_walk"), |b| {
            b.iter_custom(|iters| {
                timed(&walk_ns, iters, || {
                    black_box(walk());
                })
            })
        });
        let replay_ns = RefCell::new(Vec::new());
        group.bench_function(format!("{name}/replay"), |b| {
            b.iter_custom(|iters| {
                timed(&replay_ns, iters, || {
                    black_box(run());
                })
            })
        });
        // The best ratio, as in the `traces` group: the fastest of each
        // over criterion's samples and RATIO_RUNS more taken in turn.
        let fastest = |samples: &RefCell<Vec<f64>>| samples.borrow().iter().copied().fold(f64::MAX, f64::min);
        let (mut best_walk, mut best_replay) = (fastest(&walk_ns), fastest(&replay_ns));
        for _ in 0..RATIO_RUNS {
            let start = Instant::now();
            black_box(walk());
            best_walk = best_walk.min(start.elapsed().as_nanos() as f64);
            let start = Instant::now();
            black_box(run());
            best_replay = best_replay.min(start.elapsed().as_nanos() as f64);
        }
        table.push((name, times, median_ns(&walk_ns), median_ns(&replay_ns), best_walk, best_replay));
    }
    group.finish();
    println!(
        "\n{:<18} {:>7} {:>10} {:>10} {:>7} {:>11}",
        "trace", "frames", "walk ms", "replay ms", "ratio", "best ratio"
    );
    for (name, times, walk, replay, best_walk, best_replay) in table {
        println!(
            "{name:<18} {times:>7} {:>10.2} {:>10.2} {:>6.1}% {:>10.1}%",
            walk / 1e6,
            replay / 1e6,
            100.0 * walk / replay,
            100.0 * best_walk / best_replay
        );
    }
    println!(
        "(medians, measured apart, and the best ratio: the fastest walk against the fastest replay, over criterion's \
         samples and {RATIO_RUNS} more of each taken in turn)"
    );
}

/// The processor's run over one trace's flattened, repeated stream (as the
/// `traces` group builds it), alone: what the instruction probe counts.
#[inline(never)]
fn probe_run(processor: &mut Processor, env: &mut Env<'_>, size: u32) {
    processor.submit(FLAT_STREAM, size).unwrap();
    black_box(processor.process(env).unwrap());
}

/// The instruction probe (`PM4_PROBE=<trace stem>`, instead of criterion):
/// builds the trace's stream as [`bench_real_traces`] does, runs the
/// processor over it once to warm it (pages written, window grown), then
/// once more in [`probe_run`], and prints the packets and dwords of that
/// run. Under callgrind, counting only [`probe_run`], the instructions per
/// packet of the processor alone are exact and reproducible:
///
/// ```text
/// cargo bench --bench processor --no-run
/// PM4_PROBE=radv-frame valgrind --tool=callgrind --callgrind-out-file=/tmp/probe.out \
///     --collect-atstart=no --toggle-collect='*probe_run*' target/release/deps/processor-<hash>
/// callgrind_annotate /tmp/probe.out | grep 'PROGRAM TOTALS'   # Ir; divide by the packets printed
/// ```
fn probe(name: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces").join(format!("{name}.pm4t"));
    let trace = Trace::read_file(&path).unwrap();
    let mut memory = trace.build_memory().unwrap();
    let (queue, flat) = flatten(&trace, &memory);
    let copies = FLAT_DWORDS.div_ceil(flat.len());
    let words: Vec<u32> = flat.iter().copied().cycle().take(flat.len() * copies).collect();
    memory.map_dwords(FLAT_STREAM, &words).unwrap();
    let packets = header_walk(&words);
    let mut processor = Processor::new(queue);
    let mut shaders = ShaderRegistry::default();
    let mut env = Env { memory: &mut memory, backend: &mut NullBackend, shaders: &mut shaders };
    processor.submit(FLAT_STREAM, words.len() as u32).unwrap();
    assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
    probe_run(&mut processor, &mut env, words.len() as u32);
    assert_eq!(processor.stats().packets, 2 * packets, "{name}: the processor decodes what the walk walks");
    println!("{name}: packets {packets} dwords {}", words.len());
}

criterion_group!(
    benches,
    bench_streams,
    bench_real_traces,
    bench_compute_queues,
    bench_replay_and_disasm,
    bench_replay_end_to_end
);

/// The memory probe (`PM4_PROBE=<stream>/<memory>`, `stream` one of
/// `register_heavy`, `draw_heavy`, `memory` one of `sparse`, `flat`,
/// `host`): the synthetic stream of [`bench_streams`] in that kind of
/// guest memory, run once to warm, then in [`probe_run`], for callgrind as
/// [`probe`] is run. The emulator's memories (flat, host-mapped) compared in
/// exact instructions.
fn probe_memory(stream: &str, kind: &str) {
    let words = match stream {
        "register_heavy" => register_heavy(),
        "draw_heavy" => draw_heavy(),
        other => panic!("no stream {other}"),
    };
    let size = words.len() as u32;
    let mut host = vec![0u64; 0x40_0000 / 8].into_boxed_slice();
    let memory: Box<dyn GuestMemory> = match kind {
        "sparse" => {
            let m = SparseMemory::new();
            m.map_zeroed(FLAT_STREAM, 0x40_0000).unwrap();
            Box::new(m)
        }
        "flat" => Box::new(FlatMemory::new(FLAT_STREAM, 0x40_0000).unwrap()),
        "host" => {
            let mapping = HostMapping { guest_base: FLAT_STREAM, host: host.as_mut_ptr().cast(), len: 0x40_0000 };
            // SAFETY: `host` outlives the memory (dropped after it, at the
            // end of this function) and is reached only through it.
            Box::new(unsafe { HostMappedMemory::new(&[mapping]) }.unwrap())
        }
        other => panic!("no memory {other}"),
    };
    for (i, w) in words.iter().enumerate() {
        memory.write_u32(FLAT_STREAM + 4 * i as u64, *w).unwrap();
    }
    let mut processor = Processor::new(QueueId::GRAPHICS);
    let shaders = ShaderRegistry::default();
    let mut env = Env { memory: &*memory, backend: &mut NullBackend, shaders: &shaders };
    processor.submit(FLAT_STREAM, size).unwrap();
    assert_eq!(processor.process(&mut env), Ok(ProcessStatus::Completed));
    probe_run(&mut processor, &mut env, size);
    println!("{stream}/{kind}: packets {} dwords {}", header_walk(&words), words.len());
    drop(memory);
    drop(host);
}

fn main() {
    if let Ok(name) = std::env::var("PM4_PROBE") {
        match name.split_once('/') {
            Some((stream, kind)) => probe_memory(stream, kind),
            None => probe(&name),
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
