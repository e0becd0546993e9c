//! The assembler's manual, `docs/asm.md`, holds examples that work: every
//! `pm4` block assembles and replays without an error or a stall, a `log`
//! block after one is its replay's event log line for line, and a
//! `pm4 error` block fails with the message of the `text` block after it,
//! as `pm4 asm` writes it.

use std::path::Path;
use std::process::Command;

use pm4core::replay::{replay, ReplayOptions};

/// The fenced blocks of a Markdown text: (info string, body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(info)) => current = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => out.extend(current.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

fn manual() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/asm.md")).unwrap()
}

#[test]
fn every_example_of_the_manual_assembles_and_replays() {
    let blocks = blocks(&manual());
    let mut examples = 0;
    let mut logs = 0;
    for (i, (info, source)) in blocks.iter().enumerate() {
        if info != "pm4" {
            continue;
        }
        examples += 1;
        let trace =
            pm4core::asm::assemble_trace(source).unwrap_or_else(|e| panic!("example {examples}: {e}\n{source}"));
        let outcome = replay(&trace, &ReplayOptions { log: true, ..Default::default() });
        let s = &outcome.summary;
        assert!(s.errors.is_empty(), "example {examples}: {:?}\n{source}", s.errors);
        assert!(s.stalls.is_empty() && s.unknown_packets.is_empty(), "example {examples}\n{source}");
        assert!(s.packets.total > 0, "example {examples} runs nothing");
        if let Some((next, log)) = blocks.get(i + 1).filter(|(next, _)| next == "log") {
            assert_eq!(next, "log");
            logs += 1;
            let want: Vec<&str> = log.lines().collect();
            assert_eq!(outcome.log, want, "example {examples}'s log\n{source}");
        }
    }
    assert!(examples >= 6 && logs >= 4, "{examples} examples, {logs} logs");
}

#[test]
fn the_manual_error_example_fails_as_it_says() {
    let blocks = blocks(&manual());
    let at = blocks.iter().position(|(info, _)| info == "pm4 error").expect("an error example");
    let (source, (info, message)) = (&blocks[at].1, &blocks[at + 1]);
    assert_eq!(info, "text");
    let dir = std::env::temp_dir().join(format!("pm4-asm-manual-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("example.pm4"), source).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_pm4"))
        .args(["asm", "example.pm4", "-o", "example.pm4t"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&o.stderr), format!("pm4: {message}"));
}
