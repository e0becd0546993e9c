//! `trace_reader`: [`Trace::parse`] on arbitrary bytes; a trace it accepts
//! must map ([`Trace::build_memory`]), apply its host writes
//! ([`Trace::memory_before`]), be rewritten by [`TraceWriter`] into a trace
//! with the same events, and replay (regions, host writes, shader
//! creations, submissions on small processors) without breaking a rule.

use std::collections::BTreeMap;

use super::processor::check_status;
use super::{Outcome, Violation};
use crate::backend::{QueueId, RecordingBackend};
use crate::memory::{GuestMemory, SparseMemory};
use crate::processor::{Env, ProcessStatus, Processor, ProcessorConfig};
use crate::shader::ShaderRegistry;
use crate::trace::format::{chunk_crc, pad_len, CHUNK_HEAD_LEN, HEADER_LEN};
use crate::trace::{Tag, Trace, TraceEvent, TraceWriter};

const TARGET: &str = "trace_reader";

/// Most queues a replay runs processors for (the rest are skipped).
const MAX_QUEUES: usize = 4;
/// Work budget of a replayed submission.
const REPLAY_BUDGET: u64 = 4_000;
/// Packets per slice and slices per submission.
const SLICE: u64 = 1_000;
const SLICES: usize = 4;

/// The `trace_reader` harness: the input as it is, then (when it differs)
/// with every chunk's CRC made right, so that mutations reach the rules
/// behind the CRC check instead of stopping at it.
pub fn trace_reader(data: &[u8]) -> Outcome {
    check_bytes(data.to_vec())?;
    let fixed = with_fixed_crcs(data);
    if fixed != data {
        check_bytes(fixed)?;
    }
    Ok(())
}

fn check_bytes(bytes: Vec<u8>) -> Outcome {
    match Trace::from_bytes(bytes) {
        Ok(trace) => check_trace(TARGET, &trace),
        Err(e) => {
            let _ = e.to_string();
            Ok(())
        }
    }
}

/// A copy of `data` with the CRC of every chunk whose bounds lie inside
/// the file recomputed, from the first chunk on, up to the first chunk that
/// runs past the end.
pub fn with_fixed_crcs(data: &[u8]) -> Vec<u8> {
    let mut bytes = data.to_vec();
    let mut at = HEADER_LEN;
    while let Some(head) = bytes.get(at..at + CHUNK_HEAD_LEN) {
        let tag = Tag([head[0], head[1], head[2], head[3]]);
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let payload_at = at + CHUNK_HEAD_LEN;
        let Some(crc_at) = payload_at.checked_add(len).map(|end| end + pad_len(len as u64) as usize) else {
            break;
        };
        let Some(payload) = bytes.get(payload_at..payload_at + len) else {
            break;
        };
        let crc = chunk_crc(tag, payload).to_le_bytes();
        let Some(slot) = bytes.get_mut(crc_at..crc_at + 4) else {
            break;
        };
        slot.copy_from_slice(&crc);
        at = crc_at + 4;
    }
    bytes
}

/// Everything a trace the reader accepted must allow (shared with the
/// importer's harness: an imported trace must pass it too).
pub fn check_trace(target: &'static str, trace: &Trace) -> Outcome {
    let fail = |what: String| Violation::new(target, what);
    let _ = format!("{trace:?}");
    for chunk in trace.chunks() {
        let _ = chunk.tag.to_string();
    }
    let mem = trace.build_memory().map_err(|e| fail(format!("an accepted trace does not map: {e}")))?;
    for (queue, address, size_dw) in trace.submissions() {
        if queue > crate::trace::format::MAX_QUEUE {
            return Err(fail(format!("an accepted submission names queue {queue}")));
        }
        if !mem.is_mapped(address, u64::from(size_dw) * 4) {
            return Err(fail(format!("an accepted submission at {address:#x} of {size_dw} dwords is not mapped")));
        }
    }
    trace
        .memory_before(trace.events().len())
        .map_err(|e| fail(format!("an accepted trace does not apply its host writes: {e}")))?;
    check_rewrite(target, trace)?;
    replay(target, trace)
}

/// The writer accepts every chunk the reader accepted, and the rewritten
/// trace holds the same events.
fn check_rewrite(target: &'static str, trace: &Trace) -> Outcome {
    let fail = |what: String| Violation::new(target, what);
    let mut w = TraceWriter::new();
    for (key, value) in trace.info() {
        w.info(key, value).map_err(|e| fail(format!("the writer refuses INFO {key}={value}: {e}")))?;
    }
    for event in trace.events() {
        w.event(trace, event).map_err(|e| fail(format!("the writer refuses {event:?}: {e}")))?;
    }
    let again = w.finish_trace().map_err(|e| fail(format!("the rewritten trace does not parse: {e}")))?;
    let regions = |t: &Trace| t.events().iter().filter_map(TraceEvent::region).collect::<Vec<_>>();
    let submissions = |t: &Trace| t.submissions().collect::<Vec<_>>();
    let tags = |t: &Trace| t.events().iter().map(TraceEvent::tag).collect::<Vec<_>>();
    if again.info() != trace.info()
        || regions(&again) != regions(trace)
        || submissions(&again) != submissions(trace)
        || tags(&again) != tags(trace)
    {
        return Err(fail(format!("the rewritten trace differs: {again:?} from {trace:?}")));
    }
    Ok(())
}

/// Replays the trace in order on small processors.
fn replay(target: &'static str, trace: &Trace) -> Outcome {
    let fail = |what: String| Violation::new(target, what);
    let mut memory = SparseMemory::new();
    let mut shaders = ShaderRegistry::new();
    let mut backend = RecordingBackend::new();
    let mut processors: BTreeMap<u32, Processor> = BTreeMap::new();
    for event in trace.events() {
        trace.map_region(&memory, event).map_err(|e| fail(format!("replay cannot map {event:?}: {e}")))?;
        trace.apply_host_write(&mut memory, event).map_err(|e| fail(format!("replay cannot apply {event:?}: {e}")))?;
        match *event {
            TraceEvent::HostWrite { address, data, .. } => {
                shaders.invalidate_range(address, data.len());
            }
            TraceEvent::Shader { header_address, code_address, relocated, .. } => {
                let before = memory.write_generation();
                let created = shaders.create(&memory, header_address, code_address, relocated);
                if let Err(e) = created {
                    let _ = e.to_string();
                    if memory.write_generation() != before {
                        return Err(fail(format!("a rejected shader creation wrote memory: {e}")));
                    }
                }
            }
            TraceEvent::Submit { queue, address, size_dw, .. } => {
                if processors.len() >= MAX_QUEUES && !processors.contains_key(&queue) {
                    continue;
                }
                let config = ProcessorConfig { max_ib_depth: 4, work_budget: REPLAY_BUDGET, ..Default::default() };
                let p = processors.entry(queue).or_insert_with(|| Processor::with_config(QueueId(queue), config));
                // A submission still waiting is dropped: nothing will satisfy it.
                p.abort();
                p.submit(address, size_dw).map_err(|e| fail(format!("an idle processor refused a submit: {e}")))?;
                for _ in 0..SLICES {
                    let mut env = Env { memory: &mut memory, backend: &mut backend, shaders: &mut shaders };
                    let result = p.process_slice(&mut env, SLICE);
                    check_status(target, p, &result, REPLAY_BUDGET)?;
                    if !matches!(result, Ok(ProcessStatus::Yielded)) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}
