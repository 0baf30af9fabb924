//! Folded stack text (`comm;root;...;leaf count`), byte for byte what
//! `perf script | inferno-collapse-perf` prints for the same file.
//!
//! Frame names follow inferno's collapse rules: the comm with blanks turned
//! into `_`; a symbol's parameter list cut (`f(int)` → `f`) and `;` turned
//! into `:`; an unresolved frame named `[binary base name]`, or `[unknown]`
//! when even the binary is unknown. With `annotate_kernel`, kernel frames
//! get inferno's `_[k]` suffix, which flame graph palettes colour apart.
//! Lines are sorted, as inferno sorts them. Names are built once per frame
//! and reused for every stack holding it; stacks are merged and sorted as
//! paths of name ids (`FoldedPaths`), compared byte for byte as their lines
//! would be without making the lines, so a flame graph drawn from the paths
//! (`render::flame_svg`) never builds the text it would only parse again.

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

/// Folded stacks by name: every distinct name once, every distinct name
/// path (comm first, then the frames root to leaf) once with its summed
/// count, in the order of the path's folded line among the others.
#[derive(Clone, Debug, Default)]
pub(crate) struct FoldedPaths {
    /// Names (frames' and comms'), indexed by the ids in the paths.
    pub(crate) names: Vec<String>,
    /// Distinct paths, sorted as their folded lines sort.
    pub(crate) paths: Vec<FoldedPath>,
}

/// One distinct name path and its count.
#[derive(Clone, Debug)]
pub(crate) struct FoldedPath {
    /// Name ids: the comm, then the frames root first.
    pub(crate) names: Box<[u32]>,
    pub(crate) count: u64,
}

impl FoldedPaths {
    /// Folds `folded` by name: distinct FrameId stacks can still fold to
    /// one name path (one name in two binaries, or two frames tidied to one
    /// name), which merge here, on interned name ids, so that deep stacks
    /// hash integers, not text.
    pub(crate) fn build(
        folded: &FoldedStacks,
        frames: &FrameTable,
        options: FoldedOptions,
    ) -> FoldedPaths {
        use crate::analysis::hash::FxHashMap;
        let mut ids: FxHashMap<String, u32> = FxHashMap::default();
        let mut names: Vec<String> = Vec::new();
        let mut intern = |text: String| -> u32 {
            let next = names.len() as u32;
            *ids.entry(text).or_insert_with_key(|t| {
                names.push(t.clone());
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
        let mut merged: FxHashMap<Box<[u32]>, u64> = FxHashMap::default();
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
                Some(count) => *count = count.saturating_add(stack.period),
                None => {
                    merged.insert(key.as_slice().into(), stack.period);
                }
            }
        }
        let paths = merged
            .into_iter()
            .map(|(names, count)| FoldedPath { names, count })
            .collect();
        FoldedPaths::sorted(names, paths)
    }

    /// Distinct paths over `names`, put in the order of their lines.
    pub(crate) fn sorted(names: Vec<String>, mut paths: Vec<FoldedPath>) -> FoldedPaths {
        let ranks = NameRanks::of(&names);
        paths.sort_unstable_by(|a, b| line_order(&names, &ranks, a, b));
        FoldedPaths { names, paths }
    }

    /// A name by its id ("" for an id it does not hold).
    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }

    /// The folded lines (without newlines), sorted.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.paths
            .iter()
            .map(|path| {
                let mut line = String::new();
                for (i, &id) in path.names.iter().enumerate() {
                    if i > 0 {
                        line.push(';');
                    }
                    line.push_str(self.name(id));
                }
                line.push(' ');
                line.push_str(&path.count.to_string());
                line
            })
            .collect()
    }
}

/// How the folded lines of two paths compare as strings, without making
/// them: the bytes before their first differing name are the same.
fn line_order(
    names: &[String],
    ranks: &NameRanks,
    a: &FoldedPath,
    b: &FoldedPath,
) -> std::cmp::Ordering {
    let same = common_prefix(&a.names, &b.names);
    // Mostly two names neither of which starts the other: their bytes
    // differ within both, so the names' order is the lines'.
    if let (Some(&x), Some(&y)) = (a.names.get(same), b.names.get(same))
        && let (Some(&(x_rank, x_prefix)), Some(&(y_rank, y_prefix))) =
            (ranks.0.get(x as usize), ranks.0.get(y as usize))
        && !x_prefix
        && !y_prefix
    {
        return x_rank.cmp(&y_rank);
    }
    line_tail(names, a, same).cmp(line_tail(names, b, same))
}

/// Per name id: its place among the names in byte order, and whether it
/// starts a longer name (then a line's next byte decides, not the name).
struct NameRanks(Vec<(u32, bool)>);

impl NameRanks {
    fn of(names: &[String]) -> NameRanks {
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_unstable_by(|&a, &b| names.get(a).cmp(&names.get(b)));
        let mut ranks = vec![(0, false); names.len()];
        let name = |i: Option<&usize>| i.and_then(|&i| names.get(i)).map(String::as_str);
        for (rank, pair) in order.windows(2).enumerate() {
            // A name starts a longer one only if it starts the next in order.
            let (this, next) = (name(pair.first()), name(pair.get(1)));
            let starts_next = matches!((this, next), (Some(t), Some(n)) if n.starts_with(t));
            if let Some(slot) = pair.first().and_then(|&i| ranks.get_mut(i)) {
                *slot = (rank as u32, starts_next);
            }
        }
        if let Some(slot) = order.last().and_then(|&i| ranks.get_mut(i)) {
            *slot = (order.len() as u32 - 1, false);
        }
        NameRanks(ranks)
    }
}

/// How many ids two paths share from their start: eight at a time while
/// they can (a compare the compiler does in vector registers), then one by one.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    let mut same = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        if x.iter().zip(y).fold(0, |diff, (p, q)| diff | (p ^ q)) != 0 {
            break;
        }
        same += 8;
    }
    let rest = a.get(same..).unwrap_or_default();
    let other = b.get(same..).unwrap_or_default();
    same + rest.iter().zip(other).take_while(|(x, y)| x == y).count()
}

/// The bytes of a path's folded line from its name `from` on.
fn line_tail<'a>(
    names: &'a [String],
    path: &'a FoldedPath,
    from: usize,
) -> impl Iterator<Item = u8> + 'a {
    let rest = path.names.get(from..).unwrap_or_default();
    rest.iter()
        .enumerate()
        .flat_map(move |(i, &id)| {
            let separator = (from + i > 0).then_some(b';');
            let name = names.get(id as usize).map_or("", String::as_str);
            separator.into_iter().chain(name.bytes())
        })
        .chain(std::iter::once(b' '))
        .chain(std::iter::once_with(move || path.count.to_string().into_bytes()).flatten())
}

/// The folded lines (without newlines), sorted.
pub(crate) fn folded_lines(
    folded: &FoldedStacks,
    frames: &FrameTable,
    options: FoldedOptions,
) -> Vec<String> {
    FoldedPaths::build(folded, frames, options).lines()
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
