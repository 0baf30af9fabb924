//! Stacks given as text, for `perf script | scry flamegraph`: `perf script`
//! output, already folded lines (`comm;root;...;leaf COUNT`, what
//! `stackcollapse-perf.pl` writes), or a perf.data stream, told apart by
//! their first bytes.
//!
//! Decision: `perf script` text is collapsed by inferno's perf collapser,
//! the library behind `inferno-collapse-perf` (scry already draws with
//! inferno), so the folded lines are exactly the ones that tool gives for the
//! same text, names included (perf's `sym+0xoff` offsets dropped, its
//! symbol versions kept). Folded lines are checked, not trusted: a line
//! without a count is an error naming its line number.

use std::io::{self, BufRead, Cursor, Read};

use inferno::collapse::Collapse;

/// What a stream of stacks holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StackInput {
    /// A perf.data file or pipe stream (`PERFILE2` magic).
    PerfData,
    /// `perf script` text.
    ScriptText,
    /// Folded stacks, one `stack COUNT` per line.
    Folded,
}

/// Text input that is not what it claims to be.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StackTextError {
    #[error("{name}: reading: {source}")]
    Io { name: String, source: io::Error },
    #[error("{name}: line {line}: not a folded stack ('STACK COUNT' expected): {text:?}")]
    BadFoldedLine {
        name: String,
        line: usize,
        text: String,
    },
    #[error("{name}: no stacks (expected perf script text with callchains, or folded stacks)")]
    NoStacks { name: String },
}

/// Lines looked at to tell script text from folded lines.
const SNIFF_LINES: usize = 2;
/// Bytes looked at at most before deciding (a line longer than this is
/// taken as script text).
const SNIFF_BYTES: u64 = 1 << 20;

/// Whether `line` reads as a folded stack: no leading blank (perf script
/// indents its frames and pads its comm column), and a count at the end.
fn looks_folded(line: &str) -> bool {
    if line.starts_with([' ', '\t']) {
        return false;
    }
    line.rsplit_once(' ')
        .is_some_and(|(stack, count)| !stack.is_empty() && count.parse::<u64>().is_ok())
}

/// Reads the start of `input` and says what it holds; returns the bytes
/// read, which the caller puts back in front (`Cursor::new(head).chain(input)`).
pub(crate) fn sniff(input: &mut impl BufRead) -> io::Result<(StackInput, Vec<u8>)> {
    let mut head = Vec::new();
    let mut limited = input.take(SNIFF_BYTES);
    let mut seen = Vec::new();
    while seen.len() < SNIFF_LINES {
        let start = head.len();
        if limited.read_until(b'\n', &mut head)? == 0 {
            break;
        }
        if start == 0 && (head.starts_with(b"PERFILE2") || head.starts_with(b"2ELIFREP")) {
            return Ok((StackInput::PerfData, head));
        }
        let line = String::from_utf8_lossy(&head[start..]);
        let line = line.trim_end_matches(['\n', '\r']);
        if !line.trim().is_empty() && !line.starts_with('#') {
            seen.push(looks_folded(line));
        }
    }
    let kind = if !seen.is_empty() && seen.iter().all(|&f| f) {
        StackInput::Folded
    } else {
        StackInput::ScriptText
    };
    Ok((kind, head))
}

/// Settings of [`fold_script`].
#[derive(Clone, Debug, Default)]
pub(crate) struct ScriptFoldOptions {
    /// Suffix kernel frames with `_[k]` (for flame graph palettes).
    pub(crate) annotate_kernel: bool,
    /// Fold this event only (default: the first one in the text).
    pub(crate) event: Option<String>,
}

/// `perf script` text → folded lines, sorted, as `inferno-collapse-perf`
/// prints them.
pub(crate) fn fold_script(
    name: &str,
    input: impl BufRead,
    options: &ScriptFoldOptions,
) -> Result<Vec<String>, StackTextError> {
    let mut opts = inferno::collapse::perf::Options::default();
    opts.annotate_kernel = options.annotate_kernel;
    opts.event_filter = options.event.clone();
    // One thread: the text arrives through a pipe at the pace of its writer.
    opts.nthreads = 1;
    let mut folded = Vec::new();
    inferno::collapse::perf::Folder::from(opts)
        .collapse(input, &mut folded)
        .map_err(|source| StackTextError::Io {
            name: name.to_owned(),
            source,
        })?;
    let lines: Vec<String> = String::from_utf8_lossy(&folded)
        .lines()
        .map(str::to_owned)
        .collect();
    if lines.is_empty() {
        return Err(StackTextError::NoStacks {
            name: name.to_owned(),
        });
    }
    Ok(lines)
}

/// Folded lines, checked (`stack COUNT`); blank lines are skipped.
pub(crate) fn read_folded(name: &str, input: impl BufRead) -> Result<Vec<String>, StackTextError> {
    let mut lines = Vec::new();
    for (index, line) in input.lines().enumerate() {
        let line = line.map_err(|source| StackTextError::Io {
            name: name.to_owned(),
            source,
        })?;
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if !looks_folded(line) {
            let mut text = line.to_string();
            text.truncate(text.floor_char_boundary(80));
            return Err(StackTextError::BadFoldedLine {
                name: name.to_owned(),
                line: index + 1,
                text,
            });
        }
        lines.push(line.to_string());
    }
    if lines.is_empty() {
        return Err(StackTextError::NoStacks {
            name: name.to_owned(),
        });
    }
    lines.sort();
    Ok(lines)
}

/// The head [`sniff`] read, put back in front of the rest.
pub(crate) fn rejoin<R: BufRead>(head: Vec<u8>, rest: R) -> io::Chain<Cursor<Vec<u8>>, R> {
    Cursor::new(head).chain(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "spin 19610 [000]   301.691636:    1001001 cpu-clock: \n\
        \t            115f leaf_a+0x16 (/tmp/hr/spin)\n\
        \t            1219 main+0x7a (/tmp/hr/spin)\n\
        \n\
        spin 19610 [000]   301.692636:    1001001 cpu-clock: \n\
        \tffffffff821f8b58 __schedule+0x618 ([kernel.kallsyms])\n\
        \t            1219 main+0x7a (/tmp/hr/spin)\n\n";

    fn kind(text: &[u8]) -> StackInput {
        sniff(&mut &text[..]).unwrap().0
    }

    #[test]
    fn tells_inputs_apart() {
        assert_eq!(kind(SCRIPT.as_bytes()), StackInput::ScriptText);
        assert_eq!(
            kind(b"spin;main;leaf_a 3\nspin;main 1\n"),
            StackInput::Folded
        );
        assert_eq!(kind(b"PERFILE2\x68\0\0\0"), StackInput::PerfData);
        // perf script -F comm,tid: the first line ends in a number too.
        assert_eq!(
            kind(b"spin 19610\n\t115f leaf_a (/tmp/spin)\n"),
            StackInput::ScriptText
        );
        assert_eq!(kind(b""), StackInput::ScriptText);
    }

    #[test]
    fn folds_script_text_as_inferno() {
        let (_, head) = sniff(&mut SCRIPT.as_bytes()).unwrap();
        let rest: &[u8] = &SCRIPT.as_bytes()[head.len()..];
        let lines = fold_script("t", rejoin(head, rest), &ScriptFoldOptions::default()).unwrap();
        assert_eq!(
            lines,
            // inferno counts each sample's period, as perf script shows it.
            vec!["spin;main;__schedule 1001001", "spin;main;leaf_a 1001001"]
        );
        let annotated = ScriptFoldOptions {
            annotate_kernel: true,
            event: None,
        };
        let lines = fold_script("t", SCRIPT.as_bytes(), &annotated).unwrap();
        assert_eq!(lines[0], "spin;main;__schedule_[k] 1001001");
    }

    #[test]
    fn folded_lines_are_checked() {
        let lines = read_folded("t", &b"b;c 2\n\na;b 1\n"[..]).unwrap();
        assert_eq!(lines, vec!["a;b 1", "b;c 2"]);
        let err = read_folded("t", &b"a;b 1\nnot a stack\n"[..]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "t: line 2: not a folded stack ('STACK COUNT' expected): \"not a stack\""
        );
        assert!(matches!(
            read_folded("t", &b"\n"[..]),
            Err(StackTextError::NoStacks { .. })
        ));
    }
}
