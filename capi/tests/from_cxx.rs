//! The C ABI from C and C++, built with the system compilers against the
//! libraries this crate builds (flags from `capi/pm4core-static.pc` and
//! `capi/pm4core.pc`): the header compiles as C99 and C++17 with every
//! warning an error; a C99 program calls every function once (against the
//! static and the shared library); the C++17 test program passes, plainly,
//! under AddressSanitizer and under valgrind's memcheck, and the trace it records from C++ replays
//! to the events its backend saw; the C++ twin of `examples/emulator.rs`
//! runs. A missing compiler, pkg-config or valgrind fails these tests:
//! they do not skip.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pm4core::replay::{replay, ReplayOptions};
use pm4core::trace::Trace;

/// Every warning, as an error.
const STRICT: &[&str] = &["-Wall", "-Wextra", "-Werror", "-pedantic"];

/// The directory holding the libraries this test was built with: cargo
/// builds the crate's static and shared libraries beside the test binary
/// (`target/<profile>/deps`).
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.parent().expect("the test binary's directory").to_path_buf()
}

fn capi_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh directory for one test's outputs.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn output(command: &mut Command, what: &str) -> Output {
    command.output().unwrap_or_else(|e| panic!("{what} could not be started ({e}); the C ABI's tests need it"))
}

/// `pkg-config --cflags --libs PACKAGE` over this repository's `.pc` files,
/// with `libdir` set to this build's directory.
fn pkg_config(package: &str) -> Vec<String> {
    let out = output(
        Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", capi_dir())
            .arg(format!("--define-variable=libdir={}", build_dir().display()))
            .args(["--cflags", "--libs", package]),
        "pkg-config",
    );
    assert!(out.status.success(), "pkg-config {package}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_owned).collect()
}

/// Compiles `sources` into `binary` with `compiler`, `flags` and the flags
/// of `package`; the library must be there (it is this crate's).
fn compile(compiler: &str, flags: &[&str], sources: &[PathBuf], package: &str, binary: &Path) {
    let library = build_dir().join("libpm4core_capi.a");
    assert!(library.exists(), "{} is missing: cargo builds it with the crate", library.display());
    let out = output(
        Command::new(compiler).args(flags).args(sources).arg("-o").arg(binary).args(pkg_config(package)),
        compiler,
    );
    assert!(
        out.status.success(),
        "{compiler} {sources:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `binary` with `args`; it must succeed. Returns its standard output.
fn run(binary: &Path, args: &[&Path], env: &[(&str, &str)]) -> String {
    let out = output(Command::new(binary).args(args).envs(env.iter().copied()), &binary.display().to_string());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(out.status.success(), "{} failed ({}):\n{stdout}\n{stderr}", binary.display(), out.status);
    stdout
}

/// The `N passed, M failed` line a C or C++ test prints: `N`, with `M` 0.
fn passed(stdout: &str, program: &str) -> u64 {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(program) && l.contains(" passed, "))
        .unwrap_or_else(|| panic!("{program} printed no result line:\n{stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |word: &str| words.iter().position(|w| w.trim_end_matches(',') == word).and_then(|i| i.checked_sub(1));
    let n: u64 = number("passed").and_then(|i| words[i].parse().ok()).expect("a count of passed checks");
    let failed: u64 = number("failed").and_then(|i| words[i].parse().ok()).expect("a count of failed checks");
    assert_eq!(failed, 0, "{line}");
    n
}

#[test]
fn the_header_compiles_as_c99_and_as_cxx17_with_every_warning_an_error() {
    let dir = scratch("header");
    let header = capi_dir().join("include/pm4core.h");
    for (compiler, language, standard) in [("gcc", "c", "-std=c99"), ("g++", "c++", "-std=c++17")] {
        let source = dir.join(format!("include.{language}"));
        std::fs::write(&source, "#include \"pm4core.h\"\nint main(void) { return PM4_STATUS_OK; }\n").unwrap();
        let out = output(
            Command::new(compiler)
                .args(STRICT)
                .args([standard, "-x", language, "-fsyntax-only", "-I"])
                .arg(header.parent().unwrap())
                .arg(&source),
            compiler,
        );
        assert!(out.status.success(), "{compiler} {standard}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// The functions the header declares.
fn header_functions() -> Vec<String> {
    let header = std::fs::read_to_string(capi_dir().join("include/pm4core.h")).unwrap();
    let mut names: Vec<String> = header
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with('#') && !l.starts_with('*') && !l.starts_with('/'))
        .filter_map(|l| l.split_once('(').map(|(before, _)| before))
        .filter_map(|before| before.rsplit([' ', '*']).next())
        .filter(|name| name.starts_with("pm4_"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_c99_program_names_every_function_of_the_header() {
    let functions = header_functions();
    assert!(functions.len() >= 72, "{functions:?}");
    let program = std::fs::read_to_string(capi_dir().join("tests/every_function.c")).unwrap();
    let missing: Vec<&String> = functions.iter().filter(|f| !program.contains(&format!("{f}("))).collect();
    assert!(missing.is_empty(), "tests/every_function.c does not call {missing:?}");
}

#[test]
fn a_c99_program_calls_every_function_against_the_static_and_the_shared_library() {
    let dir = scratch("every_function");
    let source = capi_dir().join("tests/every_function.c");
    let mut flags: Vec<&str> = STRICT.to_vec();
    flags.extend(["-std=c99", "-g", "-pthread"]);
    let static_binary = dir.join("every_function_static");
    compile("gcc", &flags, std::slice::from_ref(&source), "pm4core-static", &static_binary);
    let counted = passed(&run(&static_binary, &[&dir], &[]), "every function:");
    assert!(counted >= 60, "calls checked: {counted}");
    assert!(dir.join("every_function.pm4t").exists());
    // The shared library, found through the rpath its directory gives.
    let rpath = format!("-Wl,-rpath,{}", build_dir().display());
    flags.push(&rpath);
    let shared_binary = dir.join("every_function_shared");
    compile("gcc", &flags, &[source], "pm4core", &shared_binary);
    // cargo's LD_LIBRARY_PATH (which outranks the rpath) may name a
    // directory holding an older build of the library: this build's first.
    let library_path = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let library_path = format!("{}:{library_path}", build_dir().display());
    let env = [("LD_LIBRARY_PATH", library_path.as_str())];
    assert_eq!(passed(&run(&shared_binary, &[&dir], &env), "every function:"), counted);
}

/// Events of the kinds both logs hold, per queue, in order: the replay's
/// log numbers each line with its packet (`gfx #3 draw …`), the C++ log
/// does not.
fn events_per_queue<'a>(lines: impl Iterator<Item = &'a str>, numbered: bool) -> BTreeMap<String, Vec<String>> {
    let mut queues: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in lines {
        let mut words: Vec<&str> = line.split(' ').collect();
        if numbered && words.len() > 1 {
            words.remove(1);
        }
        if matches!(words.get(1), Some(&("draw" | "dispatch" | "fence"))) {
            queues.entry(words[0].to_owned()).or_default().push(words.join(" "));
        }
    }
    queues
}

#[test]
fn the_cxx_test_passes_and_the_trace_it_recorded_replays_to_the_same_events() {
    let dir = scratch("cxx");
    let binary = dir.join("capi_test");
    let mut flags: Vec<&str> = STRICT.to_vec();
    flags.extend(["-std=c++17", "-O1", "-g", "-pthread"]);
    compile("g++", &flags, &[capi_dir().join("tests/capi_test.cpp")], "pm4core-static", &binary);
    let counted = passed(&run(&binary, &[&dir], &[]), "capi_test:");
    assert!(counted > 200, "checks run: {counted}");

    // What `pm4 replay --log` does with the trace recorded from C++.
    let trace = Trace::from_bytes(std::fs::read(dir.join("recorded.pm4t")).expect("the recorded trace")).unwrap();
    let outcome = replay(&trace, &ReplayOptions { log: true, ..Default::default() });
    assert!(outcome.succeeded(), "{:?}", outcome.summary.errors);
    let seen = std::fs::read_to_string(dir.join("recorded.log")).expect("the C++ backend's log");
    let from_cxx = events_per_queue(seen.lines(), false);
    let replayed = events_per_queue(outcome.log.iter().map(String::as_str), true);
    assert_eq!(from_cxx.values().map(Vec::len).sum::<usize>(), 5, "{seen}");
    assert_eq!(replayed, from_cxx);
    assert_eq!(
        from_cxx["gfx"][0],
        "gfx draw DRAW_INDEX_AUTO count=3 instances=0 first=0 base_vertex=0 first_instance=0 prim=4"
    );
}

#[test]
fn the_cxx_test_passes_under_address_sanitizer() {
    let dir = scratch("cxx_asan");
    let binary = dir.join("capi_test_asan");
    let mut flags: Vec<&str> = STRICT.to_vec();
    flags.extend(["-std=c++17", "-O1", "-g", "-pthread", "-fsanitize=address", "-fno-omit-frame-pointer"]);
    compile("g++", &flags, &[capi_dir().join("tests/capi_test.cpp")], "pm4core-static", &binary);
    let stdout =
        run(&binary, &[&dir], &[("ASAN_OPTIONS", "detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1")]);
    assert!(passed(&stdout, "capi_test:") > 200);
}

#[test]
fn the_cxx_test_passes_under_valgrind_memcheck() {
    let dir = scratch("cxx_valgrind");
    let binary = dir.join("capi_test_valgrind");
    let mut flags: Vec<&str> = STRICT.to_vec();
    flags.extend(["-std=c++17", "-O1", "-g", "-pthread"]);
    compile("g++", &flags, &[capi_dir().join("tests/capi_test.cpp")], "pm4core-static", &binary);
    let out = output(
        Command::new("valgrind")
            .args(["--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite", "--fair-sched=yes"])
            .arg(&binary)
            .arg(&dir),
        "valgrind",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "under valgrind ({}):\n{stdout}\n{stderr}", out.status);
    assert!(stderr.contains("ERROR SUMMARY: 0 errors"), "{stderr}");
    assert!(passed(&stdout, "capi_test:") > 200);
}

#[test]
fn the_cxx_twin_of_the_emulator_example_runs() {
    let dir = scratch("example");
    let binary = dir.join("emulator");
    let mut flags: Vec<&str> = STRICT.to_vec();
    flags.extend(["-std=c++17", "-O2", "-pthread"]);
    let source = capi_dir().join("../examples/c/emulator.cpp");
    compile("g++", &flags, &[source], "pm4core-static", &binary);
    let stdout = run(&binary, &[], &[]);
    assert!(stdout.contains("totals:"), "{stdout}");
}
