//! The examples a new user runs first behave: `examples/smoke.rs` says how to
//! use it without arguments and names a file that is not a trace (exit 2)
//! instead of printing nothing or panicking. `cargo test` builds the
//! examples beside the `pm4` binary before it runs the tests.

use std::path::PathBuf;
use std::process::{Command, Output};

fn smoke(args: &[&str]) -> Output {
    let pm4 = PathBuf::from(env!("CARGO_BIN_EXE_pm4"));
    let mut path = pm4.parent().unwrap().join("examples").join("smoke");
    path.set_extension(std::env::consts::EXE_EXTENSION);
    assert!(
        path.exists(),
        "{} is not built: run `cargo test` (it builds the examples) or `cargo build --example smoke`",
        path.display()
    );
    Command::new(path).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap()
}

#[test]
fn smoke_without_a_trace_prints_its_usage() {
    let o = smoke(&[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("usage: cargo run --example smoke -- TRACE...\n"));
    assert!(o.stdout.is_empty());
}

#[test]
fn smoke_names_a_missing_file_and_replays_a_trace() {
    let o = smoke(&["/nonexistent/trace.pm4t", "traces/radv-draw.pm4t"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.starts_with("smoke: /nonexistent/trace.pm4t: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "traces/radv-draw.pm4t: packets=626 draws=2 dispatches=0 fences=2 errors=0 unknown=0 not_emulated={}\n"
    );
}
