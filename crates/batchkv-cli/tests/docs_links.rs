//! The documentation's relative links resolve: every `[text](target)` in
//! `README.md`, `CHANGELOG.md`, `fuzz/README.md` and the Markdown files
//! under `docs/` names a file or directory that exists, and a `#anchor`
//! into a Markdown file names one of its headings (GitHub's slugs). Also:
//! every line of the README's library example is a line of
//! `examples/basic.rs`, in the same order, and `cargo test` compiles and
//! runs that example, so the README cannot show code that no longer builds.
//! And every dated measurement log in `docs/perf/history/` is listed in the
//! index, `docs/perf/README.md`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails by panicking"
)]

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root (this crate lives in `crates/batchkv-cli`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Markdown files whose links are checked, relative to `root`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![
        PathBuf::from("README.md"),
        PathBuf::from("CHANGELOG.md"),
        PathBuf::from("fuzz/README.md"),
    ];
    let mut dirs = vec![PathBuf::from("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(root.join(&dir)).expect("read docs/") {
            let name = entry.expect("docs/ entry").file_name();
            let rel = dir.join(&name);
            if root.join(&rel).is_dir() {
                dirs.push(rel);
            } else if rel.extension().is_some_and(|e| e == "md") {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// The lines of `text` outside fenced code blocks, with inline code spans
/// removed (links and headings inside code are not links or headings).
fn prose_lines(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        // Drop `code spans`: every odd-numbered backtick-delimited piece.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, piece)| piece)
            .collect::<Vec<_>>()
            .join("");
        out.push(prose);
    }
    out
}

/// Every link target (`](target)`) in `text`, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let Some(end) = rest.find(')') else { break };
            out.push(rest[..end].trim().to_string());
            rest = &rest[end + 1..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lowercase, punctuation other than `-`
/// and `_` dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of every heading of a Markdown text (repeated headings get
/// `-1`, `-2`, … as on GitHub).
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if in_fence || hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The broken links of the document `doc` (relative to `root`), one
/// message each.
fn broken_links(root: &Path, doc: &Path) -> Vec<String> {
    let text = fs::read_to_string(root.join(doc)).expect("read document");
    let dir = doc.parent().unwrap_or(Path::new(""));
    let mut broken = Vec::new();
    for target in link_targets(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let file = if path.is_empty() {
            doc.to_path_buf()
        } else {
            dir.join(path)
        };
        let full = root.join(&file);
        if !full.exists() {
            broken.push(format!("{}: {target}: no such file", doc.display()));
            continue;
        }
        if anchor.is_empty() || full.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let headings = anchors(&fs::read_to_string(&full).expect("read link target"));
        if !headings.contains(anchor) {
            broken.push(format!("{}: {target}: no such heading", doc.display()));
        }
    }
    broken
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = root();
    let docs = documents(&root);
    assert!(docs.len() > 10, "found only {docs:?}");
    let broken: Vec<String> = docs.iter().flat_map(|d| broken_links(&root, d)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_checker_reports_a_missing_file_and_a_missing_heading() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir(dir.path().join("docs")).expect("mkdir");
    fs::write(
        dir.path().join("docs/b.md"),
        "# Title\n## The `x` (2026-11-24)\n",
    )
    .expect("write");
    fs::write(
        dir.path().join("docs/a.md"),
        "[ok](b.md#the-x-2026-11-24) [self](#only-here) [web](https://x.y/z)\n\
         `[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n\
         [gone](missing.md) [bad anchor](b.md#nope)\n# Only here\n",
    )
    .expect("write");
    let broken = broken_links(dir.path(), Path::new("docs/a.md"));
    assert_eq!(
        broken,
        vec![
            "docs/a.md: missing.md: no such file",
            "docs/a.md: b.md#nope: no such heading",
        ]
    );
}

#[test]
fn the_readme_library_example_is_the_code_of_examples_basic() {
    let root = root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README");
    let example =
        fs::read_to_string(root.join("crates/batchkv/examples/basic.rs")).expect("basic.rs");
    let block = readme
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a ```rust block in the README");
    // Each non-empty line of the block, in order, among the example's lines.
    let mut code = example.lines().map(str::trim);
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            code.any(|c| c == line),
            "README line {line:?} is not in examples/basic.rs (in this order)"
        );
    }
}

#[test]
fn every_measurement_log_is_listed_in_the_perf_index() {
    let root = root();
    let index = fs::read_to_string(root.join("docs/perf/README.md")).expect("docs/perf/README.md");
    let listed: HashSet<String> = link_targets(&index).into_iter().collect();
    let mut missing = Vec::new();
    for entry in fs::read_dir(root.join("docs/perf/history")).expect("docs/perf/history") {
        let name = entry.expect("history entry").file_name();
        let target = format!("history/{}", name.to_string_lossy());
        if !listed.contains(&target) {
            missing.push(target);
        }
    }
    assert!(
        missing.is_empty(),
        "not listed in docs/perf/README.md: {missing:?}"
    );
}
