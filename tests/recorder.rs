//! A run captured by the recorder replays to the same events.

mod common;

use common::{Cmd, SCRATCH};
use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::gpu::{Gpu, GpuConfig};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::packet::Opcode;
use pm4core::recorder::Recorder;
use pm4core::regs::gfx103 as r;
use pm4core::replay::{replay, ReplayOptions};
use pm4core::trace::{Trace, TraceEvent};

#[test]
fn a_recorded_run_replays_to_the_same_events() {
    let memory = SparseMemory::new();
    memory.map_zeroed(SCRATCH, 0x10_0000).unwrap();
    // Memory the recorder must not capture: never touched.
    memory.map_zeroed(0x4000_0000, 0x100_0000).unwrap();
    let child = Cmd::new()
        .set_uconfig(r::VGT_PRIMITIVE_TYPE, &[4])
        .pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2])
        .release32(SCRATCH + 0x10, 7);
    let graphics = Cmd::new().ib(0x3000, child.len(), false).wait_mem(SCRATCH + 0x20, 3, 1, 1).write_mem(SCRATCH, &[9]);
    let compute = Cmd::new().wait_mem(SCRATCH + 0x10, 3, 7, 0xFFFF_FFFF).pkt3(Opcode::DISPATCH_DIRECT, &[2, 1, 1, 1]);
    memory.map_dwords(0x1000, graphics.dwords()).unwrap();
    memory.map_dwords(0x2000, compute.dwords()).unwrap();
    memory.map_dwords(0x3000, child.dwords()).unwrap();

    let (recorder, log) = Recorder::new(memory);
    log.info("description", "recorder test");
    let gpu = Gpu::deterministic(recorder, RecordingBackend::new(), GpuConfig::default());
    log.submit(0, 0x1000, graphics.len());
    gpu.submit(QueueId(0), 0x1000, graphics.len()).unwrap();
    log.submit(1, 0x2000, compute.len());
    gpu.submit(QueueId(1), 0x2000, compute.len()).unwrap();
    log.host_write(SCRATCH + 0x20, &1u32.to_le_bytes());
    gpu.write_memory(SCRATCH + 0x20, &1u32.to_le_bytes()).unwrap();
    gpu.run_until_idle().unwrap();
    let original = gpu.with_backend(|b| b.lines.clone()).unwrap();
    assert_eq!(gpu.with_memory_ref(|m| m.read_u32(SCRATCH).unwrap()), 9);
    let bytes = gpu.with_memory_ref(|m| m.finish()).unwrap();

    let trace = Trace::from_bytes(bytes).unwrap();
    let mapped: u64 = trace.events().iter().filter_map(|e| e.region()).map(|(_, len)| len).sum();
    assert!(mapped <= 6 * 256, "only touched lines are captured ({mapped} bytes)");
    assert!(matches!(trace.events().last(), Some(TraceEvent::HostWrite { .. })));
    let outcome = replay(&trace, &ReplayOptions { log: true, ..Default::default() });
    assert!(outcome.succeeded(), "{:?}", outcome.summary.errors);
    // The replay's log numbers each line with its packet (`gfx #2 draw …`).
    assert_eq!(
        outcome.log.iter().take(2).map(|l| l.split(' ').nth(1).unwrap_or("")).collect::<Vec<_>>(),
        vec!["#2", "#3"]
    );
    let unnumbered: Vec<String> = outcome
        .log
        .iter()
        .map(|l| {
            let mut words: Vec<&str> = l.split(' ').collect();
            words.remove(1);
            words.join(" ")
        })
        .collect();
    assert_eq!(unnumbered, original);
    assert_eq!(outcome.summary.draws, 1);
    assert_eq!(outcome.summary.dispatches, 1);
}
