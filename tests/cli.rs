//! The `pm4` command: exit codes 0 (done), 1 (replay error), 2 (bad input
//! or arguments), never a panic, over good and hostile inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pm4core::trace::TraceWriter;

fn pm4(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pm4")).args(args).output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pm4-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn valid_trace() -> Vec<u8> {
    std::fs::read(root().join("traces/corpus/ibs.pm4t")).unwrap()
}

/// Hostile files: each is not a valid trace for a different reason.
fn hostile() -> Vec<(&'static str, Vec<u8>)> {
    let good = valid_trace();
    let mut bad_crc = good.clone();
    let last = bad_crc.len() - 20;
    bad_crc[last] ^= 0xFF;
    let mut bad_magic = good.clone();
    bad_magic[0] = b'X';
    let truncated = good[..good.len() / 2].to_vec();
    let mut overlapping = TraceWriter::new();
    overlapping.zero(0x1000, 0x100).unwrap();
    let overlapping = {
        // The writer refuses overlaps: build one by hand after a valid head.
        let mut bytes = overlapping.finish();
        bytes.truncate(bytes.len() - 16); // drop END
        let mut chunk = b"ZERO".to_vec();
        chunk.extend_from_slice(&16u32.to_le_bytes());
        let mut payload = 0x1080u64.to_le_bytes().to_vec();
        payload.extend_from_slice(&0x100u64.to_le_bytes());
        chunk.extend_from_slice(&payload);
        let mut crc = crc32fast::Hasher::new();
        crc.update(b"ZERO");
        crc.update(&payload);
        chunk.extend_from_slice(&crc.finalize().to_le_bytes());
        bytes.extend_from_slice(&chunk);
        bytes
    };
    let mut unknown_critical = good[..16].to_vec();
    unknown_critical.extend_from_slice(b"ABCD");
    unknown_critical.extend_from_slice(&0u32.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(b"ABCD");
    unknown_critical.extend_from_slice(&crc.finalize().to_le_bytes());
    vec![
        ("empty", Vec::new()),
        ("bad_crc", bad_crc),
        ("bad_magic", bad_magic),
        ("truncated", truncated),
        ("overlapping", overlapping),
        ("unknown_critical", unknown_critical),
        ("random", (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()),
    ]
}

#[test]
fn replay_of_a_bundled_trace_succeeds() {
    let o = pm4(&["replay", root().join("traces/radv-draw.pm4t").to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["draws"], 2);
    assert_eq!(json["packets"]["total"], 626);
    assert_eq!(json["errors"], serde_json::json!([]));
    assert_eq!(json["packets"]["by_opcode"]["INDIRECT_BUFFER"], 1);
}

#[test]
fn replay_errors_exit_1_and_name_the_fault() {
    // A submission whose indirect buffer points at unmapped memory.
    let source = ".info gpu=gfx10.3\nmain: .mem 0x1000\n    ib 0xdead0000, 16\n.end\n.submit gfx main\n";
    let trace = temp("unmapped.pm4t", &pm4core::asm::assemble(source).unwrap());
    let o = pm4(&["replay", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 1);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("0xdead0000"), "{stderr}");
}

#[test]
fn corrupted_traces_exit_2_naming_what_and_where() {
    for (name, bytes) in hostile() {
        let path = temp(&format!("{name}.pm4t"), &bytes);
        let o = pm4(&["replay", path.to_str().unwrap()]);
        assert_eq!(code(&o), 2, "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let stderr = String::from_utf8_lossy(&o.stderr);
        match name {
            "bad_crc" => assert!(stderr.contains("CRC"), "{stderr}"),
            "unknown_critical" => assert!(stderr.contains("ABCD"), "{stderr}"),
            "overlapping" => assert!(stderr.contains("overlap"), "{stderr}"),
            _ => assert!(stderr.starts_with("pm4: "), "{stderr}"),
        }
    }
}

#[test]
fn every_subcommand_exits_0_1_or_2_on_hostile_input() {
    for (name, bytes) in hostile() {
        let path = temp(&format!("{name}.bin"), &bytes);
        let p = path.to_str().unwrap();
        let out = temp("out.pm4t", b"");
        let o = out.to_str().unwrap();
        for args in [
            vec!["replay", p],
            vec!["replay", p, "--json"],
            vec!["disasm", p],
            vec!["disasm", "--raw", p],
            vec!["disasm", "--raw", p, "--json"],
            vec!["disasm", "--raw", p, "--source"],
            vec!["asm", p, "-o", o],
            vec!["inspect", p],
            vec!["inspect", p, "--json"],
            vec!["import", "raw", p, "-o", o],
            vec!["import", "kycap", p, "-o", o],
        ] {
            let result = pm4(&args);
            let c = code(&result);
            assert!((0..=2).contains(&c), "{args:?} on {name}: exit {c}\n{}", String::from_utf8_lossy(&result.stderr));
        }
    }
}

#[test]
fn bad_arguments_exit_2() {
    assert_eq!(code(&pm4(&["replay", "/nonexistent/trace.pm4t"])), 2);
    assert_eq!(code(&pm4(&["replay", "--mem", "nonsense"])), 2);
    assert_eq!(code(&pm4(&["replay", "--reg", "NO_SUCH_REGISTER"])), 2);
    assert_eq!(code(&pm4(&["frobnicate"])), 2);
    assert_eq!(code(&pm4(&["disasm"])), 2);
}

#[test]
fn asm_then_disasm_source_round_trips() {
    let source = root().join("traces/corpus/queues.pm4");
    let built = temp("queues.pm4t", b"");
    assert_eq!(code(&pm4(&["asm", source.to_str().unwrap(), "-o", built.to_str().unwrap()])), 0);
    let listing = pm4(&["disasm", built.to_str().unwrap(), "--source"]);
    assert_eq!(code(&listing), 0);
    let again_src = temp("again.pm4", &listing.stdout);
    let again = temp("again.pm4t", b"");
    assert_eq!(code(&pm4(&["asm", again_src.to_str().unwrap(), "-o", again.to_str().unwrap()])), 0);
    assert_eq!(std::fs::read(built).unwrap(), std::fs::read(again).unwrap());
}

#[test]
fn import_raw_then_replay_reports_unmapped_ibs_and_goes_on() {
    // A raw dump: an IB to memory the dump does not hold, then a NOP.
    let words: [u32; 5] = [0xC002_3F00, 0x0000_1000, 0x0000_0000, 16, 0xFFFF_1000];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let raw = temp("dump.bin", &bytes);
    let trace = temp("dump.pm4t", b"");
    let o = pm4(&["import", "raw", raw.to_str().unwrap(), "-o", trace.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let o = pm4(&["replay", trace.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 1);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["errors"][0]["kind"], "memory");
    assert!(json["errors"][0]["message"].as_str().unwrap().contains("0x1000"));
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn corpus(name: &str) -> String {
    root().join("traces/corpus").join(name).to_string_lossy().into_owned()
}

/// Splits a README command line into words (single quotes group).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[test]
fn every_readme_example_prints_what_the_readme_shows() {
    // Each ``` block of the README whose first line is `$ pm4 ...` is run
    // from the repository root; `| head -N` and `| grep -v WORD` filter the
    // output as a shell would.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut examples = 0;
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("```") {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| !l.trim_start().starts_with("```")).collect();
        let Some(command) = block.first().and_then(|l| l.strip_prefix("$ pm4 ")) else { continue };
        examples += 1;
        let mut stages = command.split(" | ");
        let args = words(stages.next().unwrap());
        let o = Command::new(env!("CARGO_BIN_EXE_pm4")).args(&args).current_dir(root()).output().unwrap();
        assert_eq!(code(&o), 0, "{command}: {}", stderr(&o));
        let mut out: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
        for stage in stages {
            match words(stage).as_slice() {
                [head, n] if head == "head" => out.truncate(n.trim_start_matches('-').parse().unwrap()),
                [grep, v, word] if grep == "grep" && v == "-v" => out.retain(|l| !l.contains(word.as_str())),
                _ => panic!("{command}: the test knows no `{stage}`"),
            }
        }
        assert_eq!(out, block[1..], "{command}");
    }
    assert!(examples >= 3, "{examples} README examples");
}

#[test]
fn the_readme_lists_the_ci_steps_the_script_runs() {
    let script = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let steps: Vec<&str> =
        script.lines().filter(|l| l.starts_with("cargo ") || l.starts_with("RUSTDOCFLAGS")).collect();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let from = readme.find("`bash .ci/run` is what CI runs").unwrap();
    let listed: Vec<&str> = readme[from..]
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("```sh"))
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with("```"))
        .map(str::trim)
        .collect();
    assert_eq!(listed, steps);
}

#[test]
fn work_limits_apply_to_the_whole_replay_in_every_command() {
    // queues.pm4t: 11 packets in 3 submissions of at most 4 each.
    let limit = "limit reached: more than 4 packets run over all queues and submissions \
                 (Limits::max_packets; raise it with --max-packets)";
    for command in ["replay", "inspect", "stats", "state"] {
        let mut args = vec![command, &*corpus("queues.pm4t")].into_iter().map(String::from).collect::<Vec<_>>();
        if command == "state" {
            args.extend(["--at".into(), "#3".into(), "--queue".into(), "comp3.1".into()]);
        }
        args.extend(["--max-packets".into(), "4".into()]);
        let o = pm4(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(code(&o), 1, "{command}: {}", stderr(&o));
        assert!(stderr(&o).contains(limit) || stdout(&o).contains(limit), "{command}: {}", stderr(&o));
    }
    // stats stops at the packet past the limit: 4 packets (and a dispatch,
    // which counts one more) observed, not the stream's 11.
    let o = pm4(&["stats", &corpus("queues.pm4t"), "--max-packets", "4", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let packets: u64 = json["queues"].as_array().unwrap().iter().map(|q| q["packets"].as_u64().unwrap()).sum();
    assert_eq!(packets, 4);
    // state under a limit of 10 stops at packet 10 (the submission's budget
    // is the replay's) and exits 1, naming the limit.
    let o = pm4(&["state", &corpus("registers.pm4t"), "--at", "#15", "--max-packets", "10"]);
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).starts_with("pm4: --at #15: gfx ran 10 packets: there is no packet #15"), "{}", stderr(&o));
    assert!(stderr(&o).contains("more than 10 packets"), "{}", stderr(&o));
}

#[test]
fn a_packet_limit_of_zero_runs_nothing_and_says_so() {
    let o = pm4(&["replay", &corpus("queues.pm4t"), "--max-packets", "0", "--json"]);
    assert_eq!(code(&o), 1);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((json["packets"]["total"].as_u64(), json["waits"].as_u64()), (Some(0), Some(0)));
    assert_eq!(
        json["errors"],
        serde_json::json!([{
            "kind": "limit",
            "message": "limit reached: more than 0 packets run over all queues and submissions \
                        (Limits::max_packets; raise it with --max-packets): no submission ran"
        }])
    );
    // A submission stopped by its budget says so as the limit, not as a cycle.
    let o = pm4(&["replay", &corpus("ibs.pm4t"), "--max-packets", "2"]);
    assert_eq!(code(&o), 1);
    assert!(!stderr(&o).contains("cycle"), "{}", stderr(&o));
    assert!(stderr(&o).contains("more than 2 packets run over all queues and submissions"), "{}", stderr(&o));
}

#[test]
fn options_are_checked_and_named_alike_across_commands() {
    let raw = temp("four.bin", &[0x00, 0x10, 0xff, 0xff].repeat(4));
    let raw = raw.to_str().unwrap();
    let out = temp("four.pm4t", b"");
    let out = out.to_str().unwrap();
    let o = pm4(&["import", "raw", raw, "-o", out, "--gpu", "banana"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("unknown GPU family \"banana\""), "{}", stderr(&o));
    let o = pm4(&["import", "raw", raw, "-o", out, "--queue", "comp7.0"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("expected gfx, compP.Q (pipe 0-6, queue 0-7) or a number 0..=56"), "{}", stderr(&o));
    // The raw file's address: `--address` in both commands, the same default.
    assert_eq!(code(&pm4(&["import", "raw", raw, "-o", out, "--gpu", "gfx7"])), 0);
    let imported = pm4(&["disasm", out]);
    let listed = pm4(&["disasm", "--raw", raw, "--gpu", "gfx7"]);
    let body = |o: &Output| stdout(o).lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(body(&listed), body(&imported));
    assert!(stdout(&listed).contains("0xfff000000000"), "{}", stdout(&listed));
    let at = pm4(&["disasm", "--raw", raw, "--address", "0x1000"]);
    assert_eq!(stdout(&at), stdout(&pm4(&["disasm", "--raw", raw, "--base", "0x1000"])));
    assert!(stdout(&at).contains("0x000000001000"), "{}", stdout(&at));
    // Options that would do nothing are not offered.
    for command in [&["stats"][..], &["state", "--at", "#0"]] {
        for option in ["--max-events", "--max-programs"] {
            let queues = corpus("queues.pm4t");
            let o = pm4(&[command, &[queues.as_str(), option, "5"]].concat());
            assert_eq!(code(&o), 2, "{command:?} {option}");
            assert!(stderr(&o).contains(&format!("unexpected argument '{option}'")), "{}", stderr(&o));
        }
    }
    // Register names in any case, and the nearest name for a slip.
    let o = pm4(&["replay", &corpus("registers.pm4t"), "--reg", "db_render_control"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("register db_render_control = 0x00000044"), "{}", stdout(&o));
    let o = pm4(&["replay", &corpus("registers.pm4t"), "--reg", "DB_RENDER_CONTRL"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("(did you mean DB_RENDER_CONTROL?)"), "{}", stderr(&o));
}

#[test]
fn disasm_counts_the_packets_it_lists_with_a_problem() {
    // A packet that claims more dwords than the file holds.
    let words: [u32; 3] = [0xC00A_1000, 0, 0];
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let raw = temp("short.bin", &bytes);
    let o = pm4(&["disasm", "--raw", raw.to_str().unwrap()]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("! truncated: the packet needs 12 dwords, the buffer has 3 left"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("; 1 packet in 1 submission, 0 diagnostics, 1 packet with a problem\n"),
        "{}",
        stdout(&o)
    );
    let o = pm4(&["disasm", "--raw", raw.to_str().unwrap(), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((json["problems"].as_u64(), json["complete"].as_bool()), (Some(1), Some(true)));
}

#[test]
fn every_json_record_names_its_queue_by_number_and_name() {
    // A stall (comp0.0 waits for a label nothing writes), an unknown packet
    // and a skipped indirect buffer, on compute queue 0.0.
    let source = ".info gpu=gfx10.3\n.zero 0x200000, 0x100\nmain: .mem 0x1000\n    PKT3 0x01 0\n    \
                  ib 0xdead0000, 16\n    WAIT_REG_MEM function=eq addr=0x200000 ref=1\n.end\n.submit comp0.0 main\n";
    let trace = temp("queues.pm4t", &pm4core::asm::assemble(source).unwrap());
    let trace = trace.to_str().unwrap();
    let o = pm4(&["replay", trace, "--json", "--skip-unmapped-ibs"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let records = [&json["queues"][0], &json["unknown_packets"][0], &json["skipped_ibs"][0], &json["stalls"][0]];
    for record in records {
        assert_eq!(
            (&record["queue"], &record["name"]),
            (&serde_json::json!(1), &serde_json::json!("comp0.0")),
            "{json}"
        );
    }
    let o = pm4(&["stats", trace, "--json", "--skip-unmapped-ibs"]);
    assert_eq!(code(&o), 2, "stats takes no --skip-unmapped-ibs");
    let o = pm4(&["stats", &corpus("queues.pm4t"), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (&json["queues"][1]["queue"], &json["queues"][1]["name"]),
        (&serde_json::json!(1), &serde_json::json!("comp0.0"))
    );
    let o = pm4(&["state", &corpus("queues.pm4t"), "--at", "#1", "--queue", "comp3.1", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((&json["queue"], &json["name"]), (&serde_json::json!(26), &serde_json::json!("comp3.1")));
}

#[test]
fn replay_without_a_file_runs_the_built_in_capture_from_anywhere() {
    let elsewhere = std::env::temp_dir();
    let o = Command::new(env!("CARGO_BIN_EXE_pm4")).arg("replay").current_dir(&elsewhere).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("gpu gfx10.3: 2 submissions, 2216 packets\n"), "{}", stdout(&o));
}

#[test]
fn replay_on_a_threaded_gpu_prints_the_deterministic_summary() {
    let deterministic = pm4(&["replay", &corpus("queues.pm4t"), "--mem", "0x200100:16"]);
    for workers in ["1", "3"] {
        let threaded = pm4(&["replay", &corpus("queues.pm4t"), "--mem", "0x200100:16", "--workers", workers]);
        assert_eq!(code(&threaded), 0, "{}", stderr(&threaded));
        // `waits` may differ (how the queues interleave): every other line is the same.
        let lines =
            |o: &Output| stdout(o).lines().filter(|l| !l.starts_with("draws ")).map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(lines(&threaded), lines(&deterministic), "{workers} workers");
    }
    assert_eq!(code(&pm4(&["replay", &corpus("queues.pm4t"), "--workers", "0"])), 2);
}

#[test]
fn errors_say_where_and_what_would_help() {
    // The assembler's errors as compilers write them.
    let source = temp("bad.pm4", b".mem 0x1000\n    .dw missing\n.end\n");
    let out = temp("bad.pm4t", b"");
    let o = pm4(&["asm", source.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert_eq!(stderr(&o), format!("pm4: {}:2:9: undefined name `missing`\n", source.display()));
    let source = temp("queue.pm4", b"main: .mem 0x1000\n    NOP\n.end\n.submit comp7.0 main\n");
    let o = pm4(&["asm", source.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(
        stderr(&o),
        format!(
            "pm4: {}:4:9: bad queue 'comp7.0': expected gfx, compP.Q (pipe 0-6, queue 0-7) or a number 0..=56\n",
            source.display()
        )
    );
    // An invalid PM4_LOG is said, and the command goes on.
    let o = Command::new(env!("CARGO_BIN_EXE_pm4"))
        .args(["replay", &corpus("ibs.pm4t")])
        .env("PM4_LOG", "debug=x=y")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).starts_with("pm4: PM4_LOG='debug=x=y' is not a filter ("), "{}", stderr(&o));
}

#[test]
fn disasm_source_names_what_the_assembler_names() {
    let o = pm4(&["disasm", &corpus("queues.pm4t"), "--source"]);
    let text = stdout(&o);
    assert!(text.starts_with("; PM4 disassembly as assembler source: `pm4 asm FILE -o TRACE` turns it back"), "{text}");
    assert!(text.contains("WRITE_DATA dst=memory addr=0x200100"), "{text}");
    assert!(text.contains("data_sel=data32"), "{text}");
    assert!(!text.contains("dst=5"), "{text}");
}
