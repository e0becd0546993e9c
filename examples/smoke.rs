use pm4core::backend::{QueueId, RecordingBackend};
use pm4core::processor::{Env, ProcessStatus, Processor};
use pm4core::shader::ShaderRegistry;
use pm4core::trace::{Trace, TraceEvent};

fn main() {
    for path in std::env::args().skip(1) {
        let trace = Trace::read_file(std::path::Path::new(&path)).unwrap();
        let mut mem = pm4core::memory::SparseMemory::new();
        let mut backend = RecordingBackend::new();
        let mut shaders = ShaderRegistry::default();
        let mut procs: Vec<Processor> = (0..57).map(|q| Processor::new(QueueId(q))).collect();
        let mut errors = 0;
        for ev in trace.events() {
            match ev {
                TraceEvent::MemRegion { .. } | TraceEvent::ZeroRegion { .. } => trace.map_region(&mem, ev).unwrap(),
                TraceEvent::HostWrite { .. } => trace.apply_host_write(&mut mem, ev).unwrap(),
                TraceEvent::Submit { queue, address, size_dw, .. } => {
                    let p = &mut procs[*queue as usize];
                    p.submit(*address, *size_dw).unwrap();
                    let mut env = Env { memory: &mut mem, backend: &mut backend, shaders: &mut shaders };
                    match p.process(&mut env) {
                        Ok(ProcessStatus::Completed) => {}
                        Ok(s) => {
                            println!("  queue {queue}: {s:?}");
                            p.abort();
                        }
                        Err(e) => {
                            println!("  queue {queue}: ERROR {e}");
                            errors += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        let mut packets = 0;
        let mut ne = std::collections::BTreeMap::new();
        let mut unknown = 0;
        for p in &procs {
            packets += p.stats().packets;
            unknown += p.stats().unknown;
            for (i, n) in p.stats().not_emulated.iter().enumerate() {
                if *n > 0 {
                    *ne.entry(pm4core::packet::Opcode(i as u8).to_string()).or_insert(0) += n;
                }
            }
        }
        println!("{path}: packets={packets} draws={} dispatches={} fences={} errors={errors} unknown={unknown} not_emulated={ne:?}", backend.draws, backend.dispatches, backend.fences);
    }
}
