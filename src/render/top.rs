//! `scry top`'s screens: the `--stdio` refresh (perf top --stdio's layout:
//! a `PerfTop:` status line, a rule, then `Overhead  Shared Object  Symbol`
//! rows) and the full-screen terminal view drawn with ratatui.
//!
//! Both draw from a `TopView`, plain data built by the command from the
//! decayed profile, so the terminal layout is tested with ratatui's
//! `TestBackend` without a kernel or a terminal.

use std::io::{self, Write};

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, TableState};

/// The status of the capture, for the first line.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopStatus {
    /// Samples per second over the last interval.
    pub(crate) samples_per_sec: f64,
    /// Share of the last interval's samples taken in the kernel.
    pub(crate) kernel_pct: f64,
    /// Records the kernel reported lost since the start.
    pub(crate) lost: u64,
    /// `4000Hz cpu-clock`.
    pub(crate) event: String,
    /// `all, 2 CPUs` or `pid 1234`.
    pub(crate) scope: String,
}

impl TopStatus {
    /// `PerfTop:    7911 irqs/sec  kernel:14.9% lost: 0 [4000Hz cpu-clock],  (all, 2 CPUs)`
    pub(crate) fn line(&self) -> String {
        format!(
            "   PerfTop: {:7.0} irqs/sec  kernel:{:4.1}%  lost: {} [{}],  ({})",
            self.samples_per_sec, self.kernel_pct, self.lost, self.event, self.scope
        )
    }
}

/// One table row: percentages and the key cells.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TopRow {
    /// `Children` when computed (with -g), else `Overhead`.
    pub(crate) percent: f64,
    /// `Self` when children are computed.
    pub(crate) self_percent: Option<f64>,
    pub(crate) samples: u64,
    pub(crate) cells: Vec<String>,
}

/// Everything one screen shows.
#[derive(Clone, Debug, Default)]
pub(crate) struct TopView {
    pub(crate) status: TopStatus,
    /// Column headers of the key cells (`Shared Object`, `Symbol`).
    pub(crate) headers: Vec<String>,
    /// `-n`: a `Samples` column after the percentages, as perf top's.
    pub(crate) show_samples: bool,
    pub(crate) rows: Vec<TopRow>,
    /// The call graph of the selected row, as text lines (with -g).
    pub(crate) detail: Vec<String>,
    /// `/` search text, when searching.
    pub(crate) search: Option<String>,
}

/// The `--stdio` screen, written once per refresh.
pub(crate) fn write_stdio(w: &mut impl Write, view: &TopView, max_rows: usize) -> io::Result<()> {
    writeln!(w, "{}", view.status.line())?;
    writeln!(w, "{}", "-".repeat(79))?;
    writeln!(w)?;
    let children = view.rows.first().is_some_and(|r| r.self_percent.is_some());
    let widths = cell_widths(view, max_rows);
    if children {
        write!(w, "{:>9} {:>8}  ", "Children", "Self")?;
    } else {
        write!(w, "{:>9}  ", "Overhead")?;
    }
    if view.show_samples {
        write!(w, "{:>12}  ", "Samples")?;
    }
    let last = view.headers.len().saturating_sub(1);
    for (i, (h, width)) in view.headers.iter().zip(&widths).enumerate() {
        if i == last {
            write!(w, "{h}")?;
        } else {
            write!(w, "{h:<width$}  ")?;
        }
    }
    writeln!(w)?;
    for row in view.rows.iter().take(max_rows) {
        match row.self_percent {
            Some(self_pct) => write!(w, "{:>8.2}% {:>7.2}%  ", row.percent, self_pct)?,
            None => write!(w, "{:>8.2}%  ", row.percent)?,
        }
        if view.show_samples {
            write!(w, "{:>12}  ", row.samples)?;
        }
        let last = row.cells.len().saturating_sub(1);
        for (i, (cell, width)) in row.cells.iter().zip(&widths).enumerate() {
            if i == last {
                write!(w, "{cell}")?;
            } else {
                write!(w, "{cell:<width$}  ")?;
            }
        }
        writeln!(w)?;
    }
    writeln!(w)
}

/// Widths of the key columns over the header and the first `rows` rows.
fn cell_widths(view: &TopView, rows: usize) -> Vec<usize> {
    view.headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            view.rows
                .iter()
                .take(rows)
                .filter_map(|r| r.cells.get(i))
                .map(|c| c.chars().count())
                .chain(std::iter::once(h.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Rows shown with the current search applied: (index into `view.rows`).
pub(crate) fn visible_rows(view: &TopView) -> Vec<usize> {
    let needle = view.search.as_deref().unwrap_or("").to_lowercase();
    (0..view.rows.len())
        .filter(|&i| {
            needle.is_empty()
                || view.rows[i]
                    .cells
                    .iter()
                    .any(|c| c.to_lowercase().contains(&needle))
        })
        .collect()
}

/// The smallest terminal the table fits in.
pub(crate) const MIN_WIDTH: u16 = 40;
pub(crate) const MIN_HEIGHT: u16 = 6;

/// Draws the full-screen view; `selected` indexes `visible_rows(view)`.
pub(crate) fn draw(frame: &mut Frame<'_>, view: &TopView, table_state: &mut TableState) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!(
            "terminal too small ({}x{}); need {MIN_WIDTH}x{MIN_HEIGHT} — q quits",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(msg), area);
        return;
    }
    let detail_height = if view.detail.is_empty() {
        0
    } else {
        (area.height / 3).max(3)
    };
    let [status, table_area, detail_area, help] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(detail_height),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(
        Paragraph::new(view.status.line()).style(Style::default().add_modifier(Modifier::BOLD)),
        status,
    );
    draw_table(frame, view, table_state, table_area);
    if detail_height > 0 {
        let lines: Vec<Line> = view.detail.iter().map(|l| Line::raw(l.clone())).collect();
        frame.render_widget(Paragraph::new(lines), detail_area);
    }
    let help_text = match &view.search {
        Some(s) => format!("/{s}  (Enter: keep, Esc: clear)"),
        None => "q quit  ↑↓ move  Enter call graph  / search".to_string(),
    };
    frame.render_widget(Paragraph::new(Line::from(Span::raw(help_text))), help);
}

fn draw_table(frame: &mut Frame<'_>, view: &TopView, table_state: &mut TableState, area: Rect) {
    let children = view.rows.first().is_some_and(|r| r.self_percent.is_some());
    let mut header: Vec<String> = if children {
        vec!["Children".into(), "Self".into()]
    } else {
        vec!["Overhead".into()]
    };
    if view.show_samples {
        header.push(format!("{:>12}", "Samples"));
    }
    header.extend(view.headers.iter().cloned());
    let widths_cells = cell_widths(view, area.height as usize);
    let mut widths: Vec<Constraint> = vec![Constraint::Length(9)];
    if children {
        widths.push(Constraint::Length(8));
    }
    if view.show_samples {
        widths.push(Constraint::Length(12));
    }
    let last = widths_cells.len().saturating_sub(1);
    for (i, w) in widths_cells.iter().enumerate() {
        widths.push(if i == last {
            Constraint::Min(10)
        } else {
            Constraint::Length(*w as u16)
        });
    }
    let rows: Vec<Row> = visible_rows(view)
        .into_iter()
        .map(|i| {
            let r = &view.rows[i];
            let mut cells = vec![format!("{:>8.2}%", r.percent)];
            if let Some(s) = r.self_percent {
                cells.push(format!("{s:>7.2}%"));
            }
            if view.show_samples {
                cells.push(format!("{:>12}", r.samples));
            }
            cells.extend(r.cells.iter().cloned());
            Row::new(cells)
        })
        .collect();
    let table = Table::new(rows, widths)
        .header(Row::new(header).style(Style::default().add_modifier(Modifier::UNDERLINED)))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    frame.render_stateful_widget(table, area, table_state);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn view() -> TopView {
        TopView {
            status: TopStatus {
                samples_per_sec: 3998.0,
                kernel_pct: 1.5,
                lost: 0,
                event: "4000Hz cpu-clock".into(),
                scope: "all, 2 CPUs".into(),
            },
            headers: vec!["Shared Object".into(), "Symbol".into()],
            rows: vec![
                TopRow {
                    percent: 75.0,
                    self_percent: None,
                    samples: 3,
                    cells: vec!["cpu7525".into(), "[.] hot_a".into()],
                },
                TopRow {
                    percent: 25.0,
                    self_percent: None,
                    samples: 1,
                    cells: vec!["cpu7525".into(), "[.] hot_b".into()],
                },
            ],
            detail: Vec::new(),
            search: None,
            show_samples: false,
        }
    }

    #[test]
    fn stdio_layout() {
        let mut out = Vec::new();
        write_stdio(&mut out, &view(), 10).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("   PerfTop:    3998 irqs/sec  kernel: 1.5%"),
            "{text}"
        );
        assert_eq!(lines[3], " Overhead  Shared Object  Symbol");
        assert_eq!(lines[4], "   75.00%  cpu7525        [.] hot_a");
        assert_eq!(lines[5], "   25.00%  cpu7525        [.] hot_b");
    }

    #[test]
    fn terminal_view_shows_the_hot_rows_and_search_filters() {
        let mut terminal = Terminal::new(TestBackend::new(80, 12)).unwrap();
        let mut state = TableState::default().with_selected(Some(0));
        let mut v = view();
        terminal.draw(|f| draw(f, &v, &mut state)).unwrap();
        let screen = format!("{:?}", terminal.backend().buffer());
        assert!(screen.contains("PerfTop:"), "{screen}");
        assert!(
            screen.contains("[.] hot_a") && screen.contains("[.] hot_b"),
            "{screen}"
        );
        v.search = Some("hot_b".into());
        assert_eq!(visible_rows(&v), vec![1]);
        terminal.draw(|f| draw(f, &v, &mut state)).unwrap();
        let screen = format!("{:?}", terminal.backend().buffer());
        assert!(
            !screen.contains("[.] hot_a") && screen.contains("[.] hot_b"),
            "{screen}"
        );
    }

    #[test]
    fn tiny_terminal_says_so() {
        let mut terminal = Terminal::new(TestBackend::new(20, 4)).unwrap();
        let mut state = TableState::default();
        terminal.draw(|f| draw(f, &view(), &mut state)).unwrap();
        let screen = format!("{:?}", terminal.backend().buffer());
        assert!(screen.contains("terminal too"), "{screen}");
    }
}
