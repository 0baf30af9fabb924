//! Folded stack text (`comm;root;...;leaf count`), byte for byte what
//! `perf script | inferno-collapse-perf` prints for the same file.
//!
//! Frame names follow inferno's collapse rules: the comm with blanks turned
//! into `_`; a symbol's parameter list cut (`f(int)` → `f`) and `;` turned
//! into `:`; an unresolved frame named `[binary base name]`, or `[unknown]`
//! when even the binary is unknown. With `annotate_kernel`, kernel frames
//! get inferno's `_[k]` suffix, which flame graph palettes colour apart.
//! Lines are sorted, as inferno sorts them. Names are built once per frame
//! and reused for every stack holding it.

use std::io::{self, Write};

use crate::analysis::folded::FoldedStacks;
use crate::analysis::sample::{Frame, FrameId, FrameKind, FrameTable};

/// How frames are named in folded output.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FoldedOptions {
    /// Suffix kernel frames with `_[k]` (default off, as in
    /// `inferno-collapse-perf`; flame graphs turn it on).
    pub(crate) annotate_kernel: bool,
}

/// inferno's `tidy_generic`: `;` → `:`, drop a top-level parameter list
/// (but keep Go's `pkg.(*T).M` and C++'s `(anonymous namespace)`).
pub(crate) fn tidy_name(name: &str) -> String {
    let func = name.replace(';', ":");
    let mut depth = 0i32;
    let mut last_dot: Option<usize> = None;
    let mut cut = func.len();
    for (idx, c) in func.char_indices() {
        match c {
            '<' | '{' | '[' => depth += 1,
            '>' | '}' | ']' | ')' => depth -= 1,
            '(' => {
                if depth == 0 {
                    let go = last_dot == Some(idx);
                    let anon = func[idx..].starts_with("(anonymous namespace)");
                    if !go && !anon {
                        cut = idx;
                        break;
                    }
                }
                depth += 1;
            }
            '.' => last_dot = Some(idx + 1),
            _ => {}
        }
    }
    let mut func = func;
    func.truncate(cut);
    func
}

/// The folded name of one frame.
pub(crate) fn frame_name(frame: &Frame, options: FoldedOptions) -> String {
    let mut name = match frame.sym.as_deref() {
        Some(sym) => tidy_name(sym),
        None if &*frame.dso == "[unknown]" => "[unknown]".to_string(),
        None => {
            let dso = &*frame.dso;
            let base = dso.rsplit('/').next().unwrap_or(dso);
            tidy_name(&format!("[{base}]"))
        }
    };
    if options.annotate_kernel && frame.kind == FrameKind::Kernel {
        name.push_str("_[k]");
    }
    name
}

/// Names of every frame in the table, indexed by `FrameId`.
fn frame_names(frames: &FrameTable, options: FoldedOptions) -> Vec<String> {
    (0..frames.len())
        .map(|i| frame_name(frames.get(FrameId(i as u32)), options))
        .collect()
}

/// The folded lines (without newlines), sorted.
pub(crate) fn folded_lines(
    folded: &FoldedStacks,
    frames: &FrameTable,
    options: FoldedOptions,
) -> Vec<String> {
    use crate::analysis::hash::FxHashMap;
    // Distinct FrameId stacks can still fold to one name path (one name in
    // two binaries, or two frames tidied to one name): merge them, on
    // interned name ids so that deep stacks hash integers, not text.
    let mut ids: FxHashMap<String, u32> = FxHashMap::default();
    let mut texts: Vec<String> = Vec::new();
    let mut intern = |text: String| -> u32 {
        let next = texts.len() as u32;
        *ids.entry(text).or_insert_with_key(|t| {
            texts.push(t.clone());
            next
        })
    };
    let frame_ids: Vec<u32> = frame_names(frames, options)
        .into_iter()
        .map(&mut intern)
        .collect();
    let unknown = intern("[unknown]".to_string());
    let no_comm = intern(String::new());
    let comm_ids: Vec<u32> = folded
        .comms
        .iter()
        .map(|c| intern(c.replace(' ', "_")))
        .collect();
    let mut merged: FxHashMap<Vec<u32>, u64> = FxHashMap::default();
    let mut key = Vec::new();
    for stack in &folded.stacks {
        key.clear();
        key.push(
            comm_ids
                .get(stack.comm as usize)
                .copied()
                .unwrap_or(no_comm),
        );
        key.extend(
            stack
                .frames
                .iter()
                .map(|f| frame_ids.get(f.0 as usize).copied().unwrap_or(unknown)),
        );
        match merged.get_mut(key.as_slice()) {
            Some(count) => *count += stack.period,
            None => {
                merged.insert(key.clone(), stack.period);
            }
        }
    }
    let text = |id: u32| texts.get(id as usize).map_or("", String::as_str);
    let mut lines: Vec<String> = merged
        .into_iter()
        .map(|(key, count)| {
            let mut line = String::new();
            for (i, &id) in key.iter().enumerate() {
                if i > 0 {
                    line.push(';');
                }
                line.push_str(text(id));
            }
            line.push(' ');
            line.push_str(&count.to_string());
            line
        })
        .collect();
    lines.sort_unstable();
    lines
}

/// Writes folded lines, one per distinct stack.
pub(crate) fn write_folded(
    w: &mut impl Write,
    folded: &FoldedStacks,
    frames: &FrameTable,
    options: FoldedOptions,
) -> io::Result<()> {
    for line in folded_lines(folded, frames, options) {
        writeln!(w, "{line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::folded::FoldOptions;
    use crate::analysis::testing::{Builder, frame_of};

    #[test]
    fn names_follow_inferno() {
        let plain = FoldedOptions::default();
        assert_eq!(tidy_name("ns::f(int, char)"), "ns::f");
        assert_eq!(
            tidy_name("std::vector<int>::push(int const&)"),
            "std::vector<int>::push"
        );
        assert_eq!(tidy_name("net/http.(*Client).Do"), "net/http.(*Client).Do");
        assert_eq!(tidy_name("a;b"), "a:b");
        assert_eq!(frame_name(&frame_of("?"), plain), "[app]");
        assert_eq!(frame_name(&frame_of("k:schedule"), plain), "schedule");
        let annotated = FoldedOptions {
            annotate_kernel: true,
        };
        assert_eq!(
            frame_name(&frame_of("k:schedule"), annotated),
            "schedule_[k]"
        );
        assert_eq!(frame_name(&frame_of("main"), annotated), "main");
    }

    #[test]
    fn lines_are_sorted_root_first_with_periods() {
        let mut b = Builder::default();
        b.sample("my app", 1, &["k:irq", "leaf", "main"], 2);
        b.sample("my app", 1, &["b", "main"], 1);
        let folded = FoldedStacks::build(&b.samples, &FoldOptions::default());
        let mut out = Vec::new();
        write_folded(
            &mut out,
            &folded,
            &b.frames,
            FoldedOptions {
                annotate_kernel: true,
            },
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "my_app;main;b 1000\nmy_app;main;leaf;irq_[k] 2000\n"
        );
    }
}
