//! The replay's timeline: Chrome/Perfetto trace-event JSON, streamed as
//! the packets run and bounded by [`Limits::max_events`](crate::limits::Limits::max_events).

use crate::backend::QueueId;
use crate::diagnostics::timeline::WaitSpan;
use crate::limits::{RecordOut, Records};
use crate::packet::PacketName;

/// The timeline: Chrome/Perfetto trace-event JSON, one process, one thread
/// per queue, one 1-µs complete event per packet at the global packet clock,
/// written as the packets run; the waits (known when they end), the thread
/// names and the closing bracket are written by [`Timeline::finish`].
pub(super) struct Timeline {
    pub(super) records: Records,
    /// Queues that have an event (bit per queue).
    queues: u64,
}

impl Timeline {
    pub(super) fn new(out: RecordOut, max: u64) -> Self {
        let mut records = Records::new(out, max);
        records.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        Timeline { records, queues: 0 }
    }

    fn separator(&self) -> &'static str {
        if self.records.count() == 0 && !self.records.truncated() {
            ""
        } else {
            ",\n"
        }
    }

    pub(super) fn packet(&mut self, clock: u64, queue: u32, name: PacketName) {
        if !self.records.accepts() {
            return;
        }
        let sep = self.separator();
        let event =
            format!("{sep}{{\"ph\":\"X\",\"pid\":1,\"tid\":{queue},\"ts\":{clock},\"dur\":1,\"name\":\"{name}\"}}");
        if self.records.record(&event, |n| {
            format!("{sep}{{\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":0,\"ts\":{clock},\"name\":\"truncated at {n} events\"}}")
        }) {
            self.queues |= 1u64.checked_shl(queue).unwrap_or(0);
        }
    }

    /// Writes the wait spans (at most [`Limits::max_events`]), the thread
    /// names and the closing bracket.
    pub(super) fn finish(mut self, waits: &[WaitSpan]) -> (RecordOut, Option<std::io::Error>, bool) {
        let mut events = Vec::new();
        for (id, w) in waits.iter().enumerate() {
            self.queues |= 1u64.checked_shl(w.queue.0).unwrap_or(0);
            events.clear();
            w.write_events(id as u64 + 1, &mut events);
            for e in &events {
                let sep = self.separator();
                self.records.raw(&format!("{sep}{e}"));
            }
        }
        for q in 0..QueueId::COUNT {
            if self.queues & (1u64 << q) != 0 {
                let sep = self.separator();
                self.records.raw(&format!(
                    "{sep}{{\"ph\":\"M\",\"pid\":1,\"tid\":{q},\"name\":\"thread_name\",\"args\":{{\"name\":\"{}\"}}}}",
                    QueueId(q)
                ));
            }
        }
        self.records.raw("\n]}\n");
        let truncated = self.records.truncated();
        let (out, error) = self.records.finish();
        (out, error, truncated)
    }
}
