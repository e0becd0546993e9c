//! The GPU front end: queues waiting on each other, host writes, stalls,
//! interrupts, errors, shutdown, in deterministic and threaded mode.

use std::collections::BTreeSet;
use std::time::Duration;

use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::gpu::{Gpu, GpuConfig, GpuError, Interrupt, RunStatus, Submission};
use pm4core::memory::{GuestMemory, SparseMemory};
use pm4core::packet::body::{CompareFunction, PollTarget};
use pm4core::processor::{Pm4Error, SuspendReason};

// ---------------------------------------------------------------- packets

const WRITE_DATA: u8 = 0x37;
const WAIT_REG_MEM: u8 = 0x3C;
const RELEASE_MEM: u8 = 0x49;
const ATOMIC_MEM: u8 = 0x1E;

fn packet(out: &mut Vec<u32>, opcode: u8, body: &[u32]) {
    out.push(0xC000_0000 | ((body.len() as u32 - 1) << 16) | (u32::from(opcode) << 8));
    out.extend_from_slice(body);
}

fn lo(a: u64) -> u32 {
    a as u32
}

fn hi(a: u64) -> u32 {
    (a >> 32) as u32
}

/// WRITE_DATA to memory (DST_SEL 5, WR_CONFIRM).
fn write_data(out: &mut Vec<u32>, address: u64, values: &[u32]) {
    let mut body = vec![(5 << 8) | (1 << 20), lo(address), hi(address)];
    body.extend_from_slice(values);
    packet(out, WRITE_DATA, &body);
}

/// WAIT_REG_MEM on memory: wait until `*address == value`.
fn wait_eq(out: &mut Vec<u32>, address: u64, value: u32) {
    packet(out, WAIT_REG_MEM, &[3 | (1 << 4), lo(address), hi(address), value, 0xFFFF_FFFF, 4]);
}

/// WAIT_REG_MEM on a register: wait until `reg[index] == value`.
fn wait_reg_eq(out: &mut Vec<u32>, index: u32, value: u32) {
    packet(out, WAIT_REG_MEM, &[3, index, 0, value, 0xFFFF_FFFF, 4]);
}

/// RELEASE_MEM BOTTOM_OF_PIPE_TS, INT_SEL 2 (interrupt after write
/// confirm), DATA_SEL 1 (32-bit data).
fn release_int(out: &mut Vec<u32>, address: u64, data: u32, ctxid: u32) {
    packet(out, RELEASE_MEM, &[0x28 | (5 << 8), (2 << 24) | (1 << 29), lo(address), hi(address), data, 0, ctxid]);
}

/// ATOMIC_MEM 32-bit add.
fn atomic_add(out: &mut Vec<u32>, address: u64, value: u32) {
    packet(out, ATOMIC_MEM, &[0x0F, lo(address), hi(address), value, 0, 0, 0, 10]);
}

// ---------------------------------------------------------------- memory

const CMD: u64 = 0x10_0000;
const CMD_SIZE: u64 = 0x40_0000;
const DATA: u64 = 0x100_0000;
const DATA_SIZE: u64 = 0x1_0000;
const UNMAPPED: u64 = 0x7000_0000;

/// Guest memory with a command-buffer region and a data region; buffers are
/// placed one after another, 256-byte aligned.
struct Mem {
    mem: SparseMemory,
    next: u64,
}

impl Mem {
    fn new() -> Self {
        let mem = SparseMemory::new();
        mem.map_zeroed(CMD, CMD_SIZE).unwrap();
        mem.map_zeroed(DATA, DATA_SIZE).unwrap();
        Self { mem, next: CMD }
    }

    /// Places a command buffer; returns its address and size in dwords.
    fn buffer(&mut self, dwords: &[u32]) -> (u64, u32) {
        let address = self.next;
        let bytes: Vec<u8> = dwords.iter().flat_map(|d| d.to_le_bytes()).collect();
        self.mem.write_bytes(address, &bytes).unwrap();
        self.next = (address + bytes.len() as u64 + 255) & !255;
        assert!(self.next <= CMD + CMD_SIZE);
        (address, dwords.len() as u32)
    }
}

type TestGpu = Gpu<SparseMemory, RecordingBackend>;

#[derive(Clone, Copy, Debug)]
enum Mode {
    Deterministic,
    Threaded,
}

const MODES: [Mode; 2] = [Mode::Deterministic, Mode::Threaded];

fn gpu_with(mem: Mem, mode: Mode, config: GpuConfig) -> TestGpu {
    match mode {
        Mode::Deterministic => Gpu::deterministic(mem.mem, RecordingBackend::new(), config),
        Mode::Threaded => Gpu::threaded(mem.mem, RecordingBackend::new(), config).unwrap(),
    }
}

fn gpu(mem: Mem, mode: Mode) -> TestGpu {
    gpu_with(mem, mode, GpuConfig::default())
}

fn submit(gpu: &TestGpu, queue: QueueId, buffer: (u64, u32)) -> Submission {
    gpu.submit(queue, buffer.0, buffer.1).unwrap()
}

fn read32(gpu: &TestGpu, address: u64) -> u32 {
    gpu.with_memory_ref(|m| m.read_u32(address).unwrap())
}

fn read_bytes(gpu: &TestGpu, address: u64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    gpu.with_memory_ref(|m| m.read_bytes(address, &mut out).unwrap());
    out
}

fn comp(pipe: u32, queue: u32) -> QueueId {
    QueueId::compute(pipe, queue).unwrap()
}

/// The final result: `wait` in threaded mode, `poll` after a run in
/// deterministic mode (both must agree there).
fn result(s: &Submission) -> Result<pm4core::gpu::SubmissionReport, GpuError> {
    s.poll().expect("submission not complete")
}

fn drain_interrupts(gpu: &TestGpu, queue: QueueId) -> Vec<Interrupt> {
    gpu.interrupts(queue).unwrap().try_iter().collect()
}

// ---------------------------------------------------------------- tests

#[test]
fn compute_queue_waits_on_label_written_later_by_graphics() {
    for mode in MODES {
        let label = DATA;
        let out = DATA + 0x10;
        let mut mem = Mem::new();
        let mut c = Vec::new();
        wait_eq(&mut c, label, 1);
        write_data(&mut c, out, &[0xAA55]);
        let compute_buf = mem.buffer(&c);
        let mut g = Vec::new();
        write_data(&mut g, label, &[1]);
        let gfx_buf = mem.buffer(&g);

        let gpu = gpu(mem, mode);
        let waiting = submit(&gpu, comp(0, 0), compute_buf);
        match gpu.run_until_stalled().unwrap() {
            RunStatus::Stalled(report) => {
                assert_eq!(report.queues.len(), 1, "{mode:?}");
                assert_eq!(report.queues[0].queue, comp(0, 0));
            }
            other => panic!("{mode:?}: expected a stall, got {other:?}"),
        }
        assert!(waiting.poll().is_none());
        let writer = submit(&gpu, QueueId::GRAPHICS, gfx_buf);
        gpu.run_until_idle().unwrap();
        let report = waiting.wait().unwrap();
        assert_eq!(report.queue, comp(0, 0));
        assert_eq!(report.packets, 2);
        assert_eq!(report.waits, 1, "{mode:?}: suspended once, not polled");
        writer.wait().unwrap();
        assert_eq!(read32(&gpu, out), 0xAA55);
        assert_eq!(read32(&gpu, label), 1);
    }
}

#[test]
fn wait_chain_across_eight_compute_queues_completes_in_order() {
    for mode in MODES {
        let flags = DATA + 0x100;
        let seq = DATA + 0x200;
        let queues: Vec<QueueId> = (0..8).map(|i| comp(i % 7, i / 7 + i % 3)).collect();
        let mut mem = Mem::new();
        let mut buffers = Vec::new();
        for (i, _) in queues.iter().enumerate() {
            let i = i as u64;
            let mut c = Vec::new();
            wait_eq(&mut c, flags + 4 * i, 1);
            release_int(&mut c, seq + 4 * i, i as u32 + 1, 0x100 + i as u32);
            write_data(&mut c, flags + 4 * (i + 1), &[1]);
            buffers.push(mem.buffer(&c));
        }
        let gpu = gpu(mem, mode);
        // Submit the chain's end first.
        let handles: Vec<Submission> = (0..8).rev().map(|i| submit(&gpu, queues[i], buffers[i])).collect();
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(r) if r.queues.len() == 8));
        gpu.write_memory(flags, &1u32.to_le_bytes()).unwrap();
        gpu.run_until_idle().unwrap();
        for h in &handles {
            h.wait().unwrap();
        }
        let mut interrupts: Vec<Interrupt> = queues.iter().flat_map(|&q| drain_interrupts(&gpu, q)).collect();
        interrupts.sort_by_key(|i| i.sequence);
        let order: Vec<QueueId> = interrupts.iter().map(|i| i.fence.queue).collect();
        assert_eq!(order, queues, "{mode:?}");
        let ctxids: Vec<u32> = interrupts.iter().map(|i| i.fence.int_ctxid).collect();
        assert_eq!(ctxids, (0x100..0x108).collect::<Vec<u32>>());
        for i in 0..8u64 {
            assert_eq!(read32(&gpu, seq + 4 * i), i as u32 + 1);
            assert_eq!(read32(&gpu, flags + 4 * (i + 1)), 1);
        }
        // The backend saw the fences in the same order.
        let fence_queues: Vec<String> = gpu
            .with_backend(|b| {
                b.lines
                    .iter()
                    .filter(|l| l.contains(" fence "))
                    .map(|l| l.split(' ').next().unwrap().to_string())
                    .collect()
            })
            .unwrap();
        assert_eq!(fence_queues, queues.iter().map(|q| q.to_string()).collect::<Vec<_>>());
    }
}

#[test]
fn all_57_queues_at_once_give_exact_memory() {
    for mode in MODES {
        let region = DATA + 0x1000;
        let counter = DATA;
        let done = DATA + 4;
        let mut mem = Mem::new();
        let mut buffers = Vec::new();
        for q in 0..57u32 {
            let mut c = Vec::new();
            if q == 0 {
                // Graphics waits for every compute queue.
                wait_eq(&mut c, counter, 56);
                write_data(&mut c, done, &[0xD0DE]);
            }
            for i in 0..16u32 {
                write_data(&mut c, region + u64::from(q) * 64 + u64::from(i) * 4, &[(q << 16) | i]);
            }
            if q != 0 {
                atomic_add(&mut c, counter, 1);
            }
            buffers.push(mem.buffer(&c));
        }
        let gpu = gpu_with(mem, mode, GpuConfig { slice_packets: 3, ..GpuConfig::default() });
        let handles: Vec<Submission> = (0..57).map(|q| submit(&gpu, QueueId(q), buffers[q as usize])).collect();
        gpu.run_until_idle().unwrap();
        for h in &handles {
            assert!(h.wait().is_ok());
        }
        let mut expected = Vec::new();
        for q in 0..57u32 {
            for i in 0..16u32 {
                expected.extend_from_slice(&((q << 16) | i).to_le_bytes());
            }
        }
        assert_eq!(read_bytes(&gpu, region, 57 * 64), expected, "{mode:?}");
        assert_eq!(read32(&gpu, counter), 56);
        assert_eq!(read32(&gpu, done), 0xD0DE);
        let stats = gpu.stats();
        assert_eq!(stats.completed, 57);
        assert_eq!(stats.failed, 0);
    }
}

/// Two queues each waiting on the label the other writes after its wait.
fn deadlock_setup(mode: Mode) -> (TestGpu, Submission, Submission, u64, u64) {
    let la = DATA;
    let lb = DATA + 4;
    let mut mem = Mem::new();
    let mut a = Vec::new();
    wait_eq(&mut a, la, 1);
    write_data(&mut a, lb, &[1]);
    let a = mem.buffer(&a);
    let mut b = Vec::new();
    wait_eq(&mut b, lb, 1);
    write_data(&mut b, la, &[1]);
    let b = mem.buffer(&b);
    let gpu = gpu(mem, mode);
    let ha = submit(&gpu, comp(0, 0), a);
    let hb = submit(&gpu, comp(3, 5), b);
    (gpu, ha, hb, la, lb)
}

fn check_deadlock_report(error: &GpuError, la: u64, lb: u64) {
    let report = error.stall().expect("a deadlock report");
    assert_eq!(report.queues.len(), 2);
    for (queue, label) in [(comp(0, 0), la), (comp(3, 5), lb)] {
        let entry = report.queue(queue).expect("queue named");
        assert_eq!(
            entry.reason,
            SuspendReason::WaitRegMem {
                target: PollTarget::Memory(label),
                function: CompareFunction::Equal,
                reference: 1,
                mask: 0xFFFF_FFFF,
                current: 0,
                is_64: false,
            }
        );
        assert_eq!(entry.packet_address, Some(entry.address));
    }
    let text = error.to_string();
    assert!(text.contains(&format!("comp0.0 submission #0 ({:#x}", report.queues[0].address)), "{text}");
    assert!(text.contains(&format!("WAIT_REG_MEM on memory {la:#x}: (value 0x0 & mask 0xffffffff) == reference 0x1")));
    assert!(text.contains(&format!("WAIT_REG_MEM on memory {lb:#x}: (value 0x0 & mask 0xffffffff) == reference 0x1")));
    assert!(text.contains("comp3.5 submission #1"), "{text}");
}

#[test]
fn deadlock_is_reported_in_deterministic_mode() {
    let (gpu, ha, hb, la, lb) = deadlock_setup(Mode::Deterministic);
    let error = gpu.run_until_idle().unwrap_err();
    check_deadlock_report(&error, la, lb);
    assert_eq!(gpu.stall_report().as_ref(), error.stall());
    // Not final: the handles have no result yet.
    assert!(ha.poll().is_none());
    assert!(hb.poll().is_none());
    // The host breaks the cycle.
    gpu.write_memory(la, &1u32.to_le_bytes()).unwrap();
    gpu.run_until_idle().unwrap();
    assert!(result(&ha).is_ok());
    assert!(result(&hb).is_ok());
    assert_eq!(read32(&gpu, lb), 1);
}

#[test]
fn a_threaded_stall_is_reported_on_its_channel_and_resolved_by_a_host_write() {
    let (gpu, ha, hb, la, lb) = deadlock_setup(Mode::Threaded);
    // The stall is reported once on its own channel; the handles keep waiting.
    let report = gpu.stall_reports().recv().unwrap();
    check_deadlock_report(&GpuError::Deadlock(report), la, lb);
    check_deadlock_report(&gpu.run_until_idle().unwrap_err(), la, lb);
    assert!(ha.poll().is_none() && hb.poll().is_none());
    assert_eq!(gpu.stats().stalls, 1);
    // The host breaks the cycle.
    gpu.write_memory(lb, &1u32.to_le_bytes()).unwrap().wait().unwrap();
    assert!(ha.wait().is_ok());
    assert!(hb.wait().is_ok());
    assert_eq!(read32(&gpu, la), 1);
    gpu.run_until_idle().unwrap();
}

#[test]
fn a_stall_becomes_a_deadlock_only_when_the_embedder_says_so() {
    for mode in MODES {
        let (gpu, ha, hb, la, lb) = deadlock_setup(mode);
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        let report = gpu.declare_deadlock().unwrap().expect("stalled");
        check_deadlock_report(&GpuError::Deadlock(report.clone()), la, lb);
        // Final on both handles; the queues are free for new work.
        assert_eq!(ha.wait(), Err(GpuError::Deadlock(report.clone())));
        assert_eq!(hb.wait(), Err(GpuError::Deadlock(report)));
        assert_eq!(gpu.declare_deadlock(), Ok(None));
        let mut mem_cmd = Vec::new();
        write_data(&mut mem_cmd, la, &[9]);
        gpu.with_memory(|m| {
            for (i, w) in mem_cmd.iter().enumerate() {
                m.write_u32(CMD + CMD_SIZE - 0x100 + i as u64 * 4, *w).unwrap();
            }
        });
        let h = gpu.submit(comp(0, 0), CMD + CMD_SIZE - 0x100, mem_cmd.len() as u32).unwrap();
        gpu.run_until_idle().unwrap();
        assert!(h.wait().is_ok(), "{mode:?}");
        assert_eq!(read32(&gpu, la), 9);
    }
}

#[test]
fn a_stall_timeout_fails_the_stalled_submissions() {
    let config = GpuConfig { stall_timeout: Some(Duration::from_millis(1)), ..GpuConfig::default() };
    let (mem, a, b, la, lb) = {
        let la = DATA;
        let lb = DATA + 4;
        let mut mem = Mem::new();
        let mut a = Vec::new();
        wait_eq(&mut a, la, 1);
        let a = mem.buffer(&a);
        let mut b = Vec::new();
        wait_eq(&mut b, lb, 1);
        let b = mem.buffer(&b);
        (mem, a, b, la, lb)
    };
    let gpu = gpu_with(mem, Mode::Threaded, config);
    let ha = submit(&gpu, comp(0, 0), a);
    let hb = submit(&gpu, comp(3, 5), b);
    let error = ha.wait().unwrap_err();
    let report = error.stall().expect("a deadlock report");
    assert_eq!(report.queues.len(), 2);
    assert!(report.queue(comp(0, 0)).is_some_and(|q| q.reason.to_string().contains(&format!("{la:#x}"))));
    assert!(report.queue(comp(3, 5)).is_some_and(|q| q.reason.to_string().contains(&format!("{lb:#x}"))));
    assert_eq!(hb.wait(), Err(error));
    assert_eq!(gpu.stats().aborted, 2);
}

#[test]
fn eight_host_threads_thousands_of_submissions_complete_exactly_once() {
    const PER_QUEUE: u32 = 36;
    let seq = DATA;
    let total = DATA + 0x400;
    let mut mem = Mem::new();
    // buffers[q][j]: wait until seq[q] == j, set it to j + 1, count.
    let buffers: Vec<Vec<(u64, u32)>> = (0..57u64)
        .map(|q| {
            let slot = seq + 4 * q;
            (0..PER_QUEUE)
                .map(|j| {
                    let mut c = Vec::new();
                    wait_eq(&mut c, slot, j);
                    write_data(&mut c, slot, &[j + 1]);
                    atomic_add(&mut c, total, 1);
                    mem.buffer(&c)
                })
                .collect()
        })
        .collect();
    let gpu = gpu_with(mem, Mode::Threaded, GpuConfig { slice_packets: 2, ..GpuConfig::default() });
    let ids: Vec<Vec<u64>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..8usize)
            .map(|t| {
                let gpu = &gpu;
                let buffers = &buffers;
                s.spawn(move || {
                    let queues: Vec<usize> = (0..7).map(|k| 1 + t * 7 + k).collect();
                    let mut handles = Vec::new();
                    // Round by round: each queue's j-th submission, in order.
                    let rounds = (0..PER_QUEUE as usize).flat_map(|j| queues.iter().map(move |&q| (q, j)));
                    for (q, j) in rounds {
                        handles.push((q, submit(gpu, QueueId(q as u32), buffers[q][j])));
                    }
                    handles
                        .iter()
                        .map(|(q, h)| {
                            let report = h.wait().unwrap();
                            assert_eq!(report.id, h.id());
                            assert_eq!(report.queue, QueueId(*q as u32));
                            assert_eq!(report.packets, 3);
                            report.id.0
                        })
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let all: Vec<u64> = ids.into_iter().flatten().collect();
    let unique: BTreeSet<u64> = all.iter().copied().collect();
    assert_eq!(all.len(), 56 * PER_QUEUE as usize);
    assert_eq!(unique.len(), all.len());
    assert_eq!(read32(&gpu, total), 56 * PER_QUEUE);
    for q in 1..57u64 {
        assert_eq!(read32(&gpu, seq + 4 * q), PER_QUEUE);
    }
    let stats = gpu.stats();
    assert_eq!(stats.submissions, u64::from(56 * PER_QUEUE));
    assert_eq!(stats.completed, u64::from(56 * PER_QUEUE));
    gpu.run_until_idle().unwrap();
}

/// A scenario with waits, releases, host writes and several queues; returns
/// the backend log and the data region.
fn deterministic_run() -> (Vec<String>, Vec<u8>, Vec<Interrupt>) {
    let mut mem = Mem::new();
    let label = DATA;
    let mut plans = Vec::new();
    for k in 0..10u32 {
        let q = QueueId(k * 5);
        let mut c = Vec::new();
        for i in 0..6u32 {
            write_data(&mut c, DATA + 0x100 + u64::from(k) * 0x40 + u64::from(i) * 4, &[k * 100 + i]);
            if i == 2 && k % 3 == 0 {
                wait_eq(&mut c, label, 1);
            }
            if i % 2 == 1 {
                release_int(&mut c, DATA + 0x800 + u64::from(k) * 8, k * 10 + i, k);
            }
        }
        atomic_add(&mut c, DATA + 0xF00, k + 1);
        plans.push((q, mem.buffer(&c)));
    }
    let gpu = gpu_with(mem, Mode::Deterministic, GpuConfig { slice_packets: 2, ..GpuConfig::default() });
    for &(q, b) in &plans[..5] {
        submit(&gpu, q, b);
    }
    gpu.write_memory(DATA + 0xF04, &[1, 2, 3, 4]).unwrap();
    for &(q, b) in &plans[5..] {
        submit(&gpu, q, b);
    }
    gpu.write_memory(label, &1u32.to_le_bytes()).unwrap();
    gpu.run_until_idle().unwrap();
    let mut interrupts: Vec<Interrupt> = plans.iter().flat_map(|&(q, _)| drain_interrupts(&gpu, q)).collect();
    interrupts.sort_by_key(|i| i.sequence);
    let data = read_bytes(&gpu, DATA, DATA_SIZE as usize);
    let parts = gpu.into_parts().unwrap();
    (parts.backend.lines, data, interrupts)
}

#[test]
fn deterministic_mode_gives_identical_logs_on_every_run() {
    let (log, data, interrupts) = deterministic_run();
    assert_eq!(log.iter().filter(|l| l.contains(" fence ")).count(), 30);
    assert_eq!(interrupts.len(), 30);
    for _ in 0..3 {
        let (log2, data2, interrupts2) = deterministic_run();
        assert_eq!(log2, log);
        assert_eq!(data2, data);
        assert_eq!(interrupts2, interrupts);
    }
}

#[test]
fn deterministic_interleaving_is_round_robin_by_queue_index() {
    // Slices of one packet: gfx and comp0.0 alternate, gfx first.
    let mut mem = Mem::new();
    let mut g = Vec::new();
    write_data(&mut g, DATA, &[1]);
    release_int(&mut g, DATA + 8, 0x11, 1);
    let g = mem.buffer(&g);
    let mut c = Vec::new();
    release_int(&mut c, DATA + 16, 0x22, 2);
    write_data(&mut c, DATA + 4, &[2]);
    let c = mem.buffer(&c);
    let gpu = gpu_with(mem, Mode::Deterministic, GpuConfig { slice_packets: 1, ..GpuConfig::default() });
    submit(&gpu, comp(0, 0), c);
    submit(&gpu, QueueId::GRAPHICS, g);
    gpu.run_until_idle().unwrap();
    let lines = gpu.with_backend(|b| b.lines.clone()).unwrap();
    assert_eq!(
        lines,
        vec![
            format!(
                "comp0.0 fence RELEASE_MEM event=BOTTOM_OF_PIPE_TS addr={:#x} data=0x22 data_sel=1 int_sel=2 ctxid=0x2 interrupt=true",
                DATA + 16
            ),
            format!(
                "gfx fence RELEASE_MEM event=BOTTOM_OF_PIPE_TS addr={:#x} data=0x11 data_sel=1 int_sel=2 ctxid=0x1 interrupt=true",
                DATA + 8
            ),
        ]
    );
}

#[test]
fn processor_error_completes_its_handle_and_the_queue_continues() {
    for mode in MODES {
        let out = DATA + 0x20;
        let mut mem = Mem::new();
        let mut bad = Vec::new();
        write_data(&mut bad, UNMAPPED, &[1]);
        write_data(&mut bad, out, &[0xBAD]);
        let bad = mem.buffer(&bad);
        let mut good = Vec::new();
        write_data(&mut good, out + 4, &[7]);
        let good = mem.buffer(&good);
        let gpu = gpu(mem, mode);
        let h1 = submit(&gpu, comp(2, 2), bad);
        let h2 = submit(&gpu, comp(2, 2), good);
        gpu.run_until_idle().unwrap();
        match h1.wait() {
            Err(GpuError::Processor { queue, submission, source }) => {
                assert_eq!(queue, comp(2, 2));
                assert_eq!(submission, h1.id());
                assert!(matches!(source, Pm4Error::Memory { .. }), "{source}");
                assert_eq!(source.location().map(|l| l.address()), Some(bad.0));
            }
            other => panic!("{mode:?}: expected a processor error, got {other:?}"),
        }
        assert!(h2.wait().is_ok());
        assert_eq!(read32(&gpu, out), 0, "the failed submission stopped at its bad packet");
        assert_eq!(read32(&gpu, out + 4), 7);
        assert_eq!(gpu.stats().failed, 1);
    }
}

#[test]
fn drop_with_pending_work_does_not_hang() {
    for mode in MODES {
        let mut mem = Mem::new();
        let mut forever = Vec::new();
        wait_eq(&mut forever, DATA, 0x1234);
        let forever = mem.buffer(&forever);
        let mut long = Vec::new();
        for i in 0..2000u32 {
            write_data(&mut long, DATA + 0x100, &[i]);
        }
        let long = mem.buffer(&long);
        let gpu = gpu_with(mem, mode, GpuConfig { slice_packets: 1, ..GpuConfig::default() });
        let mut waiting = vec![submit(&gpu, comp(0, 1), forever)];
        for _ in 0..4 {
            waiting.push(submit(&gpu, comp(0, 1), forever));
        }
        let busy = submit(&gpu, comp(1, 1), long);
        let write = gpu.write_memory(DATA + 0x200, &[9; 4]).unwrap();
        drop(gpu);
        for h in &waiting {
            assert_eq!(h.wait(), Err(GpuError::ShutDown), "{mode:?}");
        }
        match mode {
            // Nothing ran: everything was cancelled.
            Mode::Deterministic => {
                assert_eq!(busy.wait(), Err(GpuError::ShutDown));
                assert_eq!(write.wait(), Err(GpuError::ShutDown));
            }
            // The worker may have finished the long buffer and applied the
            // write (comp0.1 waiting is quiescent) before the drop.
            Mode::Threaded => {
                assert!(matches!(busy.wait(), Ok(_) | Err(GpuError::ShutDown)));
                assert!(matches!(write.wait(), Ok(()) | Err(GpuError::ShutDown)));
            }
        }
    }
}

#[test]
fn threaded_host_writes_apply_at_once_behind_a_long_buffer() {
    let label = DATA + 8;
    let mut mem = Mem::new();
    let mut long = Vec::new();
    for i in 0..20_000u32 {
        write_data(&mut long, DATA, &[i]);
    }
    let long = mem.buffer(&long);
    let mut waiter = Vec::new();
    wait_eq(&mut waiter, label, 1);
    write_data(&mut waiter, DATA + 12, &[3]);
    let waiter = mem.buffer(&waiter);
    let gpu = gpu(mem, Mode::Threaded);
    let busy = submit(&gpu, QueueId::GRAPHICS, long);
    let h = submit(&gpu, comp(2, 0), waiter);
    // Not deferred behind the graphics buffer: in memory when the call returns.
    let w = gpu.write_memory(label, &1u32.to_le_bytes()).unwrap();
    assert!(w.is_applied());
    assert_eq!(read32(&gpu, label), 1);
    assert!(h.wait().is_ok());
    assert_eq!(read32(&gpu, DATA + 12), 3);
    assert_eq!(busy.wait().unwrap().packets, 20_000);
}

#[test]
fn host_writes_follow_the_writ_rule() {
    // The trace format's rule, kept by deterministic mode (replay); threaded
    // mode writes at once (above).
    for mode in [Mode::Deterministic] {
        let a = DATA;
        let d = DATA + 4;
        let mut mem = Mem::new();
        let mut long = Vec::new();
        for i in 0..200u32 {
            write_data(&mut long, a, &[100 + i]);
        }
        write_data(&mut long, a, &[5]);
        let long = mem.buffer(&long);
        let mut later = Vec::new();
        write_data(&mut later, d, &[7]);
        let later = mem.buffer(&later);
        let gpu = gpu_with(mem, mode, GpuConfig { slice_packets: 8, ..GpuConfig::default() });
        let h1 = submit(&gpu, comp(0, 0), long);
        let w = gpu.write_memory(a, &[2, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        let h2 = submit(&gpu, QueueId::GRAPHICS, later);
        gpu.run_until_idle().unwrap();
        assert!(h1.wait().is_ok() && h2.wait().is_ok() && w.wait().is_ok());
        // The write came after the whole earlier submission, and before the later one.
        assert_eq!(read32(&gpu, a), 2, "{mode:?}");
        assert_eq!(read32(&gpu, d), 7, "{mode:?}");
    }
}

#[test]
fn a_deterministic_host_write_with_nothing_before_it_is_applied_at_once() {
    // The WRIT rule's point has come when no host operation is pending and
    // no queue can run: the write is applied in the call, and wakes its
    // watchers there.
    let label = DATA;
    let mut mem = Mem::new();
    let mut c = Vec::new();
    wait_eq(&mut c, label, 1);
    write_data(&mut c, DATA + 8, &[0x77]);
    let c = mem.buffer(&c);
    let mut later = Vec::new();
    write_data(&mut later, DATA + 12, &[0x99]);
    let later = mem.buffer(&later);
    let gpu = gpu(mem, Mode::Deterministic);
    let h = submit(&gpu, comp(1, 2), c);
    assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
    let w = gpu.write_memory(label, &1u32.to_le_bytes()).unwrap();
    assert_eq!(w.poll(), Some(Ok(())));
    assert_eq!(w.wait_timeout(Duration::ZERO), Some(Ok(())));
    assert_eq!(read32(&gpu, label), 1);
    assert_eq!((gpu.stats().host_writes, gpu.stats().wakes), (1, 1));
    // Woken, not run: the queue runs when the caller drives the GPU.
    assert_eq!(read32(&gpu, DATA + 8), 0);
    assert!(matches!(gpu.run_slices(0).unwrap(), RunStatus::Running));
    gpu.run_until_idle().unwrap();
    assert_eq!(read32(&gpu, DATA + 8), 0x77);
    assert_eq!(h.poll().unwrap().unwrap().waits, 1);
    // A submission made first (not yet released): the write waits for it.
    let h2 = submit(&gpu, QueueId::GRAPHICS, later);
    let w2 = gpu.write_memory(DATA + 12, &5u32.to_le_bytes()).unwrap();
    assert_eq!(w2.poll(), None);
    assert!(!w2.is_applied());
    assert_eq!(read32(&gpu, DATA + 12), 0);
    gpu.run_until_idle().unwrap();
    assert_eq!(w2.poll(), Some(Ok(())));
    assert_eq!(read32(&gpu, DATA + 12), 5, "the write came after the submission");
    assert!(h2.poll().unwrap().is_ok());
    // A runnable queue ahead of it (woken, not run): the write waits too.
    let mut mem = Mem::new();
    let mut c = Vec::new();
    wait_eq(&mut c, label, 1);
    write_data(&mut c, label, &[7]);
    let c = mem.buffer(&c);
    let second = gpu_with(mem, Mode::Deterministic, GpuConfig::default());
    let h = submit(&second, comp(0, 0), c);
    assert!(matches!(second.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
    assert!(second.write_memory(label, &1u32.to_le_bytes()).unwrap().is_applied());
    let w = second.write_memory(label, &9u32.to_le_bytes()).unwrap();
    assert_eq!(w.poll(), None);
    second.run_until_idle().unwrap();
    // The queue's write of 7 ran first, then the host's 9.
    assert_eq!(read32(&second, label), 9);
    assert!(h.poll().unwrap().is_ok() && w.is_applied());
}

#[test]
fn a_host_write_refused_by_memory_is_told_by_its_handle_in_both_modes() {
    // Deterministic mode applies the write in the call here (nothing is
    // ahead of it); the refusal still comes through the handle, as for a
    // write applied later. Threaded mode refuses in the call.
    for mode in MODES {
        let mem = Mem::new();
        mem.mem.set_write_budget(4);
        let gpu = gpu(mem, mode);
        let write = gpu.write_memory(DATA, &[1, 2, 3, 4, 5, 6, 7, 8]);
        let refused = match mode {
            // Applied (and refused) in the call: already answered.
            Mode::Deterministic => write.unwrap().poll().unwrap_or(Err(GpuError::Pending)),
            Mode::Threaded => write.map(|_| ()),
        };
        assert!(matches!(refused, Err(GpuError::HostWrite { address: DATA, len: 8, .. })), "{mode:?}: {refused:?}");
        assert_eq!(read_bytes(&gpu, DATA, 8), [0; 8], "{mode:?}");
        assert_eq!((gpu.stats().host_writes, gpu.stats().host_write_errors), (1, 1), "{mode:?}");
    }
}

#[test]
fn suspended_queue_is_rechecked_only_when_its_memory_changes() {
    for mode in MODES {
        let label = DATA;
        let mut mem = Mem::new();
        let mut c = Vec::new();
        wait_eq(&mut c, label, 1);
        let c = mem.buffer(&c);
        let mut other = Vec::new();
        for i in 0..10u32 {
            write_data(&mut other, label + 8, &[i]);
        }
        let other = mem.buffer(&other);
        let gpu = gpu_with(mem, mode, GpuConfig { slice_packets: 1, ..GpuConfig::default() });
        let h = submit(&gpu, comp(4, 4), c);
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        assert_eq!(gpu.processor_stats(comp(4, 4)).unwrap().waits, 1);
        // Writes next to the label, by a queue and by the host: not re-checked.
        submit(&gpu, QueueId::GRAPHICS, other);
        gpu.write_memory(label + 4, &[1, 0, 0, 0]).unwrap();
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        assert_eq!(gpu.processor_stats(comp(4, 4)).unwrap().waits, 1, "{mode:?}");
        assert_eq!(gpu.stats().wakes, 0);
        // A write to the label wakes it once.
        gpu.write_memory(label, &[1, 0, 0, 0]).unwrap();
        gpu.run_until_idle().unwrap();
        assert_eq!(h.wait().unwrap().waits, 1);
        assert_eq!(gpu.stats().wakes, 1);
    }
}

#[test]
fn register_wait_resumes_when_the_host_sets_the_register() {
    for mode in MODES {
        const REG: u32 = 0xC040;
        let mut mem = Mem::new();
        let mut c = Vec::new();
        wait_reg_eq(&mut c, REG, 5);
        write_data(&mut c, DATA, &[0x55]);
        let c = mem.buffer(&c);
        let gpu = gpu(mem, mode);
        let h = submit(&gpu, comp(6, 7), c);
        match gpu.run_until_stalled().unwrap() {
            RunStatus::Stalled(r) => {
                assert!(matches!(
                    r.queues[0].reason,
                    SuspendReason::WaitRegMem { target: PollTarget::Register(REG), .. }
                ))
            }
            other => panic!("{other:?}"),
        }
        gpu.with_registers_mut(comp(6, 7), |r| r.set(REG, 5)).unwrap();
        gpu.run_until_idle().unwrap();
        assert!(h.wait().is_ok());
        assert_eq!(read32(&gpu, DATA), 0x55);
    }
}

/// A buffer of 1001 packets (1000 writes, then a release with an
/// interrupt) and one of a single release.
fn long_and_short_buffers(mem: &mut Mem) -> ((u64, u32), (u64, u32)) {
    let mut long = Vec::new();
    for i in 0..1000u32 {
        write_data(&mut long, DATA + 0x40, &[i]);
    }
    release_int(&mut long, DATA, 1, 1);
    let mut short = Vec::new();
    release_int(&mut short, DATA + 4, 2, 2);
    (mem.buffer(&long), mem.buffer(&short))
}

#[test]
fn a_long_buffer_does_not_starve_another_queue() {
    let mut mem = Mem::new();
    let (long, short) = long_and_short_buffers(&mut mem);
    let gpu = gpu_with(mem, Mode::Deterministic, GpuConfig { slice_packets: 16, ..GpuConfig::default() });
    let h_long = submit(&gpu, comp(0, 0), long);
    assert!(matches!(gpu.run_slices(3).unwrap(), RunStatus::Running));
    let h_short = submit(&gpu, comp(6, 7), short);
    gpu.run_until_idle().unwrap();
    let first = gpu.wait_interrupt(comp(6, 7), Duration::ZERO).unwrap().unwrap();
    let second = gpu.wait_interrupt(comp(0, 0), Duration::ZERO).unwrap().unwrap();
    assert_eq!((first.sequence, first.submission), (0, h_short.id()));
    assert_eq!((second.sequence, second.submission), (1, h_long.id()));
    assert_eq!(result(&h_short).unwrap().slices, 1);
    assert_eq!(result(&h_long).unwrap().slices, 1001_u64.div_ceil(16));
}

#[test]
fn a_queue_alone_runs_lone_slices_and_shares_when_another_has_work() {
    let mut mem = Mem::new();
    let (long, short) = long_and_short_buffers(&mut mem);
    let config = GpuConfig { slice_packets: 16, lone_slice_packets: 600, ..GpuConfig::default() };
    let gpu = gpu_with(mem, Mode::Deterministic, config);
    // Alone: a slice of 600 packets, then one of the other 401.
    let alone = submit(&gpu, comp(0, 0), long);
    gpu.run_until_idle().unwrap();
    assert_eq!(result(&alone).unwrap().slices, 2);
    assert_eq!(read32(&gpu, DATA + 0x40), 999);
    // With another queue's work waiting, 16-packet slices as before: the
    // round robin (now past comp0.0) runs the long buffer on comp6.7 for
    // 16 packets, the short one, then the long one alone: 600, 385.
    let h_long = submit(&gpu, comp(6, 7), long);
    let h_short = submit(&gpu, comp(0, 0), short);
    gpu.run_until_idle().unwrap();
    assert_eq!(result(&h_short).unwrap().slices, 1);
    assert_eq!(result(&h_long).unwrap().slices, 3);
    let first = gpu.wait_interrupt(comp(0, 0), Duration::ZERO).unwrap().unwrap();
    let second = gpu.wait_interrupt(comp(0, 0), Duration::ZERO).unwrap().unwrap();
    let third = gpu.wait_interrupt(comp(6, 7), Duration::ZERO).unwrap().unwrap();
    assert_eq!((first.submission, second.submission, third.submission), (alone.id(), h_short.id(), h_long.id()));
}

#[test]
fn abort_completes_the_handle_and_the_queue_goes_on() {
    for mode in MODES {
        let mut mem = Mem::new();
        let mut stuck = Vec::new();
        wait_eq(&mut stuck, DATA, 9);
        let stuck = mem.buffer(&stuck);
        let mut next = Vec::new();
        write_data(&mut next, DATA + 4, &[3]);
        let next = mem.buffer(&next);
        let gpu = gpu(mem, mode);
        let h1 = submit(&gpu, comp(1, 0), stuck);
        let h2 = submit(&gpu, comp(1, 0), next);
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        assert_eq!(gpu.queue_status(comp(1, 0)).unwrap().queued, 1);
        assert_eq!(gpu.abort(comp(1, 0)).unwrap(), Some(h1.id()));
        gpu.run_until_idle().unwrap();
        assert_eq!(h1.wait(), Err(GpuError::Aborted(h1.id())));
        assert!(h2.wait().is_ok());
        assert_eq!(read32(&gpu, DATA + 4), 3);
        assert_eq!(gpu.abort(comp(1, 0)).unwrap(), None);
    }
}

#[test]
fn api_misuse_is_an_error() {
    for mode in MODES {
        let gpu = gpu(Mem::new(), mode);
        assert_eq!(gpu.submit(QueueId(57), CMD, 1).unwrap_err(), GpuError::QueueOutOfRange { queue: 57 });
        assert!(gpu.interrupts(QueueId(99)).is_err());
        assert!(gpu.queue_status(QueueId(57)).is_err());
        assert!(gpu.with_processor(QueueId(400), |_| ()).is_err());
        assert!(matches!(gpu.write_memory(u64::MAX - 2, &[0; 8]), Err(GpuError::HostWrite { .. })));
        assert_eq!(gpu.wait_interrupt(QueueId(3), Duration::ZERO).unwrap(), None);
        match mode {
            Mode::Deterministic => {
                assert!(matches!(gpu.write_memory(UNMAPPED, &[0; 4]), Err(GpuError::HostWrite { .. })));
                let h = gpu.submit(QueueId(1), CMD, 0).unwrap();
                assert_eq!(h.poll(), None);
                assert_eq!(h.wait_timeout(Duration::ZERO), None);
                gpu.run_until_idle().unwrap();
                assert_eq!(h.wait().unwrap().packets, 0);
            }
            Mode::Threaded => {
                assert!(matches!(gpu.run_slices(1), Err(GpuError::WrongMode { .. })));
                assert!(matches!(gpu.write_memory(UNMAPPED, &[0; 4]), Err(GpuError::HostWrite { .. })));
                assert_eq!(gpu.stats().host_writes, 0);
            }
        }
    }
}

#[test]
fn threaded_wait_after_a_host_write_never_sees_the_old_stall() {
    let label = DATA;
    let mut mem = Mem::new();
    let mut c = Vec::new();
    wait_eq(&mut c, label, 1);
    write_data(&mut c, label, &[0]);
    let c = mem.buffer(&c);
    let gpu = gpu(mem, Mode::Threaded);
    for _ in 0..200 {
        let h = submit(&gpu, comp(5, 0), c);
        // The worker has found the stall and told the handle.
        assert!(matches!(gpu.run_until_stalled().unwrap(), RunStatus::Stalled(_)));
        gpu.write_memory(label, &1u32.to_le_bytes()).unwrap();
        assert_eq!(h.wait().unwrap().waits, 1);
    }
    assert_eq!(read32(&gpu, label), 0);
}

#[test]
fn interrupts_keep_the_newest_when_the_host_does_not_take_them() {
    let mut mem = Mem::new();
    let mut c = Vec::new();
    for i in 0..5u32 {
        release_int(&mut c, DATA + 4 * u64::from(i), i, 0x40 + i);
    }
    let c = mem.buffer(&c);
    let gpu = gpu_with(mem, Mode::Deterministic, GpuConfig { interrupt_capacity: 2, ..GpuConfig::default() });
    let h = submit(&gpu, QueueId::GRAPHICS, c);
    gpu.run_until_idle().unwrap();
    let kept = drain_interrupts(&gpu, QueueId::GRAPHICS);
    let kept: Vec<(u64, u32)> = kept.iter().map(|i| (i.sequence, i.fence.int_ctxid)).collect();
    assert_eq!(kept, vec![(3, 0x43), (4, 0x44)]);
    let stats = gpu.stats();
    assert_eq!((stats.interrupts, stats.interrupts_dropped), (5, 3));
    assert_eq!(result(&h).unwrap().fences, 5);
    assert_eq!(gpu.with_backend(|b| b.fences).unwrap(), 5);
}
