//! `pm4`: replay, disassemble, assemble, inspect and import PM4 command
//! streams with pm4core.
//!
//! Exit status: 0 done, 1 the replay met an error (named on stderr and in
//! the summary), 2 bad input file or arguments (the fault named).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::limits::{self, Limit, LimitExceeded, Limits};
use pm4core::regs::db::GpuFamily;
use pm4core::replay::{self, MemoryQuery, RegisterQuery, ReplayOptions, ReplayOutputs};
use pm4core::trace::Trace;

/// The bundled trace `pm4 replay` runs when given no file.
const DEFAULT_TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/radv-frame.pm4t");

#[derive(Parser)]
#[command(name = "pm4", version, about = "PS5 (gfx10.3) PM4 command-processor tools", propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Largest input file any command reads, in bytes (only regular files are read).
    #[arg(long, global = true, value_name = "BYTES", default_value_t = Limits::default().max_file_bytes, value_parser = parse_u64)]
    max_file_size: u64,
}

/// What a replay may cost (`pm4core::limits::Limits`).
#[derive(Args)]
struct LimitArgs {
    /// Most packets all queues run over the whole replay (each draw of a multi-draw packet counts one more).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_packets, value_parser = parse_u64)]
    max_packets: u64,
    /// Most command dwords all queues read over the whole replay.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_dwords, value_parser = parse_u64)]
    max_dwords: u64,
    /// Most bytes packets and host writes write to guest memory over the whole replay.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_write_bytes, value_parser = parse_u64)]
    max_write_bytes: u64,
    /// Most guest memory the replay copies because it was written (4 KiB pages).
    #[arg(long, value_name = "BYTES", default_value_t = Limits::default().max_written_memory, value_parser = parse_u64)]
    max_memory: u64,
    /// Most records of the event log and of the timeline, each (then "truncated at N events").
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_events, value_parser = parse_u64)]
    max_events: u64,
    /// Most distinct bound program addresses kept (inspect's bindings).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_programs as u64, value_parser = parse_u64)]
    max_programs: u64,
}

impl LimitArgs {
    fn limits(&self, max_file_bytes: u64) -> Limits {
        Limits {
            max_packets: self.max_packets,
            max_dwords: self.max_dwords,
            max_write_bytes: self.max_write_bytes,
            max_written_memory: self.max_memory,
            max_events: self.max_events,
            max_programs: usize::try_from(self.max_programs).unwrap_or(usize::MAX),
            max_file_bytes,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Replay a trace through the 57 queues (deterministic) and summarise.
    Replay {
        /// Trace file (default: the bundled radv-frame capture).
        trace: Option<PathBuf>,
        /// Write the deterministic event log here.
        #[arg(long)]
        log: Option<PathBuf>,
        /// Print the summary as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Report the final bytes of ADDR:LEN (repeatable).
        #[arg(long = "mem", value_name = "ADDR:LEN")]
        mem: Vec<String>,
        /// Report the final value of a register: NAME or NAME@QUEUE (repeatable).
        #[arg(long = "reg", value_name = "NAME")]
        reg: Vec<String>,
        /// Write a Chrome/Perfetto trace-event timeline of packets per queue.
        #[arg(long, value_name = "FILE")]
        timeline: Option<PathBuf>,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Disassemble a trace (every submission, IBs followed) or a raw dword file.
    Disasm {
        /// Trace file.
        trace: Option<PathBuf>,
        /// A raw file of little-endian dwords instead of a trace.
        #[arg(long, value_name = "FILE", conflicts_with = "trace")]
        raw: Option<PathBuf>,
        /// Address of the raw file's first dword.
        #[arg(long, default_value = "0", value_parser = parse_u64)]
        base: u64,
        /// Register database: gfx10.3 (default, or the trace's) or gfx7.
        #[arg(long)]
        gpu: Option<GpuFamily>,
        /// Packets as JSON records plus by_opcode counts.
        #[arg(long)]
        json: bool,
        /// Output assembler source that `pm4 asm` turns back into the trace.
        #[arg(long, conflicts_with = "json")]
        source: bool,
        /// Most packets the walk visits over all submissions (at least the input's dwords).
        #[arg(long, value_name = "N", default_value_t = DisasmOptions::default().max_packets, value_parser = parse_u64)]
        max_packets: u64,
    },
    /// Assemble a .pm4 source into a trace.
    Asm {
        /// Assembler source.
        source: PathBuf,
        /// Output trace.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Say what a file is and show its structure (trace, shader container,
    /// PS4 shader, DVLB, KYCAP capture).
    Inspect {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Turn other tools' captures into traces.
    Import {
        #[command(subcommand)]
        format: ImportFormat,
    },
}

#[derive(Subcommand)]
enum ImportFormat {
    /// A raw file of little-endian dwords, submitted as one command buffer.
    Raw {
        file: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// Where the buffer is placed (default: far from guest addresses).
        #[arg(long, value_parser = parse_u64)]
        address: Option<u64>,
        /// Queue: gfx, compP.Q or 0..=56.
        #[arg(long, default_value = "gfx")]
        queue: String,
        /// INFO gpu value.
        #[arg(long, default_value = "gfx10.3")]
        gpu: String,
    },
    /// A KYCAP command-only capture.
    Kycap {
        file: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
    },
}

fn parse_u64(s: &str) -> Result<u64, String> {
    replay::parse_number(s).ok_or_else(|| format!("'{s}' is not a number"))
}

/// A failure and its exit status.
struct Failure {
    code: u8,
    message: String,
}

fn bad_input(message: impl Into<String>) -> Failure {
    Failure { code: 2, message: message.into() }
}

/// Reads a whole input file once (a regular file of at most `max_bytes`).
fn read(path: &Path, max_bytes: u64) -> Result<std::sync::Arc<[u8]>, Failure> {
    limits::read_file(path, max_bytes).map_err(|e| bad_input(e.to_string()))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes).map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))
}

fn load_trace(path: &Path, max_bytes: u64) -> Result<Trace, Failure> {
    let bytes = read(path, max_bytes)?;
    Trace::parse(bytes).map_err(|e| bad_input(format!("{}: {e}", path.display())))
}

fn create_file(path: &Path) -> Result<Box<dyn Write + Send>, Failure> {
    let file = std::fs::File::create(path).map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))?;
    Ok(Box::new(file))
}

/// A limit met: exit 1 with the limit named.
fn limit_failure(e: LimitExceeded) -> Failure {
    Failure { code: 1, message: e.to_string() }
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PM4_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    let cli = Cli::parse();
    match run(cli.command, cli.max_file_size) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("pm4: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn run(command: Command, max_file: u64) -> Result<u8, Failure> {
    match command {
        Command::Replay { trace, log, json, mem, reg, timeline, limits } => replay_command(
            trace.as_deref(),
            log.as_deref(),
            json,
            &mem,
            &reg,
            timeline.as_deref(),
            limits.limits(max_file),
        ),
        Command::Disasm { trace, raw, base, gpu, json, source, max_packets } => {
            let options = DisasmOptions { family: gpu, max_packets, ..Default::default() };
            disasm_command(trace.as_deref(), raw.as_deref(), base, options, json, source, max_file)
        }
        Command::Asm { source, output } => {
            let bytes = read(&source, max_file)?;
            let text =
                std::str::from_utf8(&bytes).map_err(|_| bad_input(format!("{}: not UTF-8", source.display())))?;
            let trace = pm4core::asm::assemble(text).map_err(|e| bad_input(format!("{}:{e}", source.display())))?;
            write_file(&output, &trace)?;
            Ok(0)
        }
        Command::Inspect { file, json, limits } => inspect_command(&file, json, limits.limits(max_file)),
        Command::Import { format } => import_command(format, max_file),
    }
}

fn replay_command(
    trace: Option<&Path>,
    log: Option<&Path>,
    json: bool,
    mem: &[String],
    reg: &[String],
    timeline: Option<&Path>,
    limits: Limits,
) -> Result<u8, Failure> {
    let path = trace.unwrap_or(Path::new(DEFAULT_TRACE));
    let trace = load_trace(path, limits.max_file_bytes)?;
    let family = trace.gpu().and_then(|g| g.parse::<GpuFamily>().ok()).unwrap_or(GpuFamily::Gfx103);
    let mut options = ReplayOptions { log: log.is_some(), timeline: timeline.is_some(), limits, ..Default::default() };
    for m in mem {
        options.memory.push(MemoryQuery::parse(m).map_err(bad_input)?);
    }
    for r in reg {
        options.registers.push(RegisterQuery::parse(r, family).map_err(bad_input)?);
    }
    let stderr = std::io::stderr();
    let show_progress = stderr.is_terminal() && !json;
    let total = trace.events().len();
    let mut last = 0usize;
    let mut progress = |done: usize| {
        if show_progress && (done == total || done >= last + 256) {
            last = done;
            let mut e = stderr.lock();
            let _ = write!(e, "\rreplaying {}: chunk {done}/{total}", path.display());
            if done == total {
                let _ = writeln!(e);
            }
        }
    };
    // The log and the timeline stream to their files as the replay goes.
    let outputs =
        ReplayOutputs { log: log.map(create_file).transpose()?, timeline: timeline.map(create_file).transpose()? };
    let outcome = replay::replay_to(&trace, &options, outputs, &mut progress);
    let mut out = std::io::stdout().lock();
    if json {
        let text = serde_json::to_string_pretty(&outcome.summary).map_err(|e| bad_input(e.to_string()))?;
        let _ = writeln!(out, "{text}");
    } else {
        let _ = write!(out, "{}", replay::format_summary(&outcome.summary));
    }
    for e in &outcome.summary.errors {
        eprintln!("pm4: replay error ({}): {}", e.kind, e.message);
    }
    Ok(if outcome.succeeded() { 0 } else { 1 })
}

fn disasm_command(
    trace: Option<&Path>,
    raw: Option<&Path>,
    base: u64,
    options: DisasmOptions,
    json: bool,
    source: bool,
    max_file: u64,
) -> Result<u8, Failure> {
    let (loaded, raw_bytes);
    let disassembler = match (trace, raw) {
        (Some(path), None) => {
            loaded = load_trace(path, max_file)?;
            Disassembler::for_trace(&loaded, options)
        }
        (None, Some(path)) => {
            raw_bytes = read(path, max_file)?;
            Disassembler::for_raw(&raw_bytes, base, options).map_err(|e| bad_input(e.to_string()))?
        }
        _ => return Err(bad_input("give a trace file or --raw FILE")),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = |e: std::io::Error| bad_input(format!("writing output: {e}"));
    let complete = if json {
        let listing = disassembler.listing();
        let text = listing.to_json().map_err(|e| bad_input(e.to_string()))?;
        writeln!(out, "{text}").map_err(io)?;
        listing.complete
    } else if source {
        disassembler.write_source(&mut out).map_err(io)?;
        true
    } else {
        let summary = disassembler.write_text(&mut out).map_err(io)?;
        Disassembler::write_summary(&summary, &mut out).map_err(io)?;
        summary.complete
    };
    out.flush().map_err(io)?;
    if !complete {
        return Err(limit_failure(LimitExceeded { limit: Limit::WalkPackets, value: disassembler.walk_budget() }));
    }
    Ok(0)
}

fn inspect_command(file: &Path, json: bool, limits: Limits) -> Result<u8, Failure> {
    let bytes = read(file, limits.max_file_bytes)?;
    let mut out = std::io::stdout().lock();
    match pm4core::import::detect(&bytes) {
        pm4core::import::ImportFormat::Trace => {
            let trace = Trace::parse(bytes.clone()).map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            drop(bytes);
            let report = pm4core::inspect::inspect_trace_with(&trace, &limits);
            if json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| bad_input(e.to_string()))?;
                let _ = writeln!(out, "{text}");
            } else {
                let _ = write!(out, "{report}");
            }
            if let Some(why) = report.bindings_incomplete {
                return Err(Failure { code: 1, message: why });
            }
        }
        pm4core::import::ImportFormat::Kycap => {
            let capture = pm4core::import::parse_kycap(&bytes, &Default::default())
                .map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            let report = pm4core::inspect::KycapReport::new(&capture);
            if json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| bad_input(e.to_string()))?;
                let _ = writeln!(out, "{text}");
            } else {
                let _ = write!(out, "{report}");
            }
        }
        _ => {
            let report = pm4core::shader::inspect::inspect(&bytes);
            if json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| bad_input(e.to_string()))?;
                let _ = writeln!(out, "{text}");
            } else {
                let _ = writeln!(out, "{report}");
            }
        }
    }
    Ok(0)
}

fn import_command(format: ImportFormat, max_file: u64) -> Result<u8, Failure> {
    use pm4core::import::{import_kycap, import_raw, ImportOptions, DEFAULT_RAW_ADDRESS};
    match format {
        ImportFormat::Raw { file, output, address, queue, gpu } => {
            let bytes = read(&file, max_file)?;
            let queue = replay::parse_queue(&queue).ok_or_else(|| bad_input(format!("bad queue '{queue}'")))?;
            let options = ImportOptions { gpu, source: Some(file.display().to_string()), ..Default::default() };
            let trace = import_raw(&bytes, address.unwrap_or(DEFAULT_RAW_ADDRESS), queue.0, &options)
                .map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            write_file(&output, &trace)?;
        }
        ImportFormat::Kycap { file, output } => {
            let bytes = read(&file, max_file)?;
            let options = ImportOptions { source: Some(file.display().to_string()), ..Default::default() };
            let trace = import_kycap(&bytes, &options).map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            write_file(&output, &trace)?;
        }
    }
    Ok(0)
}
