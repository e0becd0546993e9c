//! Diagnostics on corpus traces, with exact outputs: `pm4 state` (registers
//! at a packet and their last writers, `--diff`), `pm4 stats`, hang
//! forensics in the replay summary, `--patch` and `--skip-unmapped-ibs`,
//! and the command line's argument checks, pipes, logs and wording.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pm4core::backend::QueueId;
use pm4core::diagnostics::forensics::LastWrite;
use pm4core::diagnostics::state::{diff, state_at, StopAt};
use pm4core::diagnostics::stats::stream_stats;
use pm4core::replay::{replay, ReplayOptions};
use pm4core::trace::Trace;
use serde_json::json;

fn pm4(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pm4")).args(args).output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn corpus(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/corpus").join(name).to_str().unwrap().to_string()
}

fn load(name: &str) -> Trace {
    Trace::read_file(Path::new(&corpus(name))).unwrap()
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pm4-diagnostics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    // Tests run in parallel and some write the same file: write a private
    // copy, then rename it into place (atomic), so no reader sees half a file.
    let private = dir.join(format!("{name}.{:?}", std::thread::current().id()));
    std::fs::write(&private, bytes).unwrap();
    std::fs::rename(&private, &path).unwrap();
    path
}

/// Two queues stuck: gfx waits on a label it wrote 7 to (wants 8); comp0.0
/// waits on a label gfx wrote 1 to (wants 2).
const STALL: &str = "\
.info gpu=gfx10.3
.zero 0x200000, 0x1000
label = 0x200000
other = 0x200010

gfx: .mem 0x100000
    WRITE_DATA addr=label data=1
    WRITE_DATA addr=other data=7
    WAIT_REG_MEM function=eq addr=other ref=8
.end
comp: .mem 0x101000
    WRITE_DATA addr=0x200020 data=5
    WAIT_REG_MEM function=eq addr=0x200030 ref=2
    WAIT_REG_MEM function=eq addr=label ref=2
.end
.submit gfx gfx
.submit comp0.0 comp
";

fn stall_trace() -> PathBuf {
    temp("stall.pm4t", &pm4core::asm::assemble(STALL).unwrap())
}

fn writer(address: u64, index: u64, opcode: &str) -> serde_json::Value {
    json!({ "address": address, "index": index, "opcode": opcode })
}

// ------------------------------------------------------------------ state

#[test]
fn state_before_a_packet_lists_every_register_written_with_its_writer() {
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "#5"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // CLEAR_STATE (#1) wrote the 85 non-zero clear-state values; the rest of
    // the listing is the stream's own writes.
    let text = stdout(&o);
    let (cleared, written): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|l| l.ends_with("by #1 CLEAR_STATE at 0x10000c"));
    assert_eq!(cleared.len(), 85);
    assert!(cleared.contains(&"  CB_TARGET_MASK                           0xffffffff  by #1 CLEAR_STATE at 0x10000c"));
    assert_eq!(
        written.iter().map(|l| format!("{l}\n")).collect::<String>(),
        "gfx before packet #5 at 0x100044: 91 registers written\n\
         \x20 SPI_SHADER_USER_DATA_PS_0                0x00000010  by #3 SET_SH_REG at 0x100024\n\
         \x20 SPI_SHADER_USER_DATA_PS_1                0x00000011  by #3 SET_SH_REG at 0x100024\n\
         \x20 SPI_SHADER_USER_DATA_PS_2                0x00000012  by #3 SET_SH_REG at 0x100024\n\
         \x20 DB_RENDER_CONTROL                        0x00000001  by #2 SET_CONTEXT_REG at 0x100014\n\
         \x20 DB_COUNT_CONTROL                         0x00000002  by #2 SET_CONTEXT_REG at 0x100014\n\
         \x20 VGT_PRIMITIVE_TYPE                       0x00000004  by #4 SET_UCONFIG_REG at 0x100038\n"
    );
}

#[test]
fn state_json_by_address_has_the_documented_shape() {
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "0x100044", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The 85 non-zero clear-state values written by CLEAR_STATE (#1).
    let registers = got["registers"].as_object_mut().unwrap();
    let before = registers.len();
    registers.retain(|_, r| r["written_by"]["opcode"] != "CLEAR_STATE");
    assert_eq!(before - registers.len(), 85);
    assert_eq!(got["registers"].as_object().unwrap().len(), 6);
    let set_context = writer(0x100014, 2, "SET_CONTEXT_REG");
    let set_sh = writer(0x100024, 3, "SET_SH_REG");
    assert_eq!(
        got,
        json!({
            "queue": 0,
            "name": "gfx",
            "at": { "address": 0x100044, "index": 5 },
            "registers": {
                "DB_RENDER_CONTROL": { "value": 1, "written_by": set_context },
                "DB_COUNT_CONTROL": { "value": 2, "written_by": set_context },
                "SPI_SHADER_USER_DATA_PS_0": { "value": 0x10, "written_by": set_sh },
                "SPI_SHADER_USER_DATA_PS_1": { "value": 0x11, "written_by": set_sh },
                "SPI_SHADER_USER_DATA_PS_2": { "value": 0x12, "written_by": set_sh },
                "VGT_PRIMITIVE_TYPE": { "value": 4, "written_by": writer(0x100038, 4, "SET_UCONFIG_REG") },
            }
        })
    );
}

#[test]
fn state_names_the_last_writer_of_every_kind_of_register_write() {
    // Before CLEAR_STATE push/clear (#16): RMW, LOAD_*_REG(_INDEX) in
    // both data formats, type 0.
    let trace = load("registers.pm4t");
    let options = ReplayOptions::default();
    let state = state_at(&trace, &options, None, StopAt::Index(16)).unwrap();
    let by = |state: &pm4core::diagnostics::state::QueueState, name: &str| {
        let e = &state.registers[name];
        (e.value, e.written_by.index, e.written_by.opcode.clone())
    };
    let w = |v: u32, i: u64, op: &str| (v, i, op.to_string());
    assert_eq!(state.at.address, 0x1000f4);
    // 16 written by the stream's packets, and the 83 non-zero clear-state
    // values of CLEAR_STATE (#1) not written again since (85 less the
    // generic scissor pair the type-0 packet rewrote).
    let cleared = state.registers.values().filter(|e| e.written_by.opcode == "CLEAR_STATE").count();
    assert_eq!((state.registers.len() - cleared, cleared), (16, 83));
    assert_eq!(by(&state, "SPI_SHADER_PGM_LO_PS"), w(0xaaaa, 10, "LOAD_SH_REG"));
    assert_eq!(by(&state, "VGT_PRIMITIVE_TYPE"), w(0x1, 9, "REG_RMW"));
    assert_eq!(by(&state, "PA_SC_GENERIC_SCISSOR_TL"), w(0x0001_0001, 15, "TYPE0"));
    assert_eq!(by(&state, "PA_SC_GENERIC_SCISSOR_BR"), w(0x0100_0100, 15, "TYPE0"));
    assert_eq!(by(&state, "COMPUTE_USER_DATA_0"), w(0x22, 14, "LOAD_SH_REG_INDEX"));
    assert_eq!(by(&state, "DB_DEPTH_CLEAR"), w(0x11, 11, "LOAD_CONTEXT_REG_INDEX"));
    assert_eq!(by(&state, "PA_SC_WINDOW_OFFSET"), w(0x33, 12, "LOAD_CONTEXT_REG_INDEX"));
    assert_eq!(by(&state, "DB_RENDER_CONTROL"), w(0x44, 12, "LOAD_CONTEXT_REG_INDEX"));
    // Before the draw: CLEAR_STATE cleared the context, the pop (#18) put
    // it back: the same values, now written by the pop.
    let at_draw = state_at(&trace, &options, None, StopAt::Index(19)).unwrap();
    assert_eq!(by(&at_draw, "DB_RENDER_CONTROL"), w(0x44, 18, "CLEAR_STATE"));
    assert_eq!(by(&at_draw, "VGT_PRIMITIVE_TYPE"), w(0x1, 9, "REG_RMW"));
    assert!(diff(&state, &at_draw).changed.is_empty());
}

#[test]
fn state_diff_prints_what_changed_between_two_points() {
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "#3", "--diff", "0x100078"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "gfx from packet #3 at 0x100024 to packet #9 at 0x100078: 7 registers changed\n\
         \x20 SPI_SHADER_USER_DATA_PS_0                 unwritten -> 0x00000010  by #3 SET_SH_REG at 0x100024\n\
         \x20 SPI_SHADER_USER_DATA_PS_1                 unwritten -> 0x00000011  by #3 SET_SH_REG at 0x100024\n\
         \x20 SPI_SHADER_USER_DATA_PS_2                 unwritten -> 0x00000012  by #3 SET_SH_REG at 0x100024\n\
         \x20 COMPUTE_RESOURCE_LIMITS                   unwritten -> 0x000003ff  by #6 SET_SH_REG_INDEX at 0x100050\n\
         \x20 DB_RENDER_CONTROL                        0x00000001 -> 0x12340001  by #8 CONTEXT_REG_RMW at 0x100068\n\
         \x20 VGT_PRIMITIVE_TYPE                        unwritten -> 0x00000004  by #4 SET_UCONFIG_REG at 0x100038\n\
         \x20 VGT_INDEX_TYPE                            unwritten -> 0x00000001  by #5 SET_UCONFIG_REG_INDEX at 0x100044\n"
    );
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "#3", "--diff", "#5", "--json"]);
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        got,
        json!({
            "queue": 0,
            "name": "gfx",
            "from": { "address": 0x100024, "index": 3 },
            "to": { "address": 0x100044, "index": 5 },
            "changed": {
                "SPI_SHADER_USER_DATA_PS_0": { "before": null, "after": 0x10, "written_by": writer(0x100024, 3, "SET_SH_REG") },
                "SPI_SHADER_USER_DATA_PS_1": { "before": null, "after": 0x11, "written_by": writer(0x100024, 3, "SET_SH_REG") },
                "SPI_SHADER_USER_DATA_PS_2": { "before": null, "after": 0x12, "written_by": writer(0x100024, 3, "SET_SH_REG") },
                "VGT_PRIMITIVE_TYPE": { "before": null, "after": 4, "written_by": writer(0x100038, 4, "SET_UCONFIG_REG") },
            }
        })
    );
    let a = state_at(&load("registers.pm4t"), &ReplayOptions::default(), None, StopAt::Index(3)).unwrap();
    assert!(diff(&a, &a).changed.is_empty());
}

#[test]
fn state_on_a_compute_queue_and_on_a_packet_stuck_in_a_wait() {
    let o = pm4(&["state", &corpus("queues.pm4t"), "--at", "#2", "--queue", "comp0.0"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "comp0.0 before packet #2 at 0x101030: 4 registers written\n\
         \x20 COMPUTE_DISPATCH_INITIATOR               0x00000001  by #1 DISPATCH_DIRECT at 0x10101c\n\
         \x20 COMPUTE_DIM_X                            0x00000004  by #1 DISPATCH_DIRECT at 0x10101c\n\
         \x20 COMPUTE_DIM_Y                            0x00000001  by #1 DISPATCH_DIRECT at 0x10101c\n\
         \x20 COMPUTE_DIM_Z                            0x00000001  by #1 DISPATCH_DIRECT at 0x10101c\n"
    );
    // The wait gfx never gets past is reached: the state before it.
    let trace = Trace::read_file(&stall_trace()).unwrap();
    let state = state_at(&trace, &ReplayOptions::default(), None, StopAt::Address(0x100028)).unwrap();
    assert_eq!((state.name.as_str(), state.at.index), ("gfx", 2));
    assert!(state.registers.is_empty());
    let state = state_at(&trace, &ReplayOptions::default(), Some(QueueId(1)), StopAt::Index(1)).unwrap();
    assert_eq!((state.name.as_str(), state.at.address), ("comp0.0", 0x101014));
}

#[test]
fn state_errors_exit_2_naming_the_point() {
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "#99"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o), "pm4: --at #99: gfx ran 20 packets: there is no packet #99\n");
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "0x100010"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o), "pm4: --at 0x100010: no packet at 0x100010 ran on any queue\n");
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "#0", "--diff", "#50"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o), "pm4: --diff #50: gfx ran 20 packets: there is no packet #50\n");
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "nowhere"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("'nowhere' is not a packet address or #N"), "{}", stderr(&o));
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "#1", "--queue", "comp9.9"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("bad queue 'comp9.9': expected gfx, compP.Q (pipe 0-6, queue 0-7) or a number 0..=56"),
        "{}",
        stderr(&o)
    );
}

// ------------------------------------------------------------------ stats

#[test]
fn stats_json_has_the_documented_shape_on_every_queue() {
    let o = pm4(&["stats", &corpus("queues.pm4t"), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let queue = |number: u32, name: &str, packets: u64, by_opcode: serde_json::Value, dispatches: u64| {
        json!({
            "queue": number, "name": name, "packets": packets, "by_opcode": by_opcode, "nop_dwords": 0,
            "redundant_register_writes": 0, "context_rolls": 0, "draws": 0, "dispatches": dispatches
        })
    };
    assert_eq!(
        got,
        json!({ "queues": [
            queue(0, "gfx", 4, json!({"RELEASE_MEM": 1, "WAIT_REG_MEM": 1, "WRITE_DATA": 2}), 0),
            queue(1, "comp0.0", 3, json!({"DISPATCH_DIRECT": 1, "MEM_SEMAPHORE": 1, "WAIT_REG_MEM": 1}), 1),
            queue(26, "comp3.1", 4, json!({"MEM_SEMAPHORE": 1, "REWIND": 1, "WRITE_DATA": 2}), 0),
        ]})
    );
}

#[test]
fn stats_count_redundant_writes_context_rolls_and_padding() {
    // draws_dispatches: comp0.0 writes COMPUTE_NUM_THREAD_Y/Z = 1 twice
    // (set_program's defaults, then SET_SH_REG): one redundant write of
    // the three that store what is there. gfx: 7 draws; the context rolls
    // where INDEX_BUFFER_SIZE (VGT_DMA_SIZE) and the rest changed context
    // registers since the previous draw.
    let stats = stream_stats(&load("draws_dispatches.pm4t"), &ReplayOptions::default());
    let got: Vec<(&str, u64, u64, u64, u64, u64, u64)> = stats
        .queues
        .iter()
        .map(|q| {
            (
                q.name.as_str(),
                q.packets,
                q.nop_dwords,
                q.redundant_register_writes,
                q.context_rolls,
                q.draws,
                q.dispatches,
            )
        })
        .collect();
    assert_eq!(got, vec![("gfx", 17, 0, 0, 1, 7, 1), ("comp0.0", 4, 0, 1, 0, 0, 2)]);
    // The generated frame: 2 NOP dwords, and a context roll per draw that
    // follows SET_CONTEXT_REG writes.
    let frame = stream_stats(&load("frame.pm4t"), &ReplayOptions::default());
    let gfx = &frame.queues[0];
    assert_eq!(
        (gfx.packets, gfx.nop_dwords, gfx.redundant_register_writes, gfx.context_rolls, gfx.draws),
        // 1633: the first PA_SC_VPORT_SCISSOR_0_TL = 0 after CLEAR_STATE is
        // not redundant (its clear-state value is 0x80000000).
        (8326, 2, 1633, 400, 2000)
    );
    let o = pm4(&["stats", &corpus("registers.pm4t")]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with(
            "queue gfx: 20 packets, 1 draw, 0 dispatches\n\
             \x20 nop/padding dwords                 0\n\
             \x20 redundant register writes          0\n\
             \x20 context rolls                      1\n\
             \x20 CLEAR_STATE                        3\n"
        ),
        "{}",
        stdout(&o)
    );
}

// -------------------------------------------------------------- forensics

#[test]
fn a_stalled_replay_says_what_each_queue_waits_on_and_who_wrote_it() {
    let trace = stall_trace();
    let o = pm4(&["replay", trace.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 1);
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let wait = |address: u64, target: &str, reference: u64| {
        json!({
            "address": address,
            "opcode": "WAIT_REG_MEM",
            "fields": format!("MEM_SPACE=memory ADDR={target} FUNCTION=eq REFERENCE={reference:#x} MASK=0xffffffff OPERATION=0 ENGINE=ME POLL_INTERVAL=10"),
        })
    };
    assert_eq!(
        got["stalls"],
        json!([
            {
                "queue": 0,
                "name": "gfx",
                "error": false,
                "reason": "WAIT_REG_MEM on memory 0x200010: (value 0x7 & mask 0xffffffff) == reference 0x8 is false",
                "waiting": wait(0x100028, "0x200010", 8),
                "last_packets": [
                    { "address": 0x100000, "opcode": "WRITE_DATA" },
                    { "address": 0x100014, "opcode": "WRITE_DATA" },
                ],
                "watched": {
                    "address": 0x200010,
                    "last_written_by": { "queue": 0, "name": "gfx", "address": 0x100014, "index": 1, "opcode": "WRITE_DATA" },
                },
            },
            {
                "queue": 1,
                "name": "comp0.0",
                "error": false,
                "reason": "WAIT_REG_MEM on memory 0x200030: (value 0x0 & mask 0xffffffff) == reference 0x2 is false",
                "waiting": wait(0x101014, "0x200030", 2),
                "last_packets": [{ "address": 0x101000, "opcode": "WRITE_DATA" }],
                "watched": { "address": 0x200030, "last_written_by": null },
            },
        ])
    );
    let o = pm4(&["replay", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let text = stdout(&o);
    let from = text.find("stall on").unwrap();
    let to = text.find("error (deadlock)").unwrap();
    assert_eq!(
        &text[from..to],
        "stall on gfx: waits at 0x100028 on WAIT_REG_MEM MEM_SPACE=memory ADDR=0x200010 FUNCTION=eq REFERENCE=0x8 MASK=0xffffffff OPERATION=0 ENGINE=ME POLL_INTERVAL=10\n\
         \x20 WAIT_REG_MEM on memory 0x200010: (value 0x7 & mask 0xffffffff) == reference 0x8 is false\n\
         \x20 watched 0x200010: last written by gfx packet #1 WRITE_DATA at 0x100014\n\
         \x20 last 2 packets run:\n\
         \x20   0x000000100000 WRITE_DATA\n\
         \x20   0x000000100014 WRITE_DATA\n\
         stall on comp0.0: waits at 0x101014 on WAIT_REG_MEM MEM_SPACE=memory ADDR=0x200030 FUNCTION=eq REFERENCE=0x2 MASK=0xffffffff OPERATION=0 ENGINE=ME POLL_INTERVAL=10\n\
         \x20 WAIT_REG_MEM on memory 0x200030: (value 0x0 & mask 0xffffffff) == reference 0x2 is false\n\
         \x20 watched 0x200030: never written\n\
         \x20 last 1 packet run:\n\
         \x20   0x000000101000 WRITE_DATA\n"
    );
    assert!(text.contains("error (deadlock): deadlock: 2 queues wait and no host write is pending"), "{text}");
}

#[test]
fn forensics_name_a_host_write_and_keep_the_last_16_packets() {
    // The host writes the label after the first settle; the wait wants
    // another value. 20 NOPs before the wait: only the last 16 are kept.
    let mut source = String::from(".info gpu=gfx10.3\n.zero 0x200000, 0x100\ngfx: .mem 0x100000\n");
    for _ in 0..20 {
        source.push_str("    NOP\n");
    }
    source.push_str(
        "    WAIT_REG_MEM function=eq addr=0x200000 ref=9\n.end\n.submit gfx gfx\n.write 0x200000\n    .dw 3\n.end\n",
    );
    let trace = Trace::from_bytes(pm4core::asm::assemble(&source).unwrap()).unwrap();
    let outcome = replay(&trace, &ReplayOptions::default());
    let stalls = &outcome.summary.stalls;
    assert_eq!(stalls.len(), 1);
    assert_eq!(stalls[0].last_packets.len(), 16);
    assert_eq!(stalls[0].last_packets[0].address, 0x100000 + 4 * 4);
    assert!(stalls[0].last_packets.iter().all(|p| p.opcode == "NOP"));
    let watched = stalls[0].watched.as_ref().unwrap();
    assert_eq!(watched.last_written_by, Some(LastWrite::HostWrite { host_write_chunk: 4 }));
    // A replay that does not stall pays for no second pass and reports none.
    assert!(replay(&load("queues.pm4t"), &ReplayOptions::default()).summary.stalls.is_empty());
}

// ---------------------------------------------------------------- what-if

#[test]
fn a_patched_dword_changes_the_replay_before_the_first_submission() {
    // queues.pm4t: gfx's first WRITE_DATA stores 1 at 0x200100 (its data
    // dword is at 0x100010); patch it to 0x77.
    let o = pm4(&["replay", &corpus("queues.pm4t"), "--mem", "0x200100:4", "--patch", "0x100010=0x77", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got["memory"], json!({ "0x200100:4": "77000000" }));
    // The stall trace completes when both waits' reference dwords are patched.
    let trace = stall_trace();
    let o = pm4(&[
        "replay",
        trace.to_str().unwrap(),
        "--patch",
        "0x100038=7",
        "--patch",
        "0x101024=0",
        "--patch",
        "0x101040=1",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).ends_with("errors: none\n"), "{}", stdout(&o));
}

#[test]
fn patch_errors_exit_2_before_the_replay() {
    let t = corpus("queues.pm4t");
    let o = pm4(&["replay", &t, "--patch", "0x300000=1"]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o), "pm4: --patch 0x300000=0x1: the address is not inside a memory region of the trace\n");
    assert!(o.stdout.is_empty(), "the replay did not run");
    for (arg, fault) in [
        ("0x200ffe=1", "address 0x200ffe in '0x200ffe=1' is not dword-aligned"),
        ("0x100010", "'0x100010' is not ADDR=DWORD"),
        ("0x100010=0x100000000", "bad dword '0x100000000' in '0x100010=0x100000000' (a number below 2^32)"),
        ("x=1", "bad address 'x' in 'x=1'"),
    ] {
        let o = pm4(&["replay", &t, "--patch", arg]);
        assert_eq!(code(&o), 2, "{arg}");
        assert!(stderr(&o).contains(fault), "{arg}: {}", stderr(&o));
        assert!(o.stdout.is_empty());
    }
    // The last dword of a region is inside it.
    assert_eq!(code(&pm4(&["replay", &t, "--patch", "0x200ffc=1"])), 0);
}

#[test]
fn unmapped_ibs_stop_naming_the_indirect_buffer_or_are_skipped_when_asked() {
    // A raw dump: an IB to memory the dump does not hold, then a NOP.
    let words: [u32; 5] = [0xC002_3F00, 0x0000_1000, 0x0000_0000, 16, 0xFFFF_1000];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let raw = temp("dump.bin", &bytes);
    let trace = temp("dump.pm4t", b"");
    let o = pm4(&["import", "raw", raw.to_str().unwrap(), "-o", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let t = trace.to_str().unwrap();
    let o = pm4(&["replay", t]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        stderr(&o),
        "pm4: replay error (memory): submission #0 on gfx: INDIRECT_BUFFER at 0xfff000000000 (buffer 0xfff000000000 + dword 0): unmapped guest memory at 0x1000 (access of 4 bytes) (an indirect buffer the trace holds no memory for, as in command-only captures: --skip-unmapped-ibs reports such buffers and goes on)\n"
    );
    let o = pm4(&["replay", t, "--json"]);
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        got["stalls"],
        json!([{
            "queue": 0,
            "name": "gfx",
            "error": true,
            "reason": "submission #0 on gfx: INDIRECT_BUFFER at 0xfff000000000 (buffer 0xfff000000000 + dword 0): unmapped guest memory at 0x1000 (access of 4 bytes)",
            "waiting": {
                "address": 0xfff0_0000_0000u64,
                "opcode": "INDIRECT_BUFFER",
                "fields": "IB_BASE=0x1000 IB_SIZE=16 CHAIN=0 VALID=0 PRE_ENA=0 VMID=0 IB_CONTROL=0x00000010",
            },
            "last_packets": [],
            "watched": null,
        }])
    );
    let o = pm4(&["replay", t, "--skip-unmapped-ibs", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        got["skipped_ibs"],
        json!([{ "queue": 0, "name": "gfx", "address": 0x1000, "size_dw": 16, "packet": 0xfff0_0000_0000u64 }])
    );
    assert_eq!(got["packets"]["by_opcode"], json!({ "INDIRECT_BUFFER": 1, "NOP": 1 }));
    let log = temp("skip.log", b"");
    let o = pm4(&["replay", t, "--skip-unmapped-ibs", "--log", log.to_str().unwrap()]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("skipped indirect buffer on gfx at 0xfff000000000: 0x1000, 16 dwords not in the trace\n")
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "gfx #0 skipped_ib addr=0x1000 size_dw=16 packet=0xfff000000000\n"
    );
}

// ------------------------------------------------------- the command line

#[test]
fn mem_and_reg_argument_errors_exit_2_before_the_replay() {
    let t = corpus("queues.pm4t");
    for (args, message) in [
        (
            vec!["--mem", "0xffffffffffffffff:16"],
            "pm4: --mem memory range '0xffffffffffffffff:16': guest access at 0xffffffffffffffff of 16 bytes runs past the 48-bit address space\n",
        ),
        (vec!["--mem", "0x10:0"], "pm4: --mem memory range '0x10:0' is empty\n"),
        (vec!["--mem", "0x10:4"], "pm4: --mem 0x10:4: the range is not inside one memory region of the trace\n"),
        (vec!["--mem", "0x200ffc:8"], "pm4: --mem 0x200ffc:8: the range is not inside one memory region of the trace\n"),
        (vec!["--reg", "NO_SUCH_REGISTER"], "pm4: --reg no register named 'NO_SUCH_REGISTER' in the gfx10.3 database\n"),
        (vec!["--reg", "VGT_PRIMITIVE_TYPE@comp9.0"], "pm4: --reg VGT_PRIMITIVE_TYPE@comp9.0: bad queue 'comp9.0': expected gfx, compP.Q (pipe 0-6, queue 0-7) or a number 0..=56\n"),
    ] {
        let mut all = vec!["replay", t.as_str()];
        all.extend(args.iter());
        let o = pm4(&all);
        assert_eq!(code(&o), 2, "{args:?}");
        assert_eq!(stderr(&o), message, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}: the replay did not run");
    }
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/radv-frame.pm4t");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pm4"))
        .args(["disasm", trace.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take()); // what `head` does after its lines
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(err, "");
    assert!(first.starts_with(b"; submission 0: queue 0 (gfx)"));
}

#[test]
fn one_submission_numbering_from_0_in_disasm_and_replay() {
    let trace = stall_trace();
    let o = pm4(&["disasm", trace.to_str().unwrap()]);
    let text = stdout(&o);
    assert!(text.starts_with("; submission 0: queue 0 (gfx) 0x100000"), "{text}");
    assert!(text.contains("; submission 1: queue 1 (comp0.0) 0x101000"), "{text}");
    let o = pm4(&["replay", trace.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(err.contains("gfx submission #0 (0x100000"), "{err}");
    assert!(err.contains("comp0.0 submission #1 (0x101000"), "{err}");
}

#[test]
fn plurals_and_operator_names_read_as_english() {
    let o = pm4(&["replay", &corpus("registers.pm4t")]);
    let text = stdout(&o);
    assert!(text.starts_with("gpu gfx10.3: 1 submission, 20 packets\n"), "{text}");
    assert!(text.contains("queue gfx          1 submission         20 packets         71 dwords\n"), "{text}");
    let o = pm4(&["disasm", &corpus("registers.pm4t")]);
    assert!(
        stdout(&o).contains("; 20 packets in 1 submission, 0 diagnostics, 0 packets with a problem\n"),
        "{}",
        stdout(&o)
    );
    let o = pm4(&["disasm", &corpus("queues.pm4t")]);
    assert!(
        stdout(&o).contains("WAIT_REG_MEM MEM_SPACE=memory ADDR=0x200000 FUNCTION=ge REFERENCE=0x1"),
        "{}",
        stdout(&o)
    );
    let o = pm4(&["inspect", &corpus("ibs.pm4t")]);
    assert!(stdout(&o).contains("6 regions (4324 bytes mapped), 1 submission, 0 host writes\n"), "{}", stdout(&o));
    assert!(stdout(&o).contains("SUBM        24 B  9 dwords at 0x100000 on gfx"), "{}", stdout(&o));
}

#[test]
fn inspect_json_has_one_shape_and_unknown_files_exit_2() {
    let o = pm4(&["inspect", &corpus("ibs.pm4t"), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let got: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(got["format"], "trace");
    assert_eq!(got["report"]["submissions"], 1);
    let unknown = temp("unknown.bin", b"not a format at all, just words");
    for json in [false, true] {
        let mut args = vec!["inspect", unknown.to_str().unwrap()];
        if json {
            args.push("--json");
        }
        let o = pm4(&args);
        assert_eq!(code(&o), 2);
        assert!(o.stdout.is_empty());
        assert_eq!(
            stderr(&o),
            format!("pm4: {}: not a format pm4 knows (31 bytes, starting 6e6f74206120666f)\n", unknown.display())
        );
    }
    let malformed = temp("malformed.bin", b"DVLB\x01\x00\x00\x00");
    let o = pm4(&["inspect", malformed.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("malformed 3DS DVLB shader binary"), "{}", stderr(&o));
}

#[test]
fn pm4_log_writes_no_colour_codes_into_a_pipe() {
    let o = Command::new(env!("CARGO_BIN_EXE_pm4"))
        .args(["replay", &corpus("registers.pm4t")])
        .env("PM4_LOG", "debug")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    let err = stderr(&o);
    assert!(err.contains("type-0 packet writes registers from 0xa090"), "{err}");
    assert!(!err.contains('\x1b'), "{err}");
}

#[test]
fn every_argument_has_help_text() {
    for command in ["replay", "state", "stats", "disasm", "asm", "inspect"] {
        let o = pm4(&[command, "--help"]);
        assert_eq!(code(&o), 0);
        let text = stdout(&o);
        // clap prints an argument with no help as its bare name: every line
        // under Arguments/Options that names an argument also explains it.
        for line in text.lines().filter(|l| l.starts_with("  ") && !l.starts_with("   ")) {
            let words: Vec<&str> = line.split("  ").filter(|w| !w.trim().is_empty()).collect();
            assert!(words.len() >= 2, "{command}: no help for '{line}'");
        }
    }
    for (a, b) in [("import", "raw"), ("import", "kycap")] {
        let o = pm4(&[a, b, "--help"]);
        for line in stdout(&o).lines().filter(|l| l.starts_with("  ") && !l.starts_with("   ")) {
            let words: Vec<&str> = line.split("  ").filter(|w| !w.trim().is_empty()).collect();
            assert!(words.len() >= 2, "{a} {b}: no help for '{line}'");
        }
    }
}

// --------------------------------------------------------------- timeline

#[test]
fn the_timeline_shows_each_wait_as_a_span_with_an_arrow_from_its_release() {
    let out = temp("queues.timeline.json", b"");
    let o = pm4(&["replay", &corpus("queues.pm4t"), "--timeline", out.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The summary is the plain replay's, whatever the timeline's replay did.
    assert!(stdout(&o).contains("waits 2  fences 1"), "{}", stdout(&o));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let packets: Vec<(u64, u64, &str)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e.get("cat").is_none())
        .map(|e| (e["ts"].as_u64().unwrap(), e["tid"].as_u64().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        packets,
        vec![
            (1, 0, "WRITE_DATA"),
            (2, 0, "RELEASE_MEM"),
            (3, 1, "WAIT_REG_MEM"),
            (4, 1, "DISPATCH_DIRECT"),
            (5, 1, "MEM_SEMAPHORE"),
            (6, 26, "MEM_SEMAPHORE"),
            (7, 26, "WRITE_DATA"),
            (8, 0, "WAIT_REG_MEM"),
            (9, 0, "WRITE_DATA"),
            (10, 26, "REWIND"),
            (11, 26, "WRITE_DATA"),
        ]
    );
    let waits: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "wait").collect();
    let span = |tid: u64, ts: u64, dur: u64, packet: &str, reason: &str, released_by: &str| {
        json!({
            "ph": "X", "cat": "wait", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "name": "wait",
            "args": { "packet": packet, "reason": reason, "released_by": released_by }
        })
    };
    let flow = |ph: &str, id: u64, tid: u64, ts: u64| {
        let mut e = json!({ "ph": ph, "cat": "wait", "id": id, "pid": 1, "tid": tid, "ts": ts, "name": "release" });
        if ph == "f" {
            e["bp"] = json!("e");
        }
        e
    };
    let expected = [
        // comp0.0 waits for gfx's fence: released by RELEASE_MEM (clock 2).
        span(
            1,
            1,
            2,
            "0x101000",
            "WAIT_REG_MEM on memory 0x200000: (value 0x0 & mask 0xffffffff) >= reference 0x1 is false",
            "gfx packet at clock 2",
        ),
        flow("s", 1, 0, 2),
        flow("f", 1, 1, 3),
        // comp3.1's semaphore: signalled by comp0.0's MEM_SEMAPHORE (clock 5).
        span(26, 1, 5, "0x102000", "MEM_SEMAPHORE wait on 0x200020: zero", "comp0.0 packet at clock 5"),
        flow("s", 2, 1, 5),
        flow("f", 2, 26, 6),
        // gfx and the REWIND: released by the trace's host writes.
        span(
            0,
            3,
            5,
            "0x100034",
            "WAIT_REG_MEM on memory 0x200010: (value 0x0 & mask 0xff) == reference 0x55 is false",
            "host write (chunk 8)",
        ),
        span(26, 7, 3, "0x102024", "REWIND at 0x102028: VALID not set", "host write (chunk 9)"),
    ];
    assert_eq!(waits, expected.iter().collect::<Vec<_>>());
}

#[test]
fn a_stalled_wait_runs_to_the_end_of_the_timeline() {
    let trace = stall_trace();
    let out = temp("stall.timeline.json", b"");
    let o = pm4(&["replay", trace.to_str().unwrap(), "--timeline", out.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let waits: Vec<(u64, u64, u64, String)> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "wait")
        .map(|e| {
            let released = e["args"]["released_by"].as_str().unwrap().to_string();
            (e["tid"].as_u64().unwrap(), e["ts"].as_u64().unwrap(), e["dur"].as_u64().unwrap(), released)
        })
        .collect();
    let never = "never: the replay stalled".to_string();
    assert_eq!(waits, vec![(0, 3, 1, never.clone()), (1, 3, 1, never)]);
}

#[test]
fn log_lines_carry_the_packet_number_state_takes() {
    // draws_dispatches.log: "gfx #7 draw DRAW_INDEX_OFFSET_2 …".
    let golden = std::fs::read_to_string(corpus("draws_dispatches.log")).unwrap();
    let line = golden.lines().find(|l| l.contains("DRAW_INDEX_OFFSET_2")).unwrap();
    assert!(line.starts_with("gfx #7 draw DRAW_INDEX_OFFSET_2 count=12"), "{line}");
    let state = state_at(&load("draws_dispatches.pm4t"), &ReplayOptions::default(), None, StopAt::Index(7)).unwrap();
    assert_eq!(state.at.address, 0x100058);
    // The packet itself writes VGT_NUM_INDICES: not yet at the point before it.
    assert_eq!(state.registers["VGT_NUM_INDICES"].value, 6);
    assert_eq!(state.registers["VGT_NUM_INDICES"].written_by.opcode, "DRAW_INDEX_2");
}

#[test]
fn a_failed_submission_is_described_with_the_packets_before_it() {
    let source = "\
.info gpu=gfx10.3
gfx: .mem 0x100000
    NOP
    NOP
    WRITE_DATA addr=0x900000 data=1
    NOP
.end
.submit gfx gfx
";
    let trace = Trace::from_bytes(pm4core::asm::assemble(source).unwrap()).unwrap();
    let outcome = replay(&trace, &ReplayOptions::default());
    let stalls = &outcome.summary.stalls;
    assert_eq!(stalls.len(), 1);
    let f = &stalls[0];
    assert!(f.error);
    assert_eq!((f.queue, f.name.as_str()), (0, "gfx"));
    let waiting = f.waiting.as_ref().unwrap();
    assert_eq!((waiting.address, waiting.opcode.as_str()), (0x100008, "WRITE_DATA"));
    let last: Vec<(u64, &str)> = f.last_packets.iter().map(|p| (p.address, p.opcode.as_str())).collect();
    assert_eq!(last, vec![(0x100000, "NOP"), (0x100004, "NOP")]);
    assert_eq!(f.watched, None);
    assert!(f.reason.contains("unmapped guest memory at 0x900000"), "{}", f.reason);
    let text = pm4core::replay::format_summary(&outcome.summary);
    assert!(text.contains("error on gfx: stopped at 0x100008 on WRITE_DATA "), "{text}");
}
