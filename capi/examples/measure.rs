//! What the C ABI costs, measured in one run against the Rust API it wraps:
//!
//! - submit → completion: a threaded GPU, one small buffer submitted and
//!   waited for, through `pm4_gpu_submit` / `pm4_submission_wait` /
//!   `pm4_submission_free` (guest memory from `pm4_memory_new_flat`) and
//!   through `Gpu::submit` / `Submission::wait` (an `Arc<FlatMemory>`);
//! - a draw callback: a deterministic GPU running a buffer of draws, each
//!   handed to an `extern "C"` callback through `pm4_backend` (the call a C
//!   program's callback gets) and to a Rust backend's `draw`;
//! - the sizes of the static and the shared library (build them first with
//!   `cargo build --release -p pm4core-capi`).
//!
//! Rounds of the two sides alternate, so both see the same machine; the
//! medians of the rounds are compared.
//!
//! `cargo run --release -p pm4core-capi --example measure`

use std::ffi::c_void;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use pm4core::backend::{Backend, Draw, QueueId};
use pm4core::gpu::{Gpu, GpuConfig};
use pm4core::memory::{FlatMemory, GuestMemory};
use pm4core::packet::builder::CommandBuffer;
use pm4core::packet::Opcode;
use pm4core_capi::backend::{pm4_backend, pm4_draw};
use pm4core_capi::config::{pm4_gpu_config, PM4_MODE_DETERMINISTIC};
use pm4core_capi::gpu::pm4_gpu;
use pm4core_capi::memory::pm4_memory;
use pm4core_capi::pm4_status;

const BASE: u64 = 0;
const SIZE: u64 = 16 << 20;
const COMMANDS: u64 = 0x1000;
const LABEL: u64 = 0x8000;
const DRAWS: u32 = 20_000;
const ROUNDS: usize = 15;
/// Rounds of submissions: many short ones, each C round next to a Rust one.
const SUBMIT_ROUNDS: usize = 41;
const SUBMISSIONS: usize = 2_000;

fn ok(status: pm4_status, what: &str) {
    assert_eq!(status, pm4_status::PM4_STATUS_OK, "{what}: {:?}", unsafe {
        // SAFETY: the library's last message: a NUL-terminated string.
        std::ffi::CStr::from_ptr(pm4core_capi::pm4_last_error_message())
    });
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One WRITE_DATA of the label: the smallest buffer that does something.
fn small_buffer() -> Vec<u8> {
    let mut cb = CommandBuffer::new();
    cb.write_mem(LABEL, &[1]).unwrap();
    cb.to_bytes()
}

/// `DRAWS` auto-indexed draws.
fn draw_buffer() -> Vec<u8> {
    let mut cb = CommandBuffer::new();
    for _ in 0..DRAWS {
        cb.pkt3(Opcode::DRAW_INDEX_AUTO, &[3, 2]).unwrap();
    }
    cb.to_bytes()
}

fn threaded_config() -> GpuConfig {
    GpuConfig { workers: 1, ..GpuConfig::default() }
}

fn c_config(mode: u32) -> pm4_gpu_config {
    let mut config = std::mem::MaybeUninit::uninit();
    // SAFETY: a valid place for one config.
    ok(unsafe { pm4core_capi::config::pm4_gpu_config_default(config.as_mut_ptr()) }, "default config");
    // SAFETY: filled by the OK call above.
    let mut config: pm4_gpu_config = unsafe { config.assume_init() };
    config.mode = mode;
    config.workers = 1;
    config
}

fn c_memory(bytes: &[u8]) -> *mut pm4_memory {
    let mut memory = std::ptr::null_mut();
    // SAFETY: `memory` is a valid output place.
    ok(unsafe { pm4core_capi::memory::pm4_memory_new_flat(BASE, SIZE, &mut memory) }, "memory");
    // SAFETY: `bytes` is valid for its length.
    ok(
        unsafe { pm4core_capi::memory::pm4_memory_write(memory, COMMANDS, bytes.as_ptr().cast(), bytes.len()) },
        "write",
    );
    memory
}

fn c_gpu(config: &pm4_gpu_config, memory: *mut pm4_memory, backend: Option<&pm4_backend>) -> *mut pm4_gpu {
    let mut gpu = std::ptr::null_mut();
    let backend = backend.map_or(std::ptr::null(), |b| b as *const pm4_backend);
    // SAFETY: valid config, backend (or NULL) and output place.
    ok(unsafe { pm4core_capi::gpu::pm4_gpu_new(config, memory, backend, &mut gpu) }, "gpu");
    gpu
}

/// Submit → completion, per submission, in rounds of `n` submissions:
/// (Rust median, C median, median of each round's C / Rust ratio).
fn submit_to_completion(n: usize) -> (f64, f64, f64) {
    let bytes = small_buffer();
    let size = (bytes.len() / 4) as u32;
    let ram = Arc::new(FlatMemory::new(BASE, SIZE).unwrap());
    ram.write_bytes(COMMANDS, &bytes).unwrap();
    let rust = Gpu::threaded(Arc::clone(&ram), pm4core::backend::NullBackend, threaded_config()).unwrap();
    let memory = c_memory(&bytes);
    let c = c_gpu(&c_config(pm4core_capi::config::PM4_MODE_THREADED), memory, None);
    let rust_round = || {
        let start = Instant::now();
        for _ in 0..n {
            rust.submit(QueueId::GRAPHICS, COMMANDS, size).unwrap().wait().unwrap();
        }
        start.elapsed().as_secs_f64() * 1e9 / n as f64
    };
    let c_round = || {
        let start = Instant::now();
        for _ in 0..n {
            let mut sub = std::ptr::null_mut();
            // SAFETY: a valid output place; the report output is NULL.
            unsafe {
                ok(pm4core_capi::gpu::pm4_gpu_submit(c, 0, COMMANDS, size, &mut sub), "submit");
                ok(pm4core_capi::submission::pm4_submission_wait(sub, std::ptr::null_mut()), "wait");
            }
            pm4core_capi::submission::pm4_submission_free(sub);
        }
        start.elapsed().as_secs_f64() * 1e9 / n as f64
    };
    let (mut rust_rounds, mut c_rounds) = (Vec::new(), Vec::new());
    for round in 0..=SUBMIT_ROUNDS {
        // Each side goes first every other round.
        let (r, c) = if round % 2 == 0 {
            let r = rust_round();
            (r, c_round())
        } else {
            let c = c_round();
            (rust_round(), c)
        };
        if round > 0 {
            // The first round warms both up.
            rust_rounds.push(r);
            c_rounds.push(c);
        }
    }
    pm4core_capi::gpu::pm4_gpu_free(c);
    pm4core_capi::memory::pm4_memory_free(memory);
    let ratios = c_rounds.iter().zip(&rust_rounds).map(|(c, r)| c / r).collect();
    (median(rust_rounds), median(c_rounds), median(ratios))
}

/// A Rust backend counting draws, one per queue.
struct Count(Arc<AtomicU64>);

impl Backend for Count {
    fn draw(&mut self, _draw: &Draw<'_>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    fn queue_backend(&mut self, _queue: QueueId) -> Option<Box<dyn Backend + Send>> {
        Some(Box::new(Count(Arc::clone(&self.0))))
    }
}

/// The C callback counting draws (what a C program registers).
unsafe extern "C" fn count_draw(user_data: *mut c_void, _draw: *const pm4_draw) {
    // SAFETY: `user_data` is the `AtomicU64` the measurement registered,
    // alive for the GPU's lifetime.
    unsafe { &*user_data.cast::<AtomicU64>() }.fetch_add(1, Ordering::Relaxed);
}

/// Gives each queue the counting callback.
unsafe extern "C" fn queue_backend(user_data: *mut c_void, _queue: u32, out: *mut pm4_backend) -> u8 {
    // SAFETY: `out` is the library's zeroed backend for this call.
    let out = unsafe { &mut *out };
    out.user_data = user_data;
    out.draw = Some(count_draw);
    1
}

/// Time per draw of a run of `DRAWS` draws: (Rust backend, C callback).
fn draw_callbacks() -> (f64, f64) {
    let bytes = draw_buffer();
    let size = (bytes.len() / 4) as u32;
    let ram = Arc::new(FlatMemory::new(BASE, SIZE).unwrap());
    ram.write_bytes(COMMANDS, &bytes).unwrap();
    let rust_count = Arc::new(AtomicU64::new(0));
    let rust = Gpu::deterministic(Arc::clone(&ram), Count(Arc::clone(&rust_count)), GpuConfig::default());
    let c_count = AtomicU64::new(0);
    let backend = pm4_backend {
        user_data: (&c_count as *const AtomicU64).cast_mut().cast(),
        queue_backend: Some(queue_backend),
        ..pm4_backend::default()
    };
    let memory = c_memory(&bytes);
    let c = c_gpu(&c_config(PM4_MODE_DETERMINISTIC), memory, Some(&backend));
    let (mut rust_rounds, mut c_rounds) = (Vec::new(), Vec::new());
    for round in 0..=ROUNDS {
        let start = Instant::now();
        rust.submit(QueueId::GRAPHICS, COMMANDS, size).unwrap();
        rust.run_until_idle().unwrap();
        let rust_time = start.elapsed();
        let start = Instant::now();
        // SAFETY: the output is NULL (no handle wanted).
        ok(unsafe { pm4core_capi::gpu::pm4_gpu_submit(c, 0, COMMANDS, size, std::ptr::null_mut()) }, "submit");
        ok(pm4core_capi::gpu::pm4_gpu_run_until_idle(c), "run");
        let c_time = start.elapsed();
        if round > 0 {
            rust_rounds.push(rust_time.as_secs_f64() * 1e9 / f64::from(DRAWS));
            c_rounds.push(c_time.as_secs_f64() * 1e9 / f64::from(DRAWS));
        }
    }
    let rounds = (ROUNDS + 1) as u64 * u64::from(DRAWS);
    assert_eq!(rust_count.load(Ordering::Relaxed), rounds);
    assert_eq!(c_count.load(Ordering::Relaxed), rounds);
    pm4core_capi::gpu::pm4_gpu_free(c);
    pm4core_capi::memory::pm4_memory_free(memory);
    (median(rust_rounds), median(c_rounds))
}

/// The size of `name` as `cargo build --release -p pm4core-capi` leaves it
/// (in the profile's directory); else the copy built with this example
/// (in `deps/`, with the example's dev-dependency features).
fn library_size(name: &str) -> Option<(std::path::PathBuf, u64)> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    [profile.join(name), profile.join("deps").join(name)]
        .into_iter()
        .find_map(|p| std::fs::metadata(&p).ok().map(|m| (p, m.len())))
}

/// The size of a copy of `path` with its debug information stripped, if
/// `strip` is there.
fn stripped_size(path: &Path) -> Option<u64> {
    let copy = std::env::temp_dir().join(format!("pm4-measure-{}", path.file_name()?.to_string_lossy()));
    std::fs::copy(path, &copy).ok()?;
    let status = std::process::Command::new("strip").arg("--strip-debug").arg(&copy).status().ok()?;
    let size = status.success().then(|| std::fs::metadata(&copy).ok().map(|m| m.len())).flatten();
    let _ = std::fs::remove_file(&copy);
    size
}

fn main() {
    let (rust, c, ratio) = submit_to_completion(SUBMISSIONS);
    println!("submit -> completion (threaded, 1 worker), medians of {SUBMIT_ROUNDS} rounds of {SUBMISSIONS}:");
    println!("  Rust API {rust:8.0} ns   C ABI {c:8.0} ns   ratio of medians {:.3}, median ratio of neighbouring rounds {ratio:.3}", c / rust);
    let (rust, c) = draw_callbacks();
    println!("draw callback (deterministic, {DRAWS} draws a run), median of {ROUNDS} runs, per draw:");
    println!("  Rust backend {rust:6.1} ns   C callback {c:6.1} ns   difference {:+.1} ns", c - rust);
    for name in ["libpm4core_capi.a", "libpm4core_capi.so"] {
        match library_size(name) {
            Some((path, size)) => {
                let stripped = stripped_size(&path)
                    .map_or(String::new(), |s| format!(", {:.1} MiB without debug information", s as f64 / 1048576.0));
                println!("{name}: {:.1} MiB{stripped} ({})", size as f64 / 1048576.0, path.display());
            }
            None => println!("{name}: not built (cargo build --release -p pm4core-capi)"),
        }
    }
}
