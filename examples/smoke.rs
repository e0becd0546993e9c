//! The smallest complete use of the processor API: 57 `Processor`s driven
//! directly (no `Gpu`), each submission of a trace run to its end in trace
//! order, with a `RecordingBackend`; prints per trace the packets, draws,
//! dispatches, fences, errors, unknown and not-emulated packets.
//!
//! ```sh
//! cargo run --example smoke -- traces/radv-draw.pm4t
//! ```
//!
//! Exit status: 0 every trace replayed, 1 a trace met an error, 2 no trace
//! given or a file that is not a trace.

use std::process::ExitCode;

use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::memory::SparseMemory;
use pm4core::processor::{Env, ProcessStatus, Processor};
use pm4core::shader::ShaderRegistry;
use pm4core::trace::{Trace, TraceEvent};

const USAGE: &str = "usage: cargo run --example smoke -- TRACE...\n\
    replays each trace's submissions on 57 processors and prints what they did\n\
    (e.g. cargo run --example smoke -- traces/radv-draw.pm4t)";

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() || paths.iter().any(|p| p == "-h" || p == "--help") {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut status = 0;
    for path in paths {
        match Trace::read_file(std::path::Path::new(&path)) {
            Ok(trace) => {
                if !smoke(&path, &trace) {
                    status = status.max(1);
                }
            }
            Err(e) => {
                eprintln!("smoke: {path}: {e}");
                status = 2;
            }
        }
    }
    ExitCode::from(status)
}

/// Replays `trace` and prints its counts; false when something failed.
fn smoke(path: &str, trace: &Trace) -> bool {
    let mut mem = SparseMemory::new();
    let mut backend = RecordingBackend::new();
    let mut shaders = ShaderRegistry::default();
    let mut procs: Vec<Processor> = (0..QueueId::COUNT).map(|q| Processor::new(QueueId(q))).collect();
    let mut errors = 0;
    for ev in trace.events() {
        let result = match ev {
            TraceEvent::MemRegion { .. } | TraceEvent::ZeroRegion { .. } => trace.map_region(&mem, ev),
            TraceEvent::HostWrite { .. } => trace.apply_host_write(&mut mem, ev),
            TraceEvent::Submit { queue, address, size_dw, .. } => {
                let Some(p) = procs.get_mut(*queue as usize) else { continue };
                if let Err(e) = p.submit(*address, *size_dw) {
                    println!("  queue {queue}: submit refused: {e}");
                    errors += 1;
                    continue;
                }
                let mut env = Env { memory: &mut mem, backend: &mut backend, shaders: &mut shaders };
                match p.process(&mut env) {
                    Ok(ProcessStatus::Completed) => {}
                    Ok(s) => {
                        // Nothing else runs here to end a wait: drop it.
                        println!("  queue {}: {s:?}", QueueId(*queue));
                        p.abort();
                    }
                    Err(e) => {
                        println!("  queue {}: error: {e}", QueueId(*queue));
                        errors += 1;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = result {
            println!("  chunk {}: {e}", ev.chunk());
            errors += 1;
        }
    }
    let mut packets = 0;
    let mut not_emulated = std::collections::BTreeMap::new();
    let mut unknown = 0;
    for p in &procs {
        packets += p.stats().packets;
        unknown += p.stats().unknown;
        for (i, n) in p.stats().not_emulated.iter().enumerate() {
            if *n > 0 {
                *not_emulated.entry(pm4core::packet::Opcode(i as u8).to_string()).or_insert(0) += n;
            }
        }
    }
    println!(
        "{path}: packets={packets} draws={} dispatches={} fences={} errors={errors} unknown={unknown} not_emulated={not_emulated:?}",
        backend.draws, backend.dispatches, backend.fences
    );
    errors == 0
}
