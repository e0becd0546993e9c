//! `pm4`: replay, disassemble, assemble, inspect and import PM4 command
//! streams with pm4core.
//!
//! Exit status: 0 done, 1 the replay met an error (named on stderr and in
//! the summary), 2 bad input file or arguments (the fault named).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::regs::db::GpuFamily;
use pm4core::replay::{self, MemoryQuery, RegisterQuery, ReplayOptions};
use pm4core::trace::Trace;

/// The bundled trace `pm4 replay` runs when given no file.
const DEFAULT_TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/radv-frame.pm4t");

#[derive(Parser)]
#[command(name = "pm4", version, about = "PS5 (gfx10.3) PM4 command-processor tools", propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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

fn read(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| bad_input(format!("{}: {e}", path.display())))
}

/// A file's bytes in one shared allocation (walked in place, never copied).
fn read_shared(path: &Path) -> Result<std::sync::Arc<[u8]>, Failure> {
    use std::io::Read;
    let fail = |e: std::io::Error| bad_input(format!("{}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(fail)?;
    let len = file.metadata().map_err(fail)?.len();
    let len = usize::try_from(len).map_err(|_| bad_input(format!("{}: too large", path.display())))?;
    let mut bytes: std::sync::Arc<[u8]> = std::iter::repeat_n(0u8, len).collect();
    match std::sync::Arc::get_mut(&mut bytes) {
        Some(buffer) => file.read_exact(buffer).map_err(fail)?,
        None => return Err(bad_input(format!("{}: buffer not writable", path.display()))),
    }
    Ok(bytes)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes).map_err(|e| bad_input(format!("cannot write {}: {e}", path.display())))
}

fn load_trace(path: &Path) -> Result<Trace, Failure> {
    Trace::read_file(path).map_err(|e| bad_input(format!("{}: {e}", path.display())))
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("PM4_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("error"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("pm4: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn run(command: Command) -> Result<u8, Failure> {
    match command {
        Command::Replay { trace, log, json, mem, reg, timeline } => {
            replay_command(trace.as_deref(), log.as_deref(), json, &mem, &reg, timeline.as_deref())
        }
        Command::Disasm { trace, raw, base, gpu, json, source } => {
            disasm_command(trace.as_deref(), raw.as_deref(), base, gpu, json, source)
        }
        Command::Asm { source, output } => {
            let bytes = read(&source)?;
            let text = String::from_utf8(bytes).map_err(|_| bad_input(format!("{}: not UTF-8", source.display())))?;
            let trace = pm4core::asm::assemble(&text).map_err(|e| bad_input(format!("{}:{e}", source.display())))?;
            write_file(&output, &trace)?;
            Ok(0)
        }
        Command::Inspect { file, json } => inspect_command(&file, json),
        Command::Import { format } => import_command(format),
    }
}

fn replay_command(
    trace: Option<&Path>,
    log: Option<&Path>,
    json: bool,
    mem: &[String],
    reg: &[String],
    timeline: Option<&Path>,
) -> Result<u8, Failure> {
    let path = trace.unwrap_or(Path::new(DEFAULT_TRACE));
    let trace = load_trace(path)?;
    let family = trace.gpu().and_then(|g| g.parse::<GpuFamily>().ok()).unwrap_or(GpuFamily::Gfx103);
    let mut options = ReplayOptions { log: log.is_some(), timeline: timeline.is_some(), ..Default::default() };
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
    let outcome = replay::replay_with_progress(&trace, &options, &mut progress);
    if let Some(path) = log {
        let mut text = outcome.log.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        write_file(path, text.as_bytes())?;
    }
    if let (Some(path), Some(t)) = (timeline, &outcome.timeline) {
        write_file(path, t.as_bytes())?;
    }
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
    gpu: Option<GpuFamily>,
    json: bool,
    source: bool,
) -> Result<u8, Failure> {
    let options = DisasmOptions { family: gpu, ..Default::default() };
    let (loaded, raw_bytes);
    let disassembler = match (trace, raw) {
        (Some(path), None) => {
            loaded = load_trace(path)?;
            Disassembler::for_trace(&loaded, options)
        }
        (None, Some(path)) => {
            raw_bytes = read_shared(path)?;
            Disassembler::for_raw_shared(raw_bytes, base, options).map_err(|e| bad_input(e.to_string()))?
        }
        _ => return Err(bad_input("give a trace file or --raw FILE")),
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = |e: std::io::Error| bad_input(format!("writing output: {e}"));
    if json {
        let text = disassembler.listing().to_json().map_err(|e| bad_input(e.to_string()))?;
        writeln!(out, "{text}").map_err(io)?;
    } else if source {
        disassembler.write_source(&mut out).map_err(io)?;
    } else {
        let summary = disassembler.write_text(&mut out).map_err(io)?;
        Disassembler::write_summary(&summary, &mut out).map_err(io)?;
    }
    out.flush().map_err(io)?;
    Ok(0)
}

fn inspect_command(file: &Path, json: bool) -> Result<u8, Failure> {
    let bytes = read(file)?;
    let mut out = std::io::stdout().lock();
    match pm4core::import::detect(&bytes) {
        pm4core::import::ImportFormat::Trace => {
            let trace = load_trace(file)?;
            let report = pm4core::inspect::inspect_trace(&trace);
            if json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| bad_input(e.to_string()))?;
                let _ = writeln!(out, "{text}");
            } else {
                let _ = write!(out, "{report}");
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

fn import_command(format: ImportFormat) -> Result<u8, Failure> {
    use pm4core::import::{import_kycap, import_raw, ImportOptions, DEFAULT_RAW_ADDRESS};
    match format {
        ImportFormat::Raw { file, output, address, queue, gpu } => {
            let bytes = read(&file)?;
            let queue = replay::parse_queue(&queue).ok_or_else(|| bad_input(format!("bad queue '{queue}'")))?;
            let options = ImportOptions { gpu, source: Some(file.display().to_string()), ..Default::default() };
            let trace = import_raw(&bytes, address.unwrap_or(DEFAULT_RAW_ADDRESS), queue.0, &options)
                .map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            write_file(&output, &trace)?;
        }
        ImportFormat::Kycap { file, output } => {
            let bytes = read(&file)?;
            let options = ImportOptions { source: Some(file.display().to_string()), ..Default::default() };
            let trace = import_kycap(&bytes, &options).map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            write_file(&output, &trace)?;
        }
    }
    Ok(0)
}
