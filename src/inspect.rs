//! What a trace or a capture holds, for `pm4 inspect`: chunks, regions,
//! submissions, and the shaders it creates and binds with their decoded
//! containers. (Shader binaries themselves are described by
//! [`crate::shader::inspect`].)

use crate::counted;
use std::fmt;

use crate::import::{kycap_queue, KycapCapture};
use crate::limits::Limits;
use crate::memory::GuestMemory;
use crate::replay::{self, ReplayOptions};
use crate::shader::AgcShader;
use crate::trace::{Trace, TraceEvent};

/// One chunk of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ChunkLine {
    pub index: u32,
    pub offset: u64,
    pub tag: String,
    pub payload_len: u32,
    /// What the chunk says, in one line.
    pub detail: String,
}

/// A shader the trace creates (`SHDR`) or binds (a program address at a draw
/// or dispatch), with its container when one decodes.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ShaderLine {
    /// `shdr` for a created shader, or the stage it was bound to.
    pub source: String,
    pub code_address: u64,
    pub header_address: Option<u64>,
    pub container: Option<AgcShader>,
    /// Why no container decoded, when one was expected.
    pub error: Option<String>,
}

/// The structure of a trace.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TraceReport {
    pub kind: &'static str,
    pub info: Vec<(String, String)>,
    pub file_size: u64,
    pub chunks: Vec<ChunkLine>,
    pub regions: u64,
    pub mapped_bytes: u64,
    pub submissions: u64,
    pub host_writes: u64,
    pub shaders: Vec<ShaderLine>,
    /// Set when the replay that finds the bound shaders stopped at a limit
    /// (the bindings listed are those found before it): the limit, named.
    pub bindings_incomplete: Option<String>,
}

fn detail(event: &TraceEvent) -> String {
    match event {
        TraceEvent::MemRegion { address, data, .. } => format!("{address:#x}..{:#x}", address + data.len()),
        TraceEvent::ZeroRegion { address, len, .. } => format!("{address:#x}..{:#x} (zero)", address + len),
        TraceEvent::HostWrite { address, data, .. } => {
            format!("{} at {address:#x}", counted(data.len(), "byte", "bytes"))
        }
        TraceEvent::Submit { queue, address, size_dw, .. } => {
            format!(
                "{} at {address:#x} on {}",
                counted(u64::from(*size_dw), "dword", "dwords"),
                crate::backend::QueueId(*queue)
            )
        }
        TraceEvent::Shader { header_address, code_address, relocated, .. } => {
            format!("header {header_address:#x}, code {code_address:#x}{}", if *relocated { ", relocated" } else { "" })
        }
        TraceEvent::Note { text, .. } => text.lines().next().unwrap_or("").to_string(),
        TraceEvent::Ancillary { .. } => "skipped".to_string(),
    }
}

/// Describes a trace: its chunks, and its shaders as created and as bound
/// (the trace is replayed, within the default [`Limits`], to see the
/// bindings).
pub fn inspect_trace(trace: &Trace) -> TraceReport {
    inspect_trace_with(trace, &Limits::default())
}

/// [`inspect_trace`] with the replay that finds the bindings bounded by
/// `limits`; when it stops at one,
/// [`TraceReport::bindings_incomplete`] names it.
///
/// ```
/// use pm4core::inspect::inspect_trace_with;
/// use pm4core::limits::Limits;
/// use pm4core::trace::TraceWriter;
///
/// let mut writer = TraceWriter::new();
/// // A buffer that chains to itself: the replay never ends on its own.
/// let chain = [0xC002_3F00u32, 0x1000, 0, (1 << 20) | (1 << 23) | 4];
/// writer.mem(0x1000, &chain.iter().flat_map(|d| d.to_le_bytes()).collect::<Vec<u8>>())?;
/// writer.submit(0, 0x1000, 4)?;
/// let trace = writer.finish_trace()?;
/// let report = inspect_trace_with(&trace, &Limits { max_packets: 1_000, ..Limits::default() });
/// assert_eq!(report.submissions, 1);
/// assert!(report.bindings_incomplete.unwrap().contains("--max-packets"));
/// # Ok::<(), pm4core::trace::TraceError>(())
/// ```
pub fn inspect_trace_with(trace: &Trace, limits: &Limits) -> TraceReport {
    let mut report = TraceReport {
        kind: "pm4 trace",
        info: trace.info().to_vec(),
        file_size: trace.bytes().len() as u64,
        chunks: Vec::new(),
        regions: 0,
        mapped_bytes: 0,
        submissions: 0,
        host_writes: 0,
        shaders: Vec::new(),
        bindings_incomplete: None,
    };
    let mut events = trace.events().iter();
    for chunk in trace.chunks() {
        let detail = if chunk.tag.as_bytes() == b"INFO" || chunk.tag.as_bytes() == b"END " {
            String::new()
        } else {
            events.next().map(detail).unwrap_or_default()
        };
        report.chunks.push(ChunkLine {
            index: chunk.index,
            offset: chunk.offset,
            tag: chunk.tag.to_string(),
            payload_len: chunk.payload_len,
            detail,
        });
    }
    let memory = trace.build_memory().ok();
    for event in trace.events() {
        match event {
            TraceEvent::MemRegion { .. } | TraceEvent::ZeroRegion { .. } => {
                report.regions += 1;
                report.mapped_bytes += event.region().map_or(0, |(_, len)| len);
            }
            TraceEvent::HostWrite { .. } => report.host_writes += 1,
            TraceEvent::Submit { .. } => report.submissions += 1,
            TraceEvent::Shader { header_address, code_address, .. } => {
                let decoded = match &memory {
                    Some(m) => AgcShader::read(m as &dyn GuestMemory, *header_address).map_err(|e| e.to_string()),
                    None => Err("the trace's memory could not be built".to_string()),
                };
                let (container, error) = match decoded {
                    Ok(c) => (Some(c), None),
                    Err(e) => (None, Some(e)),
                };
                report.shaders.push(ShaderLine {
                    source: "shdr".into(),
                    code_address: *code_address,
                    header_address: Some(*header_address),
                    container,
                    error,
                });
            }
            TraceEvent::Note { .. } | TraceEvent::Ancillary { .. } => {}
        }
    }
    let outcome = replay::replay(trace, &ReplayOptions { limits: *limits, ..ReplayOptions::default() });
    report.bindings_incomplete = outcome.summary.errors.iter().find(|e| e.kind == "limit").map(|e| e.message.clone());
    for p in outcome.programs {
        report.shaders.push(ShaderLine {
            source: format!("bound {}", p.stage.name()),
            code_address: p.address,
            header_address: p.container.as_ref().map(|c| c.extent().0),
            container: p.container.as_deref().cloned(),
            error: None,
        });
    }
    report
}

impl fmt::Display for TraceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}, {}, {}",
            self.kind,
            counted(self.file_size, "byte", "bytes"),
            counted(self.chunks.len() as u64, "chunk", "chunks")
        )?;
        for (k, v) in &self.info {
            writeln!(f, "  {k} = {v}")?;
        }
        writeln!(
            f,
            "{} ({} mapped), {}, {}",
            counted(self.regions, "region", "regions"),
            counted(self.mapped_bytes, "byte", "bytes"),
            counted(self.submissions, "submission", "submissions"),
            counted(self.host_writes, "host write", "host writes")
        )?;
        writeln!(f, "chunks:")?;
        for c in &self.chunks {
            writeln!(f, "  #{:<5} @{:#010x} {:<4} {:>9} B  {}", c.index, c.offset, c.tag, c.payload_len, c.detail)?;
        }
        if self.shaders.is_empty() {
            writeln!(f, "shaders: none")?;
        }
        for s in &self.shaders {
            write!(f, "shader ({}) code {:#x}", s.source, s.code_address)?;
            if let Some(h) = s.header_address {
                write!(f, " header {h:#x}")?;
            }
            match (&s.container, &s.error) {
                (Some(c), _) => {
                    writeln!(
                        f,
                        ": {:?}, {} SH + {} context registers, {} inputs, {} outputs",
                        c.shader_type(),
                        c.sh_registers().len(),
                        c.context_registers().len(),
                        c.input_semantics().len(),
                        c.output_semantics().len()
                    )?;
                }
                (None, Some(e)) => writeln!(f, ": {e}")?,
                (None, None) => writeln!(f, ": raw code (no container)")?,
            }
        }
        if let Some(why) = &self.bindings_incomplete {
            writeln!(f, "bound shaders incomplete: {why}")?;
        }
        Ok(())
    }
}

/// One record of a KYCAP capture.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct KycapLine {
    pub index: u64,
    pub offset: u64,
    pub sequence: u64,
    pub kind: String,
    pub queue: Option<u32>,
    pub dwords: u64,
}

/// The structure of a KYCAP capture.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct KycapReport {
    pub kind: &'static str,
    pub version: String,
    pub total_dwords: u64,
    pub records: Vec<KycapLine>,
}

impl KycapReport {
    /// Describes a parsed capture.
    pub fn new(c: &KycapCapture<'_>) -> Self {
        Self {
            kind: "KYCAP command capture",
            version: format!("{}.{}", c.major, c.minor),
            total_dwords: c.total_dwords,
            records: c
                .events
                .iter()
                .map(|e| KycapLine {
                    index: e.index,
                    offset: e.offset,
                    sequence: e.sequence,
                    kind: format!("{:?}", e.event),
                    queue: kycap_queue(e.queue),
                    dwords: (e.primary.len() / 4) as u64,
                })
                .collect(),
        }
    }
}

impl fmt::Display for KycapReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} v{}, {}, {}",
            self.kind,
            self.version,
            counted(self.records.len() as u64, "record", "records"),
            counted(self.total_dwords, "dword", "dwords")
        )?;
        for r in &self.records {
            write!(f, "  #{:<4} @{:#08x} seq {:<5} {:<16}", r.index, r.offset, r.sequence, r.kind)?;
            match r.queue {
                Some(q) => {
                    writeln!(f, " queue {:<8} {}", crate::backend::QueueId(q), counted(r.dwords, "dword", "dwords"))?
                }
                None => writeln!(f)?,
            }
        }
        Ok(())
    }
}
