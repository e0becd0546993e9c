//! Docs that point where things are: every repository path cited in the
//! Markdown files and in the doc comments of the sources (`src/...`,
//! `docs/...`, `tests/...`, `traces/...`, ...) exists, relative to the
//! repository root; and nothing cites a path outside the repository.

use std::path::{Path, PathBuf};

const TOP_LEVEL: [&str; 9] = ["src", "docs", "tests", "traces", "benches", "examples", "fuzz", "xtask", "registers"];

/// Paths cited from other projects' trees (where the register files came from).
const OTHER_REPOSITORIES: [&str; 1] = ["src/amd/"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Files under `dir` (recursively) whose name ends with one of `suffixes`,
/// skipping build output and fuzz corpora.
fn files(dir: &Path, suffixes: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | "corpus" | "artifacts") {
                files(&path, suffixes, out);
            }
        } else if suffixes.iter().any(|s| name.ends_with(s)) {
            out.push(path);
        }
    }
}

/// The repository paths cited in `text`: words that start with a
/// top-level directory and a slash.
fn cited(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for top in TOP_LEVEL {
        let needle = format!("{top}/");
        let mut from = 0;
        while let Some(at) = text[from..].find(&needle) {
            let start = from + at;
            from = start + needle.len();
            // A whole word: not part of a longer path or name.
            if start > 0 {
                let before = bytes[start - 1];
                if before.is_ascii_alphanumeric() || matches!(before, b'/' | b'_' | b'-' | b'.' | b':' | b'$') {
                    continue;
                }
            }
            let end = text[start..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
                .map_or(text.len(), |n| start + n);
            // A glob (`traces/radv-*.pm4t`) names no one path.
            if text[end..].starts_with('*') {
                continue;
            }
            let path = text[start..end].trim_end_matches(['.', '/']);
            if path.len() > top.len() && !OTHER_REPOSITORIES.iter().any(|p| path.starts_with(p)) {
                out.push(path.to_owned());
            }
        }
    }
    out.sort();
    out
}

/// The doc-comment lines of a Rust source.
fn doc_comments(source: &str) -> String {
    source
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("//!") || l.starts_with("///"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_cited_repository_path_exists() {
    let mut sources = Vec::new();
    files(root(), &[".md"], &mut sources);
    let mut rust = Vec::new();
    for dir in ["src", "tests", "benches", "examples", "xtask", "fuzz"] {
        files(&root().join(dir), &[".rs"], &mut rust);
    }
    assert!(sources.len() >= 4 && rust.len() >= 50, "{} Markdown and {} Rust files", sources.len(), rust.len());
    let mut missing = Vec::new();
    let mut checked = 0;
    for (path, is_rust) in sources.iter().map(|p| (p, false)).chain(rust.iter().map(|p| (p, true))) {
        let text = std::fs::read_to_string(path).unwrap();
        let text = if is_rust { doc_comments(&text) } else { text };
        for cite in cited(&text) {
            checked += 1;
            if !root().join(&cite).exists() {
                missing.push(format!("{}: {cite}", path.strip_prefix(root()).unwrap_or(path).display()));
            }
        }
        if text.contains("../shared/") {
            missing.push(format!("{}: cites ../shared/, outside the repository", path.display()));
        }
    }
    assert!(checked > 50, "only {checked} citations found");
    assert!(missing.is_empty(), "cited paths that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn citations_are_found_as_words() {
    assert_eq!(cited("see `docs/trace-format.md`, and src/packet/."), ["docs/trace-format.md", "src/packet"]);
    assert!(cited("every `traces/radv-*.pm4t`").is_empty());
    assert!(cited("a/src/x.rs and mysrc/x").is_empty());
}
