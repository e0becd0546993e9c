//! Bounded resources on hostile inputs: each trace here is a few hundred
//! bytes, built in the test from assembler source, and asks for unbounded
//! work, memory or output. Each must stop at the limit that bounds it, with
//! an error naming the limit (its library field and its `pm4` option), after
//! a bounded amount of work (counted by the budget, never timed) and with
//! bounded output.

use std::io::Write;
use std::sync::{Arc, Mutex};

use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::limits::{Limit, LimitExceeded, Limits};
use pm4core::memory::PAGE_SIZE;
use pm4core::replay::{replay, replay_to, ReplayOptions, ReplayOutcome, ReplayOutputs};
use pm4core::trace::Trace;

/// Scheduler slices between two checks of the work limits, times packets
/// per slice (1024 while a queue runs alone): how far past a limit a
/// replay may run.
const OVERSHOOT: u64 = 16 * 1024;

fn assemble(source: &str) -> Trace {
    let bytes = pm4core::asm::assemble(source).unwrap();
    assert!(bytes.len() < 8192, "a hostile trace here stays small: {} bytes", bytes.len());
    Trace::from_bytes(bytes).unwrap()
}

fn queues() -> Vec<String> {
    let mut names = vec!["gfx".to_string()];
    for pipe in 0..7 {
        for queue in 0..8 {
            names.push(format!("comp{pipe}.{queue}"));
        }
    }
    names
}

/// A buffer of one NOP that chains to itself, submitted `per_queue` times
/// to each of the 57 queues.
fn chain_on_every_queue(per_queue: usize) -> Trace {
    let mut source =
        String::from(".info gpu=gfx10.3\nloop: .mem 0x100000\n    NOP 0\n    chain loop, dwords(loop)\n.end\n");
    for _ in 0..per_queue {
        for q in queues() {
            source.push_str(&format!(".submit {q} loop\n"));
        }
    }
    assemble(&source)
}

fn options(limits: Limits) -> ReplayOptions {
    ReplayOptions { limits, ..ReplayOptions::default() }
}

fn limit_errors(outcome: &ReplayOutcome) -> Vec<&str> {
    outcome.summary.errors.iter().filter(|e| e.kind == "limit").map(|e| e.message.as_str()).collect()
}

/// A writer the test keeps a handle on.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

// ------------------------------------------------------------ work budget

#[test]
fn a_self_chaining_buffer_on_every_queue_stops_at_the_global_packet_budget() {
    let trace = chain_on_every_queue(1);
    assert!(trace.bytes().len() < 2500);
    let outcome = replay(&trace, &options(Limits { max_packets: 20_000, ..Limits::default() }));
    let expected = LimitExceeded { limit: Limit::Packets, value: 20_000 }.to_string();
    assert_eq!(limit_errors(&outcome), vec![expected.as_str()]);
    assert!(expected.contains("Limits::max_packets") && expected.contains("--max-packets"), "{expected}");
    let total = outcome.summary.packets.total;
    assert!(total > 20_000 && total <= 20_000 + OVERSHOOT, "{total} packets");
    // Every queue got its share: the budget is global, not per queue.
    assert_eq!(outcome.summary.queues.len(), 57);
    assert!(outcome.summary.queues.iter().all(|q| q.packets >= 64), "{:?}", outcome.summary.queues);
}

#[test]
fn more_submissions_do_not_add_to_the_budget() {
    let one = replay(&chain_on_every_queue(1), &options(Limits { max_packets: 20_000, ..Limits::default() }));
    let three = replay(&chain_on_every_queue(3), &options(Limits { max_packets: 20_000, ..Limits::default() }));
    assert_eq!(limit_errors(&three).len(), 1);
    assert!(three.summary.packets.total <= 20_000 + OVERSHOOT, "{}", three.summary.packets.total);
    assert_eq!(three.summary.packets.total, one.summary.packets.total);
}

#[test]
fn a_chained_register_run_stops_at_the_dword_budget() {
    // SET_CONTEXT_REG of 255 registers, chained to itself: few packets, many dwords.
    let mut values = String::from("0");
    for _ in 1..255 {
        values.push_str(", 0");
    }
    let source = format!(
        ".info gpu=gfx10.3\nloop: .mem 0x100000\n    SET_CONTEXT_REG DB_RENDER_CONTROL, {values}\n    chain loop, dwords(loop)\n.end\n.submit gfx loop\n"
    );
    let trace = assemble(&source);
    let outcome = replay(&trace, &options(Limits { max_dwords: 100_000, ..Limits::default() }));
    let expected = LimitExceeded { limit: Limit::Dwords, value: 100_000 }.to_string();
    assert_eq!(limit_errors(&outcome), vec![expected.as_str()]);
    assert!(expected.contains("--max-dwords"));
    let dwords = outcome.summary.queues[0].dwords;
    assert!(dwords > 100_000 && dwords <= 100_000 + OVERSHOOT * 261, "{dwords}");
}

#[test]
fn a_fill_loop_stops_at_the_write_budget() {
    // A 1 MiB fill of the same memory, over and over: no new page after the
    // first pass, so only the bytes written bound it.
    let trace = assemble(
        ".info gpu=gfx10.3\n.zero 0x10000000, 0x100000\nloop: .mem 0x100000\n    \
         DMA_DATA src_sel=data data=0xaaaa dst=0x10000000 size=0x100000\n    chain loop, dwords(loop)\n.end\n.submit gfx loop\n",
    );
    let outcome = replay(&trace, &options(Limits { max_write_bytes: 64 << 20, ..Limits::default() }));
    // The write past the budget is refused, by name: the 65th fill's first bytes.
    assert_eq!(
        limit_errors(&outcome),
        vec![
            "submission #0 on gfx: DMA_DATA at 0x100000 (buffer 0x100000 + dword 0): write of 256 bytes at \
             0x10000000 refused: bytes written to guest memory would exceed their budget of 67108864 \
             (Limits::max_write_bytes; raise it with --max-write-bytes)"
        ]
    );
    assert_eq!(outcome.summary.packets.by_opcode["DMA_DATA"], 64);
    assert_eq!(outcome.written_page_bytes, 1 << 20);
}

#[test]
fn a_multi_draw_of_2_32_draws_is_bounded_by_the_packet_budget_and_its_log() {
    let trace = assemble(
        ".info gpu=gfx10.3\nargs: .mem 0x180000\n    .dw 3, 1, 0, 0\n.end\nmain: .mem 0x100000\n    \
         SET_BASE 1, lo(args), hi(args)\n    DRAW_INDIRECT_MULTI 0, 0, 0, 0, 0xffffffff, 0, 0, 0, 2\n.end\n.submit gfx main\n",
    );
    let limits = Limits { max_packets: 5_000, max_events: 100, ..Limits::default() };
    let outcome = replay(&trace, &ReplayOptions { log: true, ..options(limits) });
    // One submission never runs more than the whole replay may.
    assert_eq!(
        limit_errors(&outcome),
        vec![
            "limit reached: more than 5000 packets run over all queues and submissions (Limits::max_packets; \
             raise it with --max-packets): submission #0 on gfx stopped at 0x100010 (buffer 0x100000 + dword 4)"
        ]
    );
    assert_eq!(outcome.log.len(), 101);
    assert_eq!(outcome.log[100], "truncated at 100 events");
    assert!(outcome.log[0].starts_with("gfx #1 draw DRAW_INDIRECT_MULTI count=3"), "{}", outcome.log[0]);
    assert!(outcome.log_truncated);
}

// ------------------------------------------------------------ written memory

#[test]
fn thirty_fills_of_64_mib_stop_at_the_written_memory_cap_naming_the_write() {
    let mut source = String::from(".info gpu=gfx10.3\n.zero 0x100000000, 0x80000000\nmain: .mem 0x100000\n");
    for i in 0..30u64 {
        let address = 0x1_0000_0000 + i * 0x400_0000;
        source.push_str(&format!("    DMA_DATA src_sel=data data=0x5555 dst={address:#x} size=0x3fffffc\n"));
    }
    source.push_str(".end\n.submit gfx main\n");
    let trace = assemble(&source);
    let outcome = replay(&trace, &options(Limits { max_written_memory: 1 << 20, ..Limits::default() }));
    assert_eq!(
        limit_errors(&outcome),
        vec![
            "submission #0 on gfx: DMA_DATA at 0x100000 (buffer 0x100000 + dword 0): write of 256 bytes at \
             0x100100000 refused: written guest memory would exceed its limit of 1048576 bytes \
             (Limits::max_written_memory; raise it with --max-memory)"
        ]
    );
    assert_eq!(outcome.written_page_bytes, 1 << 20);
}

#[test]
fn a_fill_that_moves_its_own_target_stops_at_the_written_memory_cap() {
    // Each pass fills 64 KiB, then adds 64 KiB to the fill's destination
    // dword inside the command buffer itself, then chains back.
    let trace = assemble(
        ".info gpu=gfx10.3\n.zero 0x10000000, 0x10000000\nloop: .mem 0x100000\n    \
         DMA_DATA src_sel=data data=0x1 dst=0x10000000 size=0x10000\n    \
         ATOMIC_MEM 0x0f, lo(loop+16), hi(loop+16), 0x10000, 0, 0, 0, 0\n    chain loop, dwords(loop)\n.end\n.submit gfx loop\n",
    );
    assert!(trace.bytes().len() < 400, "{}", trace.bytes().len());
    let outcome = replay(&trace, &options(Limits { max_written_memory: 1 << 20, ..Limits::default() }));
    let errors = limit_errors(&outcome);
    assert_eq!(errors.len(), 1, "{:?}", outcome.summary.errors);
    // The command buffer's page was copied by the first ATOMIC_MEM; 255 pages
    // (15 fills and a part) fit beside it.
    assert!(
        errors[0].starts_with("submission #0 on gfx: DMA_DATA at 0x100000 (buffer 0x100000 + dword 0): write of 256 bytes at 0x100ff000 refused"),
        "{}",
        errors[0]
    );
    assert_eq!(outcome.written_page_bytes, 1 << 20);
    // Fifteen fills ran; the sixteenth was refused.
    assert_eq!(outcome.summary.packets.by_opcode["DMA_DATA"], 15);
}

#[test]
fn a_host_write_past_the_cap_is_refused_by_name() {
    let mut writer = pm4core::trace::TraceWriter::new();
    writer.zero(0x10000, 0x10000).unwrap();
    writer.host_write(0x10000, &[7; 3 * PAGE_SIZE]).unwrap();
    let trace = writer.finish_trace().unwrap();
    let outcome = replay(&trace, &options(Limits { max_written_memory: 2 * PAGE_SIZE as u64, ..Limits::default() }));
    assert_eq!(
        limit_errors(&outcome),
        vec![
            "host write of 12288 bytes at 0x10000: write of 12288 bytes at 0x10000 refused: written guest \
             memory would exceed its limit of 8192 bytes (Limits::max_written_memory; raise it with --max-memory)"
        ]
    );
    assert_eq!(outcome.written_page_bytes, 0);
}

// ------------------------------------------------------------ collectors

#[test]
fn the_timeline_streams_and_stops_at_max_events() {
    let trace = chain_on_every_queue(1);
    let file = Shared::default();
    let limits = Limits { max_packets: 10_000, max_events: 500, ..Limits::default() };
    let outputs = ReplayOutputs { log: None, timeline: Some(Box::new(file.clone())) };
    let outcome = replay_to(&trace, &ReplayOptions { timeline: true, ..options(limits) }, outputs, &mut |_| {});
    assert_eq!(limit_errors(&outcome).len(), 1);
    assert!(outcome.timeline.is_none(), "streamed, not kept");
    assert!(outcome.timeline_truncated);
    let text = file.text();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let packets = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(packets, 500);
    let last: Vec<_> = events.iter().filter(|e| e["ph"] == "i").collect();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0]["name"], "truncated at 500 events");
    // The timeline's replay runs one packet a slice: 500 events cover every
    // queue, each named once.
    let names = events.iter().filter(|e| e["ph"] == "M").count();
    assert_eq!(names, 57);
    assert!(text.len() < 500 * 100, "{} bytes", text.len());
}

#[test]
fn the_event_log_streams_to_its_writer_and_stops_at_max_events() {
    let trace = assemble(
        ".info gpu=gfx10.3\n.zero 0x200000, 0x1000\nloop: .mem 0x100000\n    draw 3\n    \
         fence 0x200000, 1\n    chain loop, dwords(loop)\n.end\n.submit gfx loop\n",
    );
    let file = Shared::default();
    let limits = Limits { max_packets: 50_000, max_events: 1_000, ..Limits::default() };
    let outputs = ReplayOutputs { log: Some(Box::new(file.clone())), timeline: None };
    let outcome = replay_to(&trace, &ReplayOptions { log: true, ..options(limits) }, outputs, &mut |_| {});
    assert_eq!(limit_errors(&outcome).len(), 1);
    assert!(outcome.log.is_empty(), "streamed, not kept");
    let text = file.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1_001);
    assert_eq!(lines[1_000], "truncated at 1000 events");
    assert!(lines[0].starts_with("gfx #0 draw DRAW_INDEX_AUTO count=3"), "{}", lines[0]);
    assert!(lines[1].starts_with("gfx #1 fence RELEASE_MEM"), "{}", lines[1]);
}

#[test]
fn the_program_map_keeps_max_programs_addresses_and_counts_the_rest() {
    // Each pass binds the pixel shader at the next 256-byte address: a
    // COPY_DATA from a counter in memory, which ATOMIC_MEM then bumps.
    let trace = assemble(
        ".info gpu=gfx10.3\npgm: .mem 0x180000\n    .dw 0x1000\n.end\nloop: .mem 0x100000\n    \
         COPY_DATA src_sel=mem dst_sel=reg src=pgm dst=SPI_SHADER_PGM_LO_PS\n    \
         ATOMIC_MEM 0x0f, lo(pgm), hi(pgm), 1, 0, 0, 0, 0\n    draw 3\n    chain loop, dwords(loop)\n.end\n.submit gfx loop\n",
    );
    assert!(trace.bytes().len() < 400, "{}", trace.bytes().len());
    let limits = Limits { max_packets: 20_000, max_programs: 100, ..Limits::default() };
    let outcome = replay(&trace, &options(limits));
    assert_eq!(limit_errors(&outcome).len(), 1);
    assert_eq!(outcome.programs.len(), 100);
    assert_eq!(outcome.programs[0].address, 0x1000 << 8);
    assert_eq!(outcome.programs[99].address, (0x1000 + 99) << 8);
    let draws = outcome.summary.draws;
    assert!(draws > 2_000, "{draws}");
    assert_eq!(outcome.programs_not_kept, draws - 100);
}

#[test]
fn a_waiting_constant_engine_queues_at_most_256_buffers() {
    // The constant engine waits for a drawing-engine counter that never
    // moves, while the drawing engine loops handing it buffers.
    let trace = assemble(
        ".info gpu=gfx10.3\nce: .mem 0x101000\n    INCREMENT_CE_COUNTER 1\n    WAIT_ON_DE_COUNTER_DIFF 1\n.end\n\
         loop: .mem 0x100000\n    INDIRECT_BUFFER_CONST addr=ce size=dwords(ce)\n    chain loop, dwords(loop)\n.end\n\
         .submit gfx loop\n",
    );
    let outcome = replay(&trace, &options(Limits { max_packets: 100_000, ..Limits::default() }));
    let errors: Vec<_> = outcome.summary.errors.iter().map(|e| (e.kind.name(), e.message.as_str())).collect();
    assert_eq!(
        errors,
        vec![(
            "constant_engine_backlog",
            "submission #0 on gfx: INDIRECT_BUFFER_CONST at 0x100000 (buffer 0x100000 + dword 0): the constant \
             engine already has 256 buffers queued"
        )]
    );
    assert_eq!(outcome.summary.packets.by_opcode["INDIRECT_BUFFER_CONST"], 257);
}

// ------------------------------------------------------------ static walk

/// Assembler source of six levels of indirect buffers, each calling the
/// next eight times, down to one NOP (8^6 packets from a few hundred
/// bytes); the caller adds its submissions of `l0`.
fn fanned_out_source() -> String {
    let mut source = String::from(".info gpu=gfx10.3\n");
    for level in 0..6u64 {
        source.push_str(&format!("l{level}: .mem {:#x}\n", 0x100000 + level * 0x1000));
        for _ in 0..8 {
            source.push_str(&format!("    ib l{}, dwords(l{})\n", level + 1, level + 1));
        }
        source.push_str(".end\n");
    }
    source.push_str("l6: .mem 0x106000\n    NOP 0\n.end\n");
    source
}

#[test]
fn a_fanned_out_walk_stops_at_the_walk_budget_with_bounded_output() {
    // Each level calls the next eight times: 8^6 packets from a few hundred bytes.
    let mut source = fanned_out_source();
    for q in queues().iter().take(4) {
        source.push_str(&format!(".submit {q} l0\n"));
    }
    let trace = assemble(&source);
    let options = DisasmOptions { max_packets: 10_000, ..DisasmOptions::default() };
    let disassembler = Disassembler::for_trace(&trace, options);
    assert_eq!(disassembler.walk_budget(), 10_000);
    let mut out = Vec::new();
    let summary = disassembler.write_text(&mut out).unwrap();
    assert!(!summary.complete);
    assert_eq!(summary.packets, 10_000);
    assert_eq!(summary.submissions, 1, "the budget is for the whole walk");
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with('!') || l.trim_start().starts_with('!')).count(), 1);
    assert!(text.contains("packet budget of 10000 exhausted"), "{}", &text[text.len() - 300..]);
    assert!(text.len() < 10_000 * 256, "{} bytes", text.len());
    // The input's own dwords are never cut short.
    let small = Disassembler::for_trace(&trace, DisasmOptions { max_packets: 1, ..DisasmOptions::default() });
    assert_eq!(small.walk_budget(), trace.bytes().len() as u64 / 4);
}

// ------------------------------------------------------------ inspect

#[test]
fn inspect_finds_bindings_within_the_limits() {
    let trace = chain_on_every_queue(1);
    let limits = Limits { max_packets: 5_000, ..Limits::default() };
    let report = pm4core::inspect::inspect_trace_with(&trace, &limits);
    assert_eq!(report.submissions, 57);
    assert_eq!(
        report.bindings_incomplete.as_deref(),
        Some(LimitExceeded { limit: Limit::Packets, value: 5_000 }.to_string().as_str())
    );
}

// ------------------------------------------------------------ the `pm4` command

fn pm4(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pm4")).args(args).output().unwrap()
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("pm4-limits-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_command_refuses_what_is_not_a_regular_file_or_is_too_large() {
    for command in [&["replay"][..], &["inspect"], &["disasm"], &["disasm", "--raw"], &["import", "raw"]] {
        let mut args = command.to_vec();
        args.push("/dev/zero");
        if command[0] == "import" {
            args.extend(["-o", "/dev/null"]);
        }
        let o = pm4(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            "pm4: /dev/zero: not a regular file (a device, pipe or socket); only regular files are read\n",
            "{args:?}"
        );
    }
    let dir = temp_dir("files");
    let o = pm4(&["replay", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a regular file (a directory)"), "{}", stderr(&o));

    let trace = chain_on_every_queue(1);
    let path = dir.join("chain.pm4t");
    std::fs::write(&path, trace.bytes()).unwrap();
    let size = trace.bytes().len();
    let o = pm4(&["replay", path.to_str().unwrap(), "--max-file-size", "1000"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!(
            "pm4: {}: {size} bytes is more than the input file limit of 1000 bytes (Limits::max_file_bytes; raise it \
             with --max-file-size)\n",
            path.display()
        )
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn a_hostile_replay_exits_1_naming_the_limit_with_bounded_files() {
    let dir = temp_dir("replay");
    let path = dir.join("chain.pm4t");
    std::fs::write(&path, chain_on_every_queue(1).bytes()).unwrap();
    let (timeline, log) = (dir.join("timeline.json"), dir.join("events.log"));
    let o = pm4(&[
        "replay",
        path.to_str().unwrap(),
        "--max-packets",
        "20000",
        "--max-events",
        "1000",
        "--timeline",
        timeline.to_str().unwrap(),
        "--log",
        log.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let message = LimitExceeded { limit: Limit::Packets, value: 20_000 }.to_string();
    assert_eq!(stderr(&o), format!("pm4: replay error (limit): {message}\n"));
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["errors"][0]["kind"], "limit");
    let text = std::fs::read_to_string(&timeline).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), 1000);
    assert!(text.contains("\"truncated at 1000 events\""));
    // NOPs and chains make no event-log line.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "");
}

#[test]
fn a_fanned_out_disassembly_and_an_endless_inspect_exit_1_naming_the_limit() {
    let mut source = fanned_out_source();
    source.push_str(".submit gfx l0\n");
    let dir = temp_dir("disasm");
    let path = dir.join("fan.pm4t");
    std::fs::write(&path, assemble(&source).bytes()).unwrap();
    let o = pm4(&["disasm", path.to_str().unwrap(), "--max-packets", "5000"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "pm4: limit reached: more than 5000 packets visited by the static walk (DisasmOptions::max_packets; raise \
         it with --max-packets)\n"
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.ends_with(
            "; 5000 packets in 1 submission, 1 diagnostic, 0 packets with a problem (walk stopped by the packet budget)\n\
             ;   INDIRECT_BUFFER                  2668\n;   NOP                              2332\n"
        ),
        "{}",
        &text[text.len() - 400..]
    );
    assert!(text.len() < 5000 * 256, "{} bytes", text.len());

    let path = dir.join("chain.pm4t");
    std::fs::write(&path, chain_on_every_queue(1).bytes()).unwrap();
    let o = pm4(&["inspect", path.to_str().unwrap(), "--max-packets", "5000"]);
    assert_eq!(o.status.code(), Some(1));
    let message = LimitExceeded { limit: Limit::Packets, value: 5_000 }.to_string();
    assert_eq!(stderr(&o), format!("pm4: {message}\n"));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains(&format!("bound shaders incomplete: {message}\n")), "{text}");
}
