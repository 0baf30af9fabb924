//! A flame graph's frames drawn straight from folded paths: the SVG inferno
//! draws for their folded lines, byte for byte, without the lines.
//!
//! Decision: inferno would parse the text scry just wrote, merge frames by
//! hashing strings, and format five floats per drawn frame through core's
//! exact formatter. Here the sorted paths are merged on name ids in one walk
//! (inferno's `flow`: frames close, in order of depth, where a path leaves
//! the one before it), frames narrower than inferno's minimum width are
//! never kept, and numbers are written by `render::decimal`, which rounds
//! as core does. inferno still writes all but the frames (header, style,
//! script) and picks the colours: one inferno run on a small stand-in input
//! with the same total and depth, holding every drawn name once, gives the
//! SVG up to the frames' container and leaves each name's colour in a
//! `PaletteMap`. Input this cannot draw exactly as inferno (a name inferno
//! would split or trim: empty, with whitespace or `;`; its grey `-` and
//! `--`; options that reorder stacks), or a stand-in that does not come out
//! as expected, is left to inferno whole (`Ok(false)`, nothing written).
//! The tests compare both on the same input.

use std::io::{self, Write};

use inferno::flamegraph::{self, Direction, color::PaletteMap};

use super::decimal::{push_fixed, push_grouped, push_u64};
use super::flamegraph::{FlameOptions, inferno_options};
use super::folded::FoldedPaths;
use super::markup::escape;

/// inferno's width when none is set.
const DEFAULT_IMAGE_WIDTH: usize = 1200;
/// inferno's vertical padding of a frame.
const FRAMEPAD: usize = 1;
/// The id of the root frame ("all"), which no path names.
const ROOT: u32 = u32::MAX;
/// Bytes gathered before they go to the writer.
const CHUNK: usize = 1 << 16;

/// One frame to draw: a name at a depth over `start..end` of the total.
struct Drawn {
    name: u32,
    depth: usize,
    start: u64,
    end: u64,
}

/// Per drawn name: what its frames write.
#[derive(Clone, Default)]
struct Label {
    /// The name without inferno's `_[k]`-style suffix.
    bare: String,
    /// `bare`, XML-escaped.
    escaped: String,
    /// `rgb(r,g,b)`.
    fill: String,
}

/// Draws `paths` as inferno would with `options`, and says whether it
/// did; on `false` nothing was written and inferno must draw them.
pub(crate) fn write_frames_svg<W: Write>(
    paths: &FoldedPaths,
    options: &FlameOptions,
    mut w: W,
) -> io::Result<bool> {
    let opt = inferno_options(options);
    if !supported(&opt) {
        return Ok(false);
    }
    let Some(layout) = Layout::of(paths, &opt) else {
        return Ok(false);
    };
    let Some((head, colours)) = stand_in(paths, &layout, options)? else {
        return Ok(false);
    };
    let Some(labels) = labels(paths, &layout, &colours) else {
        return Ok(false);
    };
    let geometry = Geometry::of(&layout, &opt);
    let depths = depth_texts(&geometry, &opt, layout.depth_max);
    let count_name = escape(&opt.count_name);
    let root = labels.last().cloned().unwrap_or_default();
    let mut span = SpanText::default();
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    buf.extend_from_slice(&head);
    for frame in &layout.frames {
        let label = labels.get(frame.name as usize).unwrap_or(&root);
        let Some(depth) = depths.get(frame.depth) else {
            continue;
        };
        span.update(frame, &geometry, &opt);
        draw(&mut buf, frame, &span, depth, label, &count_name);
        if buf.len() >= CHUNK {
            w.write_all(&buf)?;
            buf.clear();
        }
    }
    buf.extend_from_slice(b"</svg></svg>");
    w.write_all(&buf)?;
    w.flush()?;
    Ok(true)
}

/// The options whose drawing this module knows (scry's `FlameOptions` set
/// no others).
fn supported(opt: &flamegraph::Options<'_>) -> bool {
    opt.hash
        && !opt.reverse_stack_order
        && !opt.flame_chart
        && !opt.no_sort
        && opt.base.is_empty()
        && !opt.color_diffusion
        && opt.palette_map.is_none()
        && !opt.pretty_xml
        && opt.factor == 1.0
}

/// The frames inferno keeps, in the order it draws them.
struct Layout {
    frames: Vec<Drawn>,
    /// The sum of all counts.
    total: u64,
    /// The deepest drawn frame's depth (the root's is 0).
    depth_max: usize,
    /// Each drawn name (not the root) once, in order of first drawing.
    names: Vec<u32>,
}

impl Layout {
    fn of(paths: &FoldedPaths, opt: &flamegraph::Options<'_>) -> Option<Layout> {
        let total = paths
            .paths
            .iter()
            .try_fold(0u64, |sum, path| sum.checked_add(path.count))?;
        if total == 0 {
            return None;
        }
        let plain: Vec<bool> = paths.names.iter().map(|n| plain_name(n)).collect();
        let width_per_time_pct = 100.0 / total as f64;
        let min_width_time = opt.min_width / width_per_time_pct;
        let mut layout = Layout {
            frames: Vec::new(),
            total,
            depth_max: 0,
            names: Vec::new(),
        };
        let mut seen = vec![false; paths.names.len()];
        // The open frames, root first: (name, start).
        let mut open: Vec<(u32, u64)> = vec![(ROOT, 0)];
        let mut time = 0u64;
        for path in &paths.paths {
            if path.names.is_empty() {
                return None;
            }
            let shared = 1 + open
                .iter()
                .skip(1)
                .zip(path.names.iter())
                .take_while(|((open, _), id)| open == *id)
                .count();
            layout.close(&mut open, shared, time, min_width_time, &mut seen);
            for &id in path.names.get(shared - 1..).unwrap_or_default() {
                if !plain.get(id as usize).copied().unwrap_or(false) {
                    return None;
                }
                open.push((id, time));
            }
            time += path.count;
        }
        layout.close(&mut open, 0, time, min_width_time, &mut seen);
        Some(layout)
    }

    /// Ends the open frames from `depth` on at `time`, keeping those as
    /// wide as inferno's minimum.
    fn close(
        &mut self,
        open: &mut Vec<(u32, u64)>,
        depth: usize,
        time: u64,
        min_width_time: f64,
        seen: &mut [bool],
    ) {
        for (i, (name, start)) in open.drain(depth..).enumerate() {
            if ((time - start) as f64) < min_width_time {
                continue;
            }
            self.depth_max = self.depth_max.max(depth + i);
            if let Some(seen) = seen.get_mut(name as usize)
                && !*seen
            {
                *seen = true;
                self.names.push(name);
            }
            self.frames.push(Drawn {
                name,
                depth: depth + i,
                start,
                end: time,
            });
        }
    }

    fn image_height(&self, opt: &flamegraph::Options<'_>) -> usize {
        (self.depth_max + 1) * opt.frame_height + ypad1(opt) + ypad2(opt)
    }
}

/// A name inferno reads back as the same one frame and colours by palette.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "-"
        && name != "--"
        && !name.chars().any(|c| c.is_whitespace() || c == ';')
}

/// inferno's top padding (title, subtitle; details when inverted).
fn ypad1(opt: &flamegraph::Options<'_>) -> usize {
    let subtitle = if opt.subtitle.is_some() {
        opt.font_size * 2
    } else {
        0
    };
    match opt.direction {
        Direction::Straight => opt.font_size * 3 + subtitle,
        Direction::Inverted => opt.font_size * 4 + subtitle + 4,
    }
}

/// inferno's bottom padding (details, unless inverted).
fn ypad2(opt: &flamegraph::Options<'_>) -> usize {
    match opt.direction {
        Direction::Straight => opt.font_size * 2 + 10,
        Direction::Inverted => opt.font_size + 10,
    }
}

/// inferno's SVG up to and with the frames' container start tag, for a
/// graph of this total and depth, and the colours of the drawn names: drawn
/// by inferno from stand-in lines (each name once, the first line as deep
/// as the graph, counts summing to the total), none pruned.
fn stand_in(
    paths: &FoldedPaths,
    layout: &Layout,
    options: &FlameOptions,
) -> io::Result<Option<(Vec<u8>, PaletteMap)>> {
    let depth = layout.depth_max;
    if depth == 0 || layout.names.is_empty() {
        return Ok(None);
    }
    let mut chunks: Vec<Vec<&str>> = layout
        .names
        .chunks(depth)
        .map(|chunk| chunk.iter().map(|&id| paths.name(id)).collect())
        .collect();
    if let Some(first) = chunks.first_mut()
        && let Some(&last) = first.last()
    {
        first.resize(depth, last);
    }
    let ones = chunks.len() as u64 - 1;
    let Some(rest) = layout.total.checked_sub(ones).filter(|&rest| rest > 0) else {
        return Ok(None);
    };
    let lines: Vec<String> = chunks
        .iter()
        .enumerate()
        .map(|(i, names)| {
            let count = if i as u64 == ones { rest } else { 1 };
            format!("{} {count}", names.join(";"))
        })
        .collect();
    let mut colours = PaletteMap::default();
    let mut svg = Vec::new();
    {
        let mut opt = inferno_options(options);
        opt.min_width = 0.0;
        opt.palette_map = Some(&mut colours);
        let height = layout.image_height(&opt);
        flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut svg)?;
        let width = opt.image_width.unwrap_or(DEFAULT_IMAGE_WIDTH);
        let Some(head) = frames_head(&svg, width, height, layout.total) else {
            return Ok(None);
        };
        svg.truncate(head);
    }
    Ok(Some((svg, colours)))
}

/// Where inferno's SVG of the stand-in ends its frames' container start
/// tag, when it is the SVG expected: this size and total, closing with the
/// two `</svg>` after the frames.
fn frames_head(svg: &[u8], width: usize, height: usize, total: u64) -> Option<usize> {
    let text = std::str::from_utf8(svg).ok()?;
    let size = format!(" viewBox=\"0 0 {width} {height}\"");
    let container = text.find("<svg id=\"frames\"")?;
    let end = container + text.get(container..)?.find('>')? + 1;
    let tag = text.get(container..end)?;
    let sized = text.get(..container)?.contains(&size);
    let summed = tag.ends_with(&format!(" total_samples=\"{total}\">"));
    (sized && summed && text.ends_with("</g></svg></svg>")).then_some(end)
}

/// Each drawn name's label and colour, indexed by name id (the root's
/// last), or `None` when inferno left a colour out.
fn labels(paths: &FoldedPaths, layout: &Layout, colours: &PaletteMap) -> Option<Vec<Label>> {
    let mut labels = vec![Label::default(); paths.names.len() + 1];
    let label = |name: &str| -> Option<Label> {
        let colour = colours.get(name)?;
        let bare = deannotate(name);
        Some(Label {
            bare: bare.to_string(),
            escaped: escape(bare),
            fill: format!("rgb({},{},{})", colour.r, colour.g, colour.b),
        })
    };
    for &id in &layout.names {
        *labels.get_mut(id as usize)? = label(paths.name(id))?;
    }
    *labels.last_mut()? = label("")?;
    Some(labels)
}

/// Sizes shared by every frame, as inferno computes them.
struct Geometry {
    /// The sum of all counts.
    total: f64,
    width_per_time_pct: f64,
    image_width: f64,
    image_height: usize,
    ypad1: usize,
    ypad2: usize,
    /// The width of one character, in percent of the image.
    char_pct: f64,
}

impl Geometry {
    fn of(layout: &Layout, opt: &flamegraph::Options<'_>) -> Geometry {
        let image_width = opt.image_width.unwrap_or(DEFAULT_IMAGE_WIDTH) as f64;
        Geometry {
            total: layout.total as f64,
            width_per_time_pct: 100.0 / layout.total as f64,
            image_width,
            image_height: layout.image_height(opt),
            ypad1: ypad1(opt),
            ypad2: ypad2(opt),
            char_pct: 100.0 * opt.font_size as f64 * opt.font_width / image_width,
        }
    }
}

/// The text of a frame's numbers that follow from its span alone, kept
/// while frames stacked on one another share the span (most frames of a
/// deep graph: 22,117 of 37,568 on the bench's file).
#[derive(Default)]
struct SpanText {
    span: Option<(u64, u64)>,
    /// The width in samples, grouped by thousands.
    samples: Vec<u8>,
    /// Percent of the total, two decimals.
    pct: Vec<u8>,
    x: Vec<u8>,
    width: Vec<u8>,
    /// `fg:x` and `fg:w`: start and width in samples.
    fg_x: Vec<u8>,
    fg_w: Vec<u8>,
    text_x: Vec<u8>,
    /// How many characters of a name fit.
    fit_chars: usize,
}

impl SpanText {
    /// Makes the text for `frame`'s span, unless it is the last one's.
    fn update(&mut self, frame: &Drawn, geometry: &Geometry, opt: &flamegraph::Options<'_>) {
        if self.span == Some((frame.start, frame.end)) {
            return;
        }
        self.span = Some((frame.start, frame.end));
        let x1_pct = frame.start as f64 * geometry.width_per_time_pct;
        let x2_pct = frame.end as f64 * geometry.width_per_time_pct;
        let width = frame.end - frame.start;
        let samples = (width as f64 * opt.factor).round() as usize;
        let pct = 100.0 * samples as f64 / (geometry.total * opt.factor);
        let width_pct = x2_pct - x1_pct;
        for text in [
            &mut self.samples,
            &mut self.pct,
            &mut self.x,
            &mut self.width,
            &mut self.fg_x,
            &mut self.fg_w,
            &mut self.text_x,
        ] {
            text.clear();
        }
        push_grouped(&mut self.samples, samples as u64);
        push_fixed(&mut self.pct, pct, 2);
        push_fixed(&mut self.x, x1_pct, 4);
        push_fixed(&mut self.width, width_pct, 4);
        push_u64(&mut self.fg_x, frame.start);
        push_u64(&mut self.fg_w, width);
        push_fixed(
            &mut self.text_x,
            x1_pct + 100.0 * 3.0 / geometry.image_width,
            4,
        );
        self.fit_chars = (width_pct / geometry.char_pct).trunc() as usize;
    }
}

/// The text of a depth's numbers: the frame's `y` and `height`, its
/// text's `y`.
struct DepthText {
    y: Vec<u8>,
    height: Vec<u8>,
    text_y: Vec<u8>,
}

/// Each depth's text, 0 to `depth_max`.
fn depth_texts(
    geometry: &Geometry,
    opt: &flamegraph::Options<'_>,
    depth_max: usize,
) -> Vec<DepthText> {
    let height = opt.frame_height;
    (0..=depth_max)
        .map(|depth| {
            let (y1, y2) = match opt.direction {
                Direction::Straight => {
                    let bottom = geometry.image_height - geometry.ypad2;
                    (
                        bottom - (depth + 1) * height + FRAMEPAD,
                        bottom - depth * height,
                    )
                }
                Direction::Inverted => (
                    geometry.ypad1 + depth * height,
                    geometry.ypad1 + (depth + 1) * height - FRAMEPAD,
                ),
            };
            let mut text = DepthText {
                y: Vec::new(),
                height: Vec::new(),
                text_y: Vec::new(),
            };
            push_u64(&mut text.y, y1 as u64);
            push_u64(&mut text.height, (y2 - y1) as u64);
            push_fixed(&mut text.text_y, 3.0 + (y1 + y2) as f64 / 2.0, 2);
            text
        })
        .collect()
}

/// One frame, as inferno's `from_lines` writes it.
fn draw(
    buf: &mut Vec<u8>,
    frame: &Drawn,
    span: &SpanText,
    depth: &DepthText,
    label: &Label,
    count_name: &str,
) {
    let put = |buf: &mut Vec<u8>, parts: &[&[u8]]| {
        for part in parts {
            buf.extend_from_slice(part);
        }
    };
    let count_name = count_name.as_bytes();
    buf.extend_from_slice(b"<g><title>");
    if frame.name == ROOT {
        put(
            buf,
            &[b"all (", &span.samples, b" ", count_name, b", 100%)"],
        );
    } else {
        let name = label.escaped.as_bytes();
        put(
            buf,
            &[
                name,
                b" (",
                &span.samples,
                b" ",
                count_name,
                b", ",
                &span.pct,
                b"%)",
            ],
        );
    }
    put(
        buf,
        &[
            b"</title><rect x=\"",
            &span.x,
            b"%\" y=\"",
            &depth.y,
            b"\" width=\"",
            &span.width,
            b"%\" height=\"",
            &depth.height,
            b"\" fill=\"",
            label.fill.as_bytes(),
            b"\" fg:x=\"",
            &span.fg_x,
            b"\" fg:w=\"",
            &span.fg_w,
            b"\"/><text x=\"",
            &span.text_x,
            b"%\" y=\"",
            &depth.text_y,
            b"\">",
        ],
    );
    let fit_chars = span.fit_chars;
    if fit_chars >= 3 {
        if label.bare.len() < fit_chars {
            buf.extend_from_slice(label.escaped.as_bytes());
        } else {
            let cut: String = label.bare.chars().take(fit_chars - 2).collect();
            buf.extend_from_slice(escape(&cut).as_bytes());
            buf.extend_from_slice(b"..");
        }
    }
    buf.extend_from_slice(b"</text></g>");
}

/// inferno's `deannotate`: a name without its `_[k]`, `_[w]`, `_[i]` or
/// `_[j]` suffix.
fn deannotate(name: &str) -> &str {
    let bytes = name.as_bytes();
    if let [.., b'_', b'[', kind, b']'] = bytes
        && b"kwij".contains(kind)
    {
        return name.get(..bytes.len() - 4).unwrap_or(name);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::hash::FxHashMap;
    use crate::render::flamegraph::{parse_palette, write_paths_svg, write_svg};
    use crate::render::folded::FoldedPath;

    /// Random distinct paths over `names`, `lines` of them at most, up to
    /// `depth` names deep, counts up to `max_count`.
    fn random_paths(names: &[&str], lines: usize, depth: usize, max_count: u64) -> FoldedPaths {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ (lines as u64) ^ ((depth as u64) << 32);
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut merged: FxHashMap<Vec<u32>, u64> = FxHashMap::default();
        let mut last: Vec<u32> = Vec::new();
        for _ in 0..lines {
            // Half the paths grow from the one before, as real stacks share roots.
            let keep = (next() as usize % (last.len() + 1)).min(depth.saturating_sub(1));
            let mut path: Vec<u32> = last.get(..keep).unwrap_or_default().to_vec();
            if path.is_empty() || next() % 2 == 0 {
                path.truncate(keep / 2);
            }
            let len = 1 + next() as usize % depth;
            while path.len() < len {
                // Skewed: a few names are most frames.
                let pick = next() % names.len() as u64;
                let pick = if next() % 2 == 0 { pick % 4 } else { pick };
                path.push(pick as u32);
            }
            let count = 1 + next() % max_count;
            *merged.entry(path.clone()).or_default() += count;
            last = path;
        }
        let paths = merged
            .into_iter()
            .map(|(names, count)| FoldedPath {
                names: names.into(),
                count,
            })
            .collect();
        FoldedPaths::sorted(names.iter().map(|n| n.to_string()).collect(), paths)
    }

    /// Both ways of drawing `paths`; `None` where this module left them to inferno.
    fn both(paths: &FoldedPaths, options: &FlameOptions) -> (Option<String>, String) {
        let lines = paths.lines();
        let mut sorted = lines.clone();
        sorted.sort_unstable();
        assert_eq!(lines, sorted, "paths come in the order of their lines");
        let mut inferno = Vec::new();
        write_svg(&lines, options, &mut inferno).unwrap();
        let mut direct = Vec::new();
        let drew = write_frames_svg(paths, options, &mut direct).unwrap();
        let mut either = Vec::new();
        write_paths_svg(paths, options, &mut either).unwrap();
        assert_eq!(
            either, inferno,
            "write_paths_svg draws as inferno, either way"
        );
        let direct = drew.then(|| String::from_utf8(direct).unwrap());
        (direct, String::from_utf8(inferno).unwrap())
    }

    const NAMES: &[&str] = &[
        "app",
        "main",
        "std::vector<int>::push_back",
        "schedule_[k]",
        "do_syscall_64_[k]",
        "a&b<c>\"d'e",
        "[libc.so.6]",
        "naïve_ünïcödé_函数_name_long_enough_to_be_cut_somewhere",
        "x_[j]",
        "y_[i]",
        "z_[w]",
        "q_[x]",
        "a",
        "ab",
        "a!",
        "a~",
        "_[k]",
    ];

    #[test]
    fn draws_what_inferno_draws() {
        let cases = [
            (200, 12, 5),
            (3000, 40, 1_000_000),
            (500, 3, 100_000_000_000),
            (50, 70, 2),
        ];
        #[derive(Default, Debug)]
        struct Seen {
            truncated: bool,
            escaped: bool,
            unicode: bool,
            bare: bool,
            pruned: bool,
        }
        let mut seen = Seen::default();
        for (lines, depth, max_count) in cases {
            let paths = random_paths(NAMES, lines, depth, max_count);
            for (palette, inverted, title, count_name) in [
                ("perl", false, "Flame Graph", "samples"),
                ("hot", true, "A <title> & \"more\"", "ns"),
                ("java", false, "t", "a&b"),
                ("rust", true, "Flame Graph", "samples"),
            ] {
                let options = FlameOptions {
                    palette: parse_palette(palette).unwrap(),
                    title: title.to_string(),
                    inverted,
                    count_name: count_name.to_string(),
                    ..FlameOptions::default()
                };
                let (direct, inferno) = both(&paths, &options);
                let direct = direct.expect("drawn directly");
                assert_eq!(
                    direct, inferno,
                    "{lines} lines, {palette}, inverted {inverted}"
                );
                seen.truncated |= direct.contains("..</text>");
                seen.escaped |= direct.contains(">a&amp;b&lt;c&gt;&quot;d&apos;e (");
                seen.unicode |= direct.contains("naïve_ünïcödé_函数");
                seen.bare |= direct.contains(">schedule (");
                let mut unpruned = inferno_options(&options);
                unpruned.min_width = 0.0;
                let all = Layout::of(&paths, &unpruned).map_or(0, |l| l.frames.len());
                // One <rect> is the background.
                seen.pruned |= direct.matches("<rect").count() - 1 < all;
            }
        }
        let all = seen.truncated && seen.escaped && seen.unicode && seen.bare && seen.pruned;
        assert!(all, "{seen:?}");
    }

    #[test]
    fn leaves_to_inferno_what_it_would_read_otherwise() {
        for odd in ["has space", "semi;colon", "", "-", "--", "tab\there"] {
            let mut names = NAMES.to_vec();
            names.push(odd);
            let mut paths = random_paths(&names, 300, 8, 50);
            let odd_id = (names.len() - 1) as u32;
            paths.paths.push(FoldedPath {
                names: vec![0, odd_id].into(),
                count: 10_000,
            });
            let paths = FoldedPaths::sorted(paths.names, paths.paths);
            let (direct, _) = both(&paths, &FlameOptions::default());
            assert!(direct.is_none(), "{odd:?} is drawn by inferno");
        }
        let paths = random_paths(NAMES, 300, 8, 50);
        let reversed = FlameOptions {
            reverse: true,
            ..FlameOptions::default()
        };
        assert!(both(&paths, &reversed).0.is_none());
        // Only the root wide enough: inferno's own error SVG.
        let wide: Vec<String> = (0..20_000).map(|i| format!("f{i}")).collect();
        let wide_paths = (0..20_000u32)
            .map(|i| FoldedPath {
                names: vec![i].into(),
                count: 1,
            })
            .collect();
        let wide = FoldedPaths::sorted(wide, wide_paths);
        let (direct, inferno) = both(&wide, &FlameOptions::default());
        assert!(direct.is_none());
        assert!(inferno.contains("all (20,000 samples, 100%)"), "{inferno}");
    }
}
