//! The layering of `ARCHITECTURE.md`, checked against the code: every
//! `crate::MODULE` path in a file of `src/NAME/` must name a module that the
//! map's "Who may use whom" table lets NAME use, or one of its listed debts.
//! The map is read from the file itself, so the two cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const MODULES: &[&str] = &[
    "sys", "event", "data", "model", "capture", "symbol", "analysis", "render", "lang", "cli",
];

/// The fenced blocks of `text`, in order.
fn fenced_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(Vec::new()),
            }
        } else if let Some(block) = current.as_mut() {
            block.push(line);
        }
    }
    blocks
}

/// Which modules each module may name, by the table.
type Allowed = BTreeMap<String, BTreeSet<String>>;
/// Uses against the table that are allowed for now: (from, to).
type Debts = BTreeSet<(String, String)>;

/// The table (`module: used used ...`) and the debts (`from -> to: why`).
fn read_map() -> (Allowed, Debts) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).expect("ARCHITECTURE.md is readable");
    let section = text
        .split("## Who may use whom")
        .nth(1)
        .expect("ARCHITECTURE.md has a 'Who may use whom' section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let blocks = fenced_blocks(section);
    assert!(
        blocks.len() >= 2,
        "the section holds the table and the debts"
    );
    let mut allowed = BTreeMap::new();
    for line in &blocks[0] {
        let (module, uses) = line
            .split_once(':')
            .expect("table lines are 'module: uses'");
        let uses = uses.split_whitespace().map(str::to_string).collect();
        allowed.insert(module.trim().to_string(), uses);
    }
    let mut debts = BTreeSet::new();
    for line in &blocks[1] {
        let (edge, _why) = line.split_once(':').expect("debt lines are 'a -> b: why'");
        let (from, to) = edge.split_once("->").expect("debt lines are 'a -> b: why'");
        debts.insert((from.trim().to_string(), to.trim().to_string()));
    }
    (allowed, debts)
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules named as `crate::NAME` in the code (comments skipped).
fn used_modules(text: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if MODULES.contains(&name.as_str()) {
                used.insert(name);
            }
        }
    }
    used
}

#[test]
fn code_follows_the_architecture_map() {
    let (allowed, debts) = read_map();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut violations = Vec::new();
    let mut debts_seen = BTreeSet::new();
    for module in MODULES {
        if *module == "cli" {
            continue; // the wiring may use everything
        }
        let uses = allowed
            .get(*module)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md's table has no line for {module}"));
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let single = src.join(format!("{module}.rs"));
        if single.is_file() {
            files.push(single);
        }
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source is readable");
            for used in used_modules(&text) {
                if used == *module || uses.contains(&used) {
                    continue;
                }
                let edge = (module.to_string(), used.clone());
                if debts.contains(&edge) {
                    debts_seen.insert(edge);
                    continue;
                }
                violations.push(format!(
                    "{} uses crate::{used}",
                    file.strip_prefix(&src).unwrap_or(&file).display()
                ));
            }
        }
    }
    for (from, to) in debts.difference(&debts_seen) {
        eprintln!("ARCHITECTURE.md: the debt {from} -> {to} is paid; remove it from the map");
    }
    assert!(
        violations.is_empty(),
        "uses against ARCHITECTURE.md's map (move the code, or change the map with a reason):\n{}",
        violations.join("\n")
    );
}

/// Issue 11's rule: a file in `src/` holds one concern, and no concern
/// needs more than 800 lines (split by concern, or move tests to a
/// `NAME_tests.rs` beside it).
#[test]
fn no_source_file_is_over_800_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).expect("source is readable");
            let lines = text.lines().count();
            (lines > 800).then(|| {
                format!(
                    "{} ({lines} lines)",
                    file.strip_prefix(&src).unwrap_or(file).display()
                )
            })
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "files in src/ over 800 lines: {long:?}");
}
