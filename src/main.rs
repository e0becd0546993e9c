//! `pm4`: replay, disassemble, assemble, inspect and import PM4 command
//! streams with pm4core.
//!
//! Exit status: 0 done, 1 the replay met an error (named on stderr and in
//! the summary), 2 bad input file or arguments (the fault named). Output
//! cut short by its reader (`pm4 disasm … | head`) ends quietly with 0.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use pm4core::backend::QueueId;
use pm4core::diagnostics::state::{self, StopAt};
use pm4core::diagnostics::stats;
use pm4core::disasm::{DisasmOptions, Disassembler};
use pm4core::import::DEFAULT_RAW_ADDRESS;
use pm4core::limits::{self, Limit, LimitExceeded, Limits};
use pm4core::regs::db::GpuFamily;
use pm4core::replay::{self, MemoryQuery, RegisterQuery, ReplayOptions, ReplayOutputs};
use pm4core::trace::{Trace, TraceEvent};

/// The trace `pm4 replay` runs when given no file: the radv frame capture,
/// built into the command (it does not depend on where the sources were).
const DEFAULT_TRACE: &[u8] = include_bytes!("../traces/radv-frame.pm4t");
/// How the built-in trace is named in messages.
const DEFAULT_TRACE_NAME: &str = "radv-frame.pm4t (built in)";

#[derive(Parser)]
#[command(name = "pm4", version, about = "PS5 (gfx10.3) PM4 command-processor tools", propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Largest input file any command reads, in bytes (only regular files are read).
    #[arg(long, global = true, value_name = "BYTES", default_value_t = Limits::default().max_file_bytes, value_parser = parse_u64)]
    max_file_size: u64,
}

/// What a replay's work may cost (`pm4core::limits::Limits`).
#[derive(Args)]
struct LimitArgs {
    /// Most packets all queues run over the whole replay (each draw or dispatch a packet makes counts one more).
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
}

impl LimitArgs {
    /// The limits, with the defaults of those the command has no option for.
    fn limits(&self, max_file_bytes: u64) -> Limits {
        Limits {
            max_packets: self.max_packets,
            max_dwords: self.max_dwords,
            max_write_bytes: self.max_write_bytes,
            max_written_memory: self.max_memory,
            max_file_bytes,
            ..Limits::default()
        }
    }
}

/// Most records of the event log and of the timeline, each.
#[derive(Args)]
struct EventLimitArg {
    /// Most records of the event log and of the timeline, each (then "truncated at N events"),
    /// and of the summary's skipped_ibs.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_events, value_parser = parse_u64)]
    max_events: u64,
}

/// Most programs a replay keeps.
#[derive(Args)]
struct ProgramLimitArg {
    /// Most distinct bound program addresses kept (more are counted).
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_programs as u64, value_parser = parse_u64)]
    max_programs: u64,
}

impl ProgramLimitArg {
    fn get(&self) -> usize {
        usize::try_from(self.max_programs).unwrap_or(usize::MAX)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Replay a trace through the 57 queues (deterministic) and summarise.
    Replay {
        /// Trace file (default: the radv-frame capture, built into the command).
        trace: Option<PathBuf>,
        /// Write the deterministic event log here: one line per effect, numbered
        /// with the queue's packet (`gfx #12 draw …`, as `state --at '#12'` takes it).
        #[arg(long)]
        log: Option<PathBuf>,
        /// Print the summary as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Report the final bytes of ADDR:LEN, a range of the trace's memory (repeatable).
        #[arg(long = "mem", value_name = "ADDR:LEN")]
        mem: Vec<String>,
        /// Report the final value of a register: NAME or NAME@QUEUE (repeatable).
        #[arg(long = "reg", value_name = "NAME")]
        reg: Vec<String>,
        /// Write a Chrome/Perfetto trace-event timeline: packets per queue, each wait
        /// a span with an arrow from the packet that released it (clock: packet counter).
        #[arg(long, value_name = "FILE")]
        timeline: Option<PathBuf>,
        /// Write DWORD at ADDR before the first submission (repeatable): a what-if replay.
        #[arg(long = "patch", value_name = "ADDR=DWORD", value_parser = parse_patch)]
        patch: Vec<(u64, u32)>,
        /// Skip (and report) indirect buffers whose memory is not in the trace,
        /// instead of stopping the submission.
        #[arg(long)]
        skip_unmapped_ibs: bool,
        /// Replay on a threaded GPU with N worker threads instead of the deterministic one.
        /// For streams whose queues do not race the summary is the deterministic replay's
        /// (per-queue counts, packets, memory, registers), except `waits`: whether a queue
        /// finds its label written or waits for it depends on how the queues interleave.
        /// The --log holds each queue's lines in the deterministic order, but lines of
        /// different queues interleave as the workers ran them; --timeline and the stall
        /// forensics come from deterministic passes; limits are checked every millisecond.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
        workers: Option<u16>,
        #[command(flatten)]
        limits: LimitArgs,
        #[command(flatten)]
        events: EventLimitArg,
        #[command(flatten)]
        programs: ProgramLimitArg,
    },
    /// Print a queue's registers before a packet, each with the packet that last wrote it.
    State {
        /// Trace file.
        trace: PathBuf,
        /// Stop before the first execution of the packet at ADDR, or before the
        /// queue's packet #N (0-based, every packet decoded counts; quote it in a
        /// shell: '#N').
        #[arg(long, value_name = "ADDR|#N", value_parser = StopAt::parse)]
        at: StopAt,
        /// The queue to stop: gfx, compP.Q or 0..=56 (default: the queue that
        /// runs the packet at ADDR; gfx for #N).
        #[arg(long, value_name = "QUEUE", value_parser = parse_queue)]
        queue: Option<QueueId>,
        /// Print what changed between --at and this second point instead.
        #[arg(long, value_name = "ADDR|#N", value_parser = StopAt::parse)]
        diff: Option<StopAt>,
        /// Print JSON on stdout.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Per-queue stream statistics: packets by opcode, NOP dwords, redundant
    /// register writes, context rolls, draws, dispatches.
    Stats {
        /// Trace file.
        trace: PathBuf,
        /// Print JSON on stdout.
        #[arg(long)]
        json: bool,
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
        /// Address of the raw file's first dword (as `import raw --address`).
        #[arg(long, visible_alias = "base", value_name = "ADDR", default_value_t = DEFAULT_RAW_ADDRESS, value_parser = parse_u64)]
        address: u64,
        /// Register database: gfx10.3 (default, or the trace's) or gfx7.
        #[arg(long, value_name = "FAMILY")]
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
        /// The file to describe.
        file: PathBuf,
        /// Print {"format": NAME, "report": {...}} on stdout.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        limits: LimitArgs,
        #[command(flatten)]
        programs: ProgramLimitArg,
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
        /// The dword file.
        file: PathBuf,
        /// Output trace.
        #[arg(short, long)]
        output: PathBuf,
        /// Address of the file's first dword (as `disasm --raw --address`; the default is far
        /// from guest addresses).
        #[arg(long, value_name = "ADDR", default_value_t = DEFAULT_RAW_ADDRESS, value_parser = parse_u64)]
        address: u64,
        /// Queue: gfx, compP.Q (pipe 0-6, queue 0-7) or 0..=56.
        #[arg(long, default_value = "gfx", value_parser = parse_queue)]
        queue: QueueId,
        /// Register database written into the trace's INFO gpu: gfx10.3 or gfx7.
        #[arg(long, value_name = "FAMILY", default_value = "gfx10.3")]
        gpu: GpuFamily,
    },
    /// A KYCAP command-only capture.
    Kycap {
        /// The capture.
        file: PathBuf,
        /// Output trace.
        #[arg(short, long)]
        output: PathBuf,
    },
}

fn parse_u64(s: &str) -> Result<u64, String> {
    replay::parse_number(s).ok_or_else(|| format!("'{s}' is not a number"))
}

fn parse_queue(s: &str) -> Result<QueueId, String> {
    s.parse::<QueueId>().map_err(|e| e.to_string())
}

/// `ADDR=DWORD`, each decimal or 0x-hex; the address dword-aligned.
fn parse_patch(s: &str) -> Result<(u64, u32), String> {
    let (a, v) = s.split_once('=').ok_or_else(|| format!("'{s}' is not ADDR=DWORD"))?;
    let address = replay::parse_number(a).ok_or_else(|| format!("bad address '{a}' in '{s}'"))?;
    let value = replay::parse_number(v)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("bad dword '{v}' in '{s}' (a number below 2^32)"))?;
    if address % 4 != 0 {
        return Err(format!("address {address:#x} in '{s}' is not dword-aligned"));
    }
    Ok((address, value))
}

/// A failure and its exit status.
struct Failure {
    code: u8,
    message: String,
}

fn bad_input(message: impl Into<String>) -> Failure {
    Failure { code: 2, message: message.into() }
}

/// A write to stdout failed: a reader that closed the pipe (`| head`) ends
/// the command quietly; anything else is named.
fn output_failure(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure { code: 0, message: String::new() }
    } else {
        bad_input(format!("writing output: {e}"))
    }
}

/// Writes `text` to stdout.
fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(output_failure)
}

/// Pretty JSON of `value` and a newline.
fn json_text(value: &impl serde::Serialize) -> Result<String, Failure> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| bad_input(e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// The byte ranges the trace maps.
fn trace_regions(trace: &Trace) -> Vec<(u64, u64)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match e {
            TraceEvent::MemRegion { address, data, .. } => Some((*address, data.len())),
            TraceEvent::ZeroRegion { address, len, .. } => Some((*address, *len)),
            _ => None,
        })
        .collect()
}

/// True when `[address, address + len)` lies inside one region of the trace.
fn in_trace_memory(regions: &[(u64, u64)], address: u64, len: u64) -> bool {
    regions.iter().any(|&(start, size)| {
        address >= start && address.checked_add(len).is_some_and(|end| end <= start.saturating_add(size))
    })
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
    // An invalid PM4_LOG is said, not ignored; the default (errors only) applies.
    let filter = match std::env::var("PM4_LOG") {
        Ok(text) => tracing_subscriber::EnvFilter::try_new(&text).unwrap_or_else(|e| {
            eprintln!("pm4: PM4_LOG='{text}' is not a filter ({e}); logging errors only (e.g. PM4_LOG=debug)");
            tracing_subscriber::EnvFilter::new("error")
        }),
        Err(_) => tracing_subscriber::EnvFilter::new("error"),
    };
    // Colour codes only for a terminal, never into a file or a pipe.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
    let cli = Cli::parse();
    match run(cli.command, cli.max_file_size) {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if !f.message.is_empty() {
                eprintln!("pm4: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}

fn run(command: Command, max_file: u64) -> Result<u8, Failure> {
    match command {
        Command::Replay {
            trace,
            log,
            json,
            mem,
            reg,
            timeline,
            patch,
            skip_unmapped_ibs,
            workers,
            limits,
            events,
            programs,
        } => {
            let args = ReplayArgs {
                log: log.as_deref(),
                json,
                mem: &mem,
                reg: &reg,
                timeline: timeline.as_deref(),
                workers: workers.map(usize::from),
            };
            let limits =
                Limits { max_events: events.max_events, max_programs: programs.get(), ..limits.limits(max_file) };
            replay_command(trace.as_deref(), &args, patch, skip_unmapped_ibs, limits)
        }
        Command::State { trace, at, queue, diff, json, limits } => {
            state_command(&trace, at, queue, diff, json, limits.limits(max_file))
        }
        Command::Stats { trace: path, json, limits } => {
            let limits = limits.limits(max_file);
            let trace = load_trace(&path, limits.max_file_bytes)?;
            let name = path.display().to_string();
            let mut progress = progress_line("counting", &name, true);
            let options = ReplayOptions { limits, ..ReplayOptions::default() };
            let stats = stats::stream_stats_with_progress(&trace, &options, &mut progress);
            print(&if json { json_text(&stats)? } else { stats.to_string() })?;
            for e in &stats.errors {
                eprintln!("pm4: replay error ({}): {}", e.kind, e.message);
            }
            Ok(if stats.errors.is_empty() { 0 } else { 1 })
        }
        Command::Disasm { trace, raw, address, gpu, json, source, max_packets } => {
            let options = DisasmOptions { family: gpu, max_packets, ..Default::default() };
            disasm_command(trace.as_deref(), raw.as_deref(), address, options, json, source, max_file)
        }
        Command::Asm { source, output } => {
            let bytes = read(&source, max_file)?;
            let text =
                std::str::from_utf8(&bytes).map_err(|_| bad_input(format!("{}: not UTF-8", source.display())))?;
            let trace = pm4core::asm::assemble(text).map_err(|e| bad_input(asm_error(&source, &e)))?;
            write_file(&output, &trace)?;
            Ok(0)
        }
        Command::Inspect { file, json, limits, programs } => {
            inspect_command(&file, json, Limits { max_programs: programs.get(), ..limits.limits(max_file) })
        }
        Command::Import { format } => import_command(format, max_file),
    }
}

/// An assembler error as compilers write theirs: `FILE:LINE:COLUMN: what`
/// (`FILE: what` for an error about the whole result).
fn asm_error(source: &Path, e: &pm4core::asm::AsmError) -> String {
    match (e.line, e.column) {
        (0, _) => format!("{}: {}", source.display(), e.kind),
        (line, column) => format!("{}:{line}:{column}: {}", source.display(), e.kind),
    }
}

/// On a terminal, a progress line on stderr: the chunk and the packets run
/// so far (redrawn at most every 50 ms), cleared at the end.
fn progress_line<'a>(verb: &'a str, name: &'a str, wanted: bool) -> impl FnMut(replay::Progress) + 'a {
    let show = wanted && std::io::stderr().is_terminal();
    let mut shown: Option<std::time::Instant> = None;
    move |p: replay::Progress| {
        if !show {
            return;
        }
        let mut e = std::io::stderr().lock();
        if p.finished() {
            if shown.is_some() {
                let _ = write!(e, "\r\x1b[2K");
                let _ = e.flush();
            }
        } else if shown.is_none_or(|at| at.elapsed() >= std::time::Duration::from_millis(50)) {
            shown = Some(std::time::Instant::now());
            let chunk = (p.chunks_done + 1).min(p.chunks);
            let _ = write!(e, "\r\x1b[2K{verb} {name}: chunk {chunk}/{}, {} packets", p.chunks, p.packets);
            let _ = e.flush();
        }
    }
}

/// The reporting options of `pm4 replay`.
struct ReplayArgs<'a> {
    log: Option<&'a Path>,
    json: bool,
    mem: &'a [String],
    reg: &'a [String],
    timeline: Option<&'a Path>,
    /// Replay on a threaded GPU with this many workers.
    workers: Option<usize>,
}

fn replay_command(
    trace: Option<&Path>,
    args: &ReplayArgs<'_>,
    patches: Vec<(u64, u32)>,
    skip_unmapped_ibs: bool,
    limits: Limits,
) -> Result<u8, Failure> {
    let ReplayArgs { log, json, mem, reg, timeline, workers } = *args;
    let (trace, name) = match trace {
        Some(path) => (load_trace(path, limits.max_file_bytes)?, path.display().to_string()),
        None => {
            let trace = Trace::parse(std::sync::Arc::from(DEFAULT_TRACE))
                .map_err(|e| bad_input(format!("{DEFAULT_TRACE_NAME}: {e}")))?;
            (trace, DEFAULT_TRACE_NAME.to_string())
        }
    };
    let family = trace.gpu().and_then(|g| g.parse::<GpuFamily>().ok()).unwrap_or(GpuFamily::Gfx103);
    let mut options = ReplayOptions { log: log.is_some(), timeline: timeline.is_some(), limits, ..Default::default() };
    options.gpu.processor.skip_unmapped_ibs = skip_unmapped_ibs;
    if let Some(workers) = workers {
        options.threaded = true;
        options.gpu.workers = workers;
    }
    let regions = trace_regions(&trace);
    for m in mem {
        let query = MemoryQuery::parse(m).map_err(|e| bad_input(format!("--mem {e}")))?;
        if !in_trace_memory(&regions, query.address, query.len) {
            return Err(bad_input(format!("--mem {m}: the range is not inside one memory region of the trace")));
        }
        options.memory.push(query);
    }
    for r in reg {
        options.registers.push(RegisterQuery::parse(r, family).map_err(|e| bad_input(format!("--reg {e}")))?);
    }
    for &(address, value) in &patches {
        if !in_trace_memory(&regions, address, 4) {
            return Err(bad_input(format!(
                "--patch {address:#x}={value:#x}: the address is not inside a memory region of the trace"
            )));
        }
    }
    options.patches = patches;
    let mut progress = progress_line("replaying", &name, !json);
    // The log and the timeline stream to their files as the replay goes.
    let outputs =
        ReplayOutputs { log: log.map(create_file).transpose()?, timeline: timeline.map(create_file).transpose()? };
    let outcome = replay::replay_to(&trace, &options, outputs, &mut progress);
    print(&if json { json_text(&outcome.summary)? } else { replay::format_summary(&outcome.summary) })?;
    for e in &outcome.summary.errors {
        eprintln!("pm4: replay error ({}): {}", e.kind, e.message);
    }
    Ok(if outcome.succeeded() { 0 } else { 1 })
}

fn state_command(
    path: &Path,
    at: StopAt,
    queue: Option<QueueId>,
    diff: Option<StopAt>,
    json: bool,
    limits: Limits,
) -> Result<u8, Failure> {
    let trace = load_trace(path, limits.max_file_bytes)?;
    let options = ReplayOptions { limits, ..ReplayOptions::default() };
    let name = path.display().to_string();
    let mut progress = progress_line("replaying", &name, true);
    let first = state::state_at_with_progress(&trace, &options, queue, at, &mut progress)
        .map_err(|e| state_failure("--at", at, &e))?;
    let text = match diff {
        None if json => json_text(&first)?,
        None => first.to_string(),
        Some(second) => {
            // The second point on the first point's queue unless one was named.
            let queue = queue.or(Some(QueueId(first.queue)));
            let other = state::state_at_with_progress(&trace, &options, queue, second, &mut progress)
                .map_err(|e| state_failure("--diff", second, &e))?;
            let d = state::diff(&first, &other);
            if json {
                json_text(&d)?
            } else {
                d.to_string()
            }
        }
    };
    print(&text)?;
    Ok(0)
}

/// A point `pm4 state` did not reach: exit 1 when a resource limit stopped
/// the replay first (as every command that reaches one), else 2 (the point
/// is not in the trace).
fn state_failure(option: &str, at: StopAt, e: &state::StateError) -> Failure {
    let code = if e.limit.is_some() { 1 } else { 2 };
    Failure { code, message: format!("{option} {at}: {e}") }
}

/// Standard output for a command that writes a lot of text (a listing can
/// be many times its input): behind a 256 KiB buffer, and when it is a pipe
/// (on Linux) with the pipe's capacity raised to 1 MiB where the system
/// allows, so the writer and the reader take turns once per megabyte
/// instead of once per 64 KiB. The text is the same either way.
fn bulk_stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    let stdout = std::io::stdout().lock();
    #[cfg(target_os = "linux")]
    {
        // Not a pipe, or above the system's limit: the capacity stays.
        let _ = rustix::pipe::fcntl_setpipe_size(&stdout, 1 << 20);
    }
    std::io::BufWriter::with_capacity(256 << 10, stdout)
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
            Disassembler::for_raw_shared(raw_bytes, base, options).map_err(|e| bad_input(e.to_string()))?
        }
        _ => return Err(bad_input("give a trace file or --raw FILE")),
    };
    let mut out = bulk_stdout();
    let io = output_failure;
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
    use pm4core::shader::inspect::Inspection;
    let bytes = read(file, limits.max_file_bytes)?;
    // One JSON shape for every kind of file: {"format": NAME, "report": {...}}.
    let show = |format: &str, report: &dyn erased::Report| -> Result<u8, Failure> {
        if json {
            let value = serde_json::json!({ "format": format, "report": report.json()? });
            print(&json_text(&value)?)?;
        } else {
            print(&report.text())?;
        }
        Ok(0)
    };
    match pm4core::import::detect(&bytes) {
        pm4core::import::ImportFormat::Trace => {
            let trace = Trace::parse(bytes.clone()).map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            drop(bytes);
            let report = pm4core::inspect::inspect_trace_with(&trace, &limits);
            show("trace", &report)?;
            match report.bindings_incomplete {
                Some(why) => Err(Failure { code: 1, message: why }),
                None => Ok(0),
            }
        }
        pm4core::import::ImportFormat::Kycap => {
            let capture = pm4core::import::parse_kycap(&bytes, &Default::default())
                .map_err(|e| bad_input(format!("{}: {e}", file.display())))?;
            show("kycap", &pm4core::inspect::KycapReport::new(&capture))
        }
        _ => {
            let inspection = pm4core::shader::inspect::inspect(&bytes);
            let text = inspection.to_string();
            match &inspection {
                Inspection::Malformed { format, error } => {
                    Err(bad_input(format!("{}: malformed {}: {error}", file.display(), format.name())))
                }
                Inspection::Unknown { len, head } => {
                    Err(bad_input(format!("{}: not a format pm4 knows ({len} bytes, starting {head})", file.display())))
                }
                Inspection::AgcHeader(r) => show("agc_header", &erased::Shown(&**r, text)),
                Inspection::AgcElf(r) => show("agc_elf", &erased::Shown(&**r, text)),
                Inspection::GnmShaderFile(r) => show("gnm_shader_file", &erased::Shown(&**r, text)),
                Inspection::GnmCode(r) => show("gnm_code", &erased::Shown(&**r, text)),
                Inspection::Dvlb(r) => show("dvlb", &erased::Shown(&**r, text)),
            }
        }
    }
}

/// What `pm4 inspect` prints of a report: its JSON value and its text.
mod erased {
    use super::{bad_input, Failure};

    pub trait Report {
        fn json(&self) -> Result<serde_json::Value, Failure>;
        fn text(&self) -> String;
    }

    impl<T: serde::Serialize + std::fmt::Display> Report for T {
        fn json(&self) -> Result<serde_json::Value, Failure> {
            serde_json::to_value(self).map_err(|e| bad_input(e.to_string()))
        }
        fn text(&self) -> String {
            self.to_string()
        }
    }

    /// A report whose text comes from elsewhere.
    pub struct Shown<'a, T>(pub &'a T, pub String);

    impl<T: serde::Serialize> Report for Shown<'_, T> {
        fn json(&self) -> Result<serde_json::Value, Failure> {
            serde_json::to_value(self.0).map_err(|e| bad_input(e.to_string()))
        }
        fn text(&self) -> String {
            let mut t = self.1.clone();
            if !t.ends_with('\n') {
                t.push('\n');
            }
            t
        }
    }
}

fn import_command(format: ImportFormat, max_file: u64) -> Result<u8, Failure> {
    use pm4core::import::{import_kycap, import_raw, ImportOptions};
    match format {
        ImportFormat::Raw { file, output, address, queue, gpu } => {
            let bytes = read(&file, max_file)?;
            let options =
                ImportOptions { gpu: gpu.to_string(), source: Some(file.display().to_string()), ..Default::default() };
            let trace = import_raw(&bytes, address, queue.0, &options)
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
