//! `scry top`'s screen over a live profile (`analysis::top::LiveTop`): the
//! `--stdio` table printed at each refresh, or the full-screen terminal
//! view with its keys (move, `/` search, Enter for the selected row's call
//! graph). `render::top` draws; this module turns the profile into the
//! `TopView` it draws from and keeps the terminal's state.
//!
//! The terminal is used only when asked for (no `--stdio`) and stdout is
//! one; dropping the screen gives it back (on an error too).

use std::io::{self, IsTerminal, Write};
use std::time::Duration;

use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::widgets::TableState;

use super::report::{key_cell, write_tree};
use super::top::{self, TopRow, TopView};
use crate::analysis::calltree::{GraphOrder, build_trees};
use crate::analysis::profile::Profile;
use crate::analysis::sample::FrameTable;
use crate::analysis::top::LiveTop;

/// Entries of the profile a view holds.
const MAX_ROWS: usize = 500;

/// Where the view goes.
enum Output {
    Stdio(io::BufWriter<io::Stdout>),
    Terminal(Box<TerminalState>),
}

struct TerminalState {
    terminal: DefaultTerminal,
    table: TableState,
    searching: bool,
    show_graph: bool,
}

/// The view of a live profile and where it is drawn.
pub(crate) struct TopScreen {
    output: Output,
    view: TopView,
    /// Rows printed per refresh with `--stdio`.
    rows: usize,
}

impl TopScreen {
    /// The terminal view unless `stdio` is asked for or stdout is not a
    /// terminal; `view` holds the status line's event and scope, the
    /// column headers and `-n`.
    pub(crate) fn open(stdio: bool, rows: usize, view: TopView) -> io::Result<TopScreen> {
        let output = if !stdio && io::stdout().is_terminal() {
            Output::Terminal(Box::new(TerminalState {
                terminal: ratatui::try_init()?,
                table: TableState::default().with_selected(Some(0)),
                searching: false,
                show_graph: false,
            }))
        } else {
            Output::Stdio(io::BufWriter::new(io::stdout()))
        };
        Ok(TopScreen { output, view, rows })
    }

    /// Whether the full-screen view is up (it reads keys between refreshes).
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(self.output, Output::Terminal(_))
    }

    /// The view after a refresh of `top`: its rows and status.
    pub(crate) fn show(&mut self, top: &LiveTop) {
        let rates = top.rates();
        self.view.status.samples_per_sec = rates.samples_per_sec;
        self.view.status.kernel_pct = rates.kernel_pct;
        self.view.status.lost = rates.lost;
        self.view.rows = top
            .profile()
            .map(|profile| rows(profile, top))
            .unwrap_or_default();
        self.update_graph(top);
    }

    /// The call graph of the selected row, in the terminal view.
    fn update_graph(&mut self, top: &LiveTop) {
        self.view.detail.clear();
        let Output::Terminal(screen) = &self.output else {
            return;
        };
        let (Some(profile), true) = (top.profile(), screen.show_graph) else {
            return;
        };
        let visible = top::visible_rows(&self.view);
        let Some(&entry) = screen.table.selected().and_then(|s| visible.get(s)) else {
            return;
        };
        self.view.detail = graph_lines(profile, entry, top.frames());
        if self.view.detail.is_empty() {
            self.view
                .detail
                .push("(no call graph: record with -g)".to_string());
        }
    }

    /// Handles pending keys; false when the user quits.
    pub(crate) fn keys(&mut self, top: &LiveTop) -> io::Result<bool> {
        let Output::Terminal(screen) = &mut self.output else {
            return Ok(true);
        };
        let mut changed = false;
        while event::poll(Duration::ZERO)? {
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
                return Ok(false);
            }
            if screen.searching {
                match key.code {
                    KeyCode::Enter => screen.searching = false,
                    KeyCode::Esc => {
                        screen.searching = false;
                        self.view.search = None;
                    }
                    KeyCode::Backspace => {
                        if let Some(s) = &mut self.view.search {
                            s.pop();
                        }
                    }
                    KeyCode::Char(c) => self.view.search.get_or_insert_with(String::new).push(c),
                    _ => {}
                }
                screen.table.select(Some(0));
                changed = true;
                continue;
            }
            match key.code {
                KeyCode::Char('q') | KeyCode::Esc => return Ok(false),
                KeyCode::Down | KeyCode::Char('j') => screen.table.select_next(),
                KeyCode::Up | KeyCode::Char('k') => screen.table.select_previous(),
                KeyCode::PageDown => screen.table.scroll_down_by(10),
                KeyCode::PageUp => screen.table.scroll_up_by(10),
                KeyCode::Enter | KeyCode::Char('+') => screen.show_graph = !screen.show_graph,
                KeyCode::Char('/') => {
                    screen.searching = true;
                    self.view.search = Some(String::new());
                }
                _ => {}
            }
            changed = true;
        }
        if changed {
            self.update_graph(top);
        }
        Ok(true)
    }

    /// Prints (`--stdio`) or draws the view.
    pub(crate) fn draw(&mut self) -> io::Result<()> {
        match &mut self.output {
            Output::Stdio(out) => {
                top::write_stdio(out, &self.view, self.rows)?;
                out.flush()
            }
            Output::Terminal(screen) => {
                let view = &self.view;
                let table = &mut screen.table;
                screen.terminal.draw(|f| top::draw(f, view, table))?;
                Ok(())
            }
        }
    }
}

/// Gives the terminal back.
impl Drop for TopScreen {
    fn drop(&mut self) {
        if self.is_terminal() {
            ratatui::restore();
        }
    }
}

/// The profile's first event's entries as rows: Children and Self with
/// call graphs, else Overhead; a cell per sort key.
fn rows(profile: &Profile, top: &LiveTop) -> Vec<TopRow> {
    let Some(section) = profile.events.first() else {
        return Vec::new();
    };
    let total = section.total_period.max(1) as f64;
    section
        .entries
        .iter()
        .take(MAX_ROWS)
        .map(|entry| {
            let (percent, self_percent) = if profile.children {
                (
                    entry.children_period as f64 * 100.0 / total,
                    Some(entry.self_period as f64 * 100.0 / total),
                )
            } else {
                (entry.self_period as f64 * 100.0 / total, None)
            };
            TopRow {
                percent,
                self_percent,
                samples: if profile.children {
                    entry.children_samples
                } else {
                    entry.self_samples
                },
                cells: top
                    .options()
                    .sort
                    .iter()
                    .map(|&k| key_cell(k, entry, top.frames()))
                    .collect(),
            }
        })
        .collect()
}

/// The callee graph under entry `entry`, as perf's tree lines (none
/// without call chains).
fn graph_lines(profile: &Profile, entry: usize, frames: &FrameTable) -> Vec<String> {
    let trees = build_trees(profile, 0, &[entry], GraphOrder::Callee);
    let total = profile.events.first().map_or(0, |e| e.total_period);
    let mut text = Vec::new();
    match trees.first() {
        Some(tree) if write_tree(&mut text, tree, frames, total, 0.5).is_ok() => {
            String::from_utf8_lossy(&text)
                .lines()
                .map(str::to_string)
                .collect()
        }
        _ => Vec::new(),
    }
}
