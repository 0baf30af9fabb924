//! Flame graph SVG, drawn by inferno from folded lines.
//!
//! inferno's SVG carries its own JavaScript: search (Ctrl-F), click to zoom,
//! reset. Decisions: colours are hashed from the frame name (`hash`) and
//! `deterministic` is on, so the same profile always draws the same picture
//! (golden files, diffs between runs); the default palette is `perl`, which
//! colours `_[k]`-suffixed kernel frames orange apart from user frames.
//! A differential graph (`--diff`) goes through inferno's `differential`
//! (two counts per stack): red grew, blue shrank. `inert_svg` takes the
//! script out for a page that brings its own (`scry serve`).

use std::borrow::Cow;
use std::io::{self, Write};

use inferno::flamegraph::{self, Direction, Palette};

use super::folded::FoldedPaths;

/// Settings of one flame graph.
#[derive(Clone, Debug)]
pub(crate) struct FlameOptions {
    /// An inferno palette name (`perl`, `java`, `hot`, `mem`, `io`, `js`,
    /// `python`, `rust`, `red`, ...). Default `perl`.
    pub(crate) palette: Palette,
    /// Default "Flame Graph".
    pub(crate) title: String,
    /// Icicle graph: roots at the top.
    pub(crate) inverted: bool,
    /// Reverse each stack (leaves become roots): a "who calls the hot
    /// leaves" graph.
    pub(crate) reverse: bool,
    /// What a count is ("samples"; for periods of time events, nanoseconds).
    pub(crate) count_name: String,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            palette: Palette::Multi(flamegraph::color::MultiPalette::Perl),
            title: "Flame Graph".to_string(),
            inverted: false,
            reverse: false,
            count_name: "samples".to_string(),
        }
    }
}

/// A palette name inferno does not know; the message lists those it does.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown colour palette '{0}' (known: perl, java, js, python, rust, wakeup, hot, mem, io, red, green, blue, aqua, yellow, purple, orange)"
)]
pub(crate) struct UnknownPalette(pub(crate) String);

/// Parses a palette name, with the list of valid names in the error.
pub(crate) fn parse_palette(name: &str) -> Result<Palette, UnknownPalette> {
    name.parse::<Palette>()
        .map_err(|_| UnknownPalette(name.to_string()))
}

pub(super) fn inferno_options<'a>(options: &FlameOptions) -> flamegraph::Options<'a> {
    let mut opt = flamegraph::Options::default();
    opt.colors = options.palette;
    opt.title = options.title.clone();
    opt.count_name = options.count_name.clone();
    opt.hash = true;
    opt.deterministic = true;
    opt.reverse_stack_order = options.reverse;
    if options.inverted {
        opt.direction = Direction::Inverted;
    }
    opt
}

/// Draws folded lines (`a;b;c count`) as an SVG.
pub(crate) fn write_svg<W: Write>(
    lines: &[String],
    options: &FlameOptions,
    w: W,
) -> io::Result<()> {
    if lines.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no stacks to draw (the file holds no samples of the chosen event)",
        ));
    }
    let [lines] = fit_counts([lines]);
    let mut opt = inferno_options(options);
    flamegraph::from_lines(&mut opt, lines.iter().map(|l| l.as_ref()), w)
}

/// Sets of folded lines, each count shifted right by the least amount
/// that makes every set's sum fit in a `u64` (a hostile file's periods can
/// pass it; inferno adds them up unchecked: a panic in a debug build, a
/// wrapped total in a release one), said in one line when it is not zero.
/// One shift for all the sets keeps their counts comparable (`--diff`).
/// Lines without a count are left as they are.
fn fit_counts<'a, const N: usize>(sets: [&'a [String]; N]) -> [Cow<'a, [String]>; N] {
    let shift = (0..64).find(|&shift| sets.iter().all(|lines| sum_fits(lines, shift)));
    let shift = shift.unwrap_or(63);
    if shift == 0 {
        return sets.map(Cow::Borrowed);
    }
    eprintln!("scry: the stacks' counts add up past 2^64: drawn at 1/2^{shift} of their size");
    sets.map(|lines| Cow::Owned(shifted(lines, shift)))
}

/// The count a folded line ends with.
fn line_count(line: &str) -> Option<u64> {
    line.rsplit_once(' ')
        .and_then(|(_, c)| c.trim().parse::<u64>().ok())
}

fn sum_fits(lines: &[String], shift: u32) -> bool {
    lines
        .iter()
        .try_fold(0u64, |sum, l| {
            sum.checked_add(line_count(l).map_or(0, |c| c.checked_shr(shift).unwrap_or(0)))
        })
        .is_some()
}

/// `lines` with each count shifted right by `shift` (those that become 0
/// left out).
fn shifted(lines: &[String], shift: u32) -> Vec<String> {
    lines
        .iter()
        .filter_map(|line| match (line.rsplit_once(' '), line_count(line)) {
            (Some((stack, _)), Some(c)) => {
                let c = c.checked_shr(shift).unwrap_or(0);
                (c > 0).then(|| format!("{stack} {c}"))
            }
            _ => Some(line.clone()),
        })
        .collect()
}

/// Draws folded paths as an SVG: as `write_svg` draws their lines, byte
/// for byte, but without them where `render::flame_svg` can.
pub(crate) fn write_paths_svg<W: Write>(
    paths: &FoldedPaths,
    options: &FlameOptions,
    mut w: W,
) -> io::Result<()> {
    if super::flame_svg::write_frames_svg(paths, options, &mut w)? {
        return Ok(());
    }
    write_svg(&paths.lines(), options, w)
}

/// Draws a differential flame graph: frame widths from `after`, colours
/// from the change since `before` (red grew, blue shrank).
pub(crate) fn write_diff_svg<W: Write>(
    before: &[String],
    after: &[String],
    options: &FlameOptions,
    w: W,
) -> io::Result<()> {
    if after.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no stacks to draw in the 'after' profile",
        ));
    }
    let [before, after] = fit_counts([before, after]);
    let before_text = before.join("\n");
    let after_text = after.join("\n");
    let mut merged = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before_text.as_bytes(),
        after_text.as_bytes(),
        &mut merged,
    )?;
    let mut opt = inferno_options(options);
    flamegraph::from_reader(&mut opt, merged.as_slice(), w)
}

/// inferno's SVG made inert, for a page that runs no inline script or
/// style (`scry serve`'s policy): its `<script>` and `<style>` elements
/// and its `on...` handler attributes removed, the frames left as they
/// are (the page brings its own zoom and search).
pub(crate) fn inert_svg(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        rest = &rest[open..];
        let element = ["<script", "<style"]
            .into_iter()
            .find(|tag| rest.starts_with(tag));
        if let Some(tag) = element {
            let close = format!("</{}>", &tag[1..]);
            match rest.find(&close) {
                Some(end) => rest = &rest[end + close.len()..],
                None => rest = "",
            }
            continue;
        }
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        out.push_str(&without_handlers(&rest[..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// A start tag without its `on...="..."` attributes.
fn without_handlers(tag: &str) -> String {
    let mut out = String::with_capacity(tag.len());
    let mut rest = tag;
    while let Some(at) = rest.find(" on") {
        out.push_str(&rest[..at]);
        let attr = &rest[at + 1..];
        let name_end = attr.find('=').unwrap_or(0);
        let is_handler = name_end > 2 && attr[..name_end].bytes().all(|b| b.is_ascii_alphabetic());
        let quote = attr[name_end + 1..].chars().next();
        match (is_handler, quote) {
            (true, Some(q @ ('"' | '\''))) => {
                let value = &attr[name_end + 2..];
                let end = value.find(q).map_or(value.len(), |e| e + 1);
                rest = &value[end..];
            }
            _ => {
                out.push_str(" on");
                rest = &rest[at + 3..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_frames_and_rejects_empty_input() {
        let lines = vec![
            "app;main;hot 300".to_string(),
            "app;main;cold 100".to_string(),
        ];
        let mut svg = Vec::new();
        write_svg(&lines, &FlameOptions::default(), &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("hot (300 samples, 75.00%)"), "{svg}");
        assert!(write_svg(&[], &FlameOptions::default(), Vec::new()).is_err());
        assert!(parse_palette("perl").is_ok());
        assert!(
            parse_palette("plaid")
                .unwrap_err()
                .to_string()
                .contains("plaid")
        );
    }

    #[test]
    fn inert_svg_keeps_the_frames_and_drops_script_style_and_handlers() {
        let lines = vec!["app;main;hot 300".to_string()];
        let mut svg = Vec::new();
        write_svg(&lines, &FlameOptions::default(), &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        assert!(svg.contains("<script") && svg.contains("onload="));
        let inert = inert_svg(&svg);
        for gone in ["<script", "</script>", "<style", "onload=", "init(evt)"] {
            assert!(!inert.contains(gone), "{gone} in {inert}");
        }
        assert!(inert.contains(r#"<svg id="frames""#));
        assert!(inert.contains("<title>hot (300 samples, 100.00%)</title>"));
        assert_eq!(
            without_handlers(r#"<g id="1" onclick='x()' on="2">"#),
            r#"<g id="1" on="2">"#
        );
    }

    #[test]
    fn diff_colours_growth_red_and_shrink_blue() {
        let before = vec![
            "app;main;hot 100".to_string(),
            "app;main;cold 300".to_string(),
        ];
        let after = vec![
            "app;main;hot 300".to_string(),
            "app;main;cold 100".to_string(),
        ];
        let mut svg = Vec::new();
        write_diff_svg(&before, &after, &FlameOptions::default(), &mut svg).unwrap();
        let svg = String::from_utf8(svg).unwrap();
        // inferno titles differential frames with the delta.
        assert!(svg.contains("hot (300 samples, 75.00%; +50.00%)"), "{svg}");
        assert!(svg.contains("cold (100 samples, 25.00%; -50.00%)"), "{svg}");
    }

    #[test]
    fn counts_past_u64_are_scaled_to_fit_and_others_left_alone() {
        let half = (1u64 << 63).to_string();
        let lines = vec![format!("a;b {half}"), format!("a;c {half}"), "a 3".into()];
        let shift = (0..64).find(|&shift| sum_fits(&lines, shift));
        assert_eq!(shift, Some(1));
        let scaled = shifted(&lines, 1);
        let quarter = (1u64 << 62).to_string();
        assert_eq!(
            scaled,
            [
                format!("a;b {quarter}"),
                format!("a;c {quarter}"),
                "a 1".into()
            ]
        );
        let small = ["a;b 5".to_string(), "garbage".to_string()];
        assert!(matches!(fit_counts([&small[..]]), [Cow::Borrowed(_)]));
        // inferno adds up what it is given: no overflow now.
        let mut svg = Vec::new();
        write_svg(&lines, &FlameOptions::default(), &mut svg).expect("drawn");
        assert!(
            String::from_utf8_lossy(&svg).contains(">b<"),
            "frame b drawn"
        );
        // And a differential graph of them: one shift for both profiles.
        let mut diff = Vec::new();
        write_diff_svg(&lines, &lines, &FlameOptions::default(), &mut diff).expect("drawn");
        assert!(
            String::from_utf8_lossy(&diff).contains(">b<"),
            "frame b drawn"
        );
    }
}
