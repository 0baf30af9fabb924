//! The interactive report browser (`scry report` on a terminal), drawn with
//! ratatui over its crossterm backend.
//!
//! `Browser` is plain state plus `handle_key` and `render`: it never touches
//! the terminal itself, so tests drive it with ratatui's `TestBackend` and
//! key codes. `browse` owns the real terminal (raw mode, alternate screen)
//! and restores it on every way out: `q`, an error, a panic (ratatui's
//! panic hook).
//!
//! Decisions: call trees are built on demand, when an entry is first
//! expanded (one pass over the samples for that entry), so opening the
//! browser costs no more than a flat report; zooming into a thread or a
//! binary rebuilds the flat profile with a filter, keeping percentages
//! absolute (shares of the whole file, as the text report prints). `a`
//! asks for the selected function's annotation: the browser cannot read
//! code (render reads no files), so `browse`'s caller makes the text
//! (`scry annotate`'s) and the browser shows it until Esc.

use std::collections::{HashMap, HashSet};
use std::io;

use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{List, ListItem, ListState, Paragraph};

use crate::analysis::calltree::{CallTree, GraphOrder, build_trees};
use crate::analysis::profile::{Profile, ProfileOptions, SortKey};
use crate::analysis::sample::{FrameId, FrameTable, ResolvedSample};

use super::report::{ReportMeta, key_cell};

/// One visible line of the browser.
#[derive(Clone, Debug)]
struct Row {
    entry: usize,
    /// Node of the entry's call tree; 0 is the entry line itself.
    node: u32,
    expandable: bool,
    text: String,
}

/// A text shown over the list (annotate's listing of a symbol) until Esc.
#[derive(Clone, Debug)]
struct TextView {
    title: String,
    lines: Vec<String>,
    scroll: usize,
}

/// What `a` asked for: a symbol's annotation, of one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AnnotateRequest {
    pub(crate) symbol: String,
    pub(crate) event: String,
}

/// What the view is narrowed to.
#[derive(Clone, Debug, Default, PartialEq)]
struct Zoom {
    thread: Option<(i32, String)>,
    dso: Option<String>,
}

/// The browser's state.
pub(crate) struct Browser<'a> {
    samples: &'a [ResolvedSample],
    frames: &'a FrameTable,
    meta: &'a ReportMeta,
    base: ProfileOptions,
    order: GraphOrder,
    zoom: Zoom,
    profile: Profile,
    section: usize,
    trees: HashMap<usize, CallTree>,
    expanded: HashSet<(usize, u32)>,
    search: Option<String>,
    /// Text being typed after `/`.
    typing: Option<String>,
    rows: Vec<Row>,
    state: ListState,
    quit: bool,
    view: Option<TextView>,
    annotate: Option<AnnotateRequest>,
    /// A line for the footer after a key that could not act.
    note: Option<String>,
}

impl<'a> Browser<'a> {
    pub(crate) fn new(
        samples: &'a [ResolvedSample],
        frames: &'a FrameTable,
        meta: &'a ReportMeta,
        options: ProfileOptions,
    ) -> Browser<'a> {
        let order = if options.children {
            GraphOrder::Caller
        } else {
            GraphOrder::Callee
        };
        let profile = Profile::build(samples, frames, &options);
        let mut browser = Browser {
            samples,
            frames,
            meta,
            base: options,
            order,
            zoom: Zoom::default(),
            profile,
            section: 0,
            trees: HashMap::new(),
            expanded: HashSet::new(),
            search: None,
            typing: None,
            rows: Vec::new(),
            state: ListState::default(),
            quit: false,
            view: None,
            annotate: None,
            note: None,
        };
        browser.rebuild_rows();
        browser
    }

    /// True once the user asked to leave.
    pub(crate) fn done(&self) -> bool {
        self.quit
    }

    /// Index of the selected row.
    #[cfg(test)]
    pub(crate) fn selected(&self) -> Option<usize> {
        self.state.selected()
    }

    /// The visible rows' text (for tests).
    #[cfg(test)]
    pub(crate) fn row_texts(&self) -> Vec<&str> {
        self.rows.iter().map(|r| r.text.as_str()).collect()
    }

    fn rebuild_profile(&mut self) {
        let mut options = self.base.clone();
        if let Some((tid, _)) = &self.zoom.thread {
            options.filter.tids = vec![*tid];
        }
        if let Some(dso) = &self.zoom.dso {
            options.filter.dsos = vec![dso.clone()];
        }
        self.profile = Profile::build(self.samples, self.frames, &options);
        self.section = self
            .section
            .min(self.profile.events.len().saturating_sub(1));
        self.trees.clear();
        self.expanded.clear();
        self.state.select(Some(0));
        self.rebuild_rows();
    }

    fn entry_text(&self, entry: usize) -> String {
        let Some(ev) = self.profile.events.get(self.section) else {
            return String::new();
        };
        let Some(e) = ev.entries.get(entry) else {
            return String::new();
        };
        let keys: Vec<String> = self
            .base
            .sort
            .iter()
            .map(|&k| key_cell(k, e, self.frames))
            .collect();
        let mark = if self.expanded.contains(&(entry, 0)) {
            '-'
        } else {
            '+'
        };
        if self.profile.children {
            format!(
                "{mark} {:>6.2}% {:>6.2}%  {}",
                ev.percent(e.children_period),
                ev.percent(e.self_period),
                keys.join("  ")
            )
        } else {
            format!(
                "{mark} {:>6.2}%  {}",
                ev.percent(e.self_period),
                keys.join("  ")
            )
        }
    }

    fn matches_search(&self, entry: usize) -> bool {
        let Some(query) = &self.search else {
            return true;
        };
        self.entry_text(entry)
            .to_lowercase()
            .contains(&query.to_lowercase())
    }

    fn rebuild_rows(&mut self) {
        let mut rows = Vec::new();
        let count = self
            .profile
            .events
            .get(self.section)
            .map_or(0, |ev| ev.entries.len());
        for entry in (0..count).filter(|&e| self.matches_search(e)) {
            rows.push(Row {
                entry,
                node: 0,
                expandable: true,
                text: self.entry_text(entry),
            });
            if self.expanded.contains(&(entry, 0))
                && let Some(tree) = self.trees.get(&entry)
            {
                self.push_nodes(&mut rows, tree, entry, 0, 1);
            }
        }
        self.rows = rows;
        match self.state.selected() {
            _ if self.rows.is_empty() => self.state.select(None),
            None => self.state.select(Some(0)),
            Some(i) if i >= self.rows.len() => self.state.select(Some(self.rows.len() - 1)),
            Some(_) => {}
        }
    }

    fn push_nodes(
        &self,
        rows: &mut Vec<Row>,
        tree: &CallTree,
        entry: usize,
        at: u32,
        depth: usize,
    ) {
        let total = self
            .profile
            .events
            .get(self.section)
            .map_or(0, |ev| ev.total_period);
        for child in tree.sorted_children(at) {
            let Some(node) = tree.node(child) else {
                continue;
            };
            let expandable = !node.children.is_empty();
            let open = self.expanded.contains(&(entry, child));
            let mark = match (expandable, open) {
                (false, _) => ' ',
                (true, true) => '-',
                (true, false) => '+',
            };
            let pct = if total == 0 {
                0.0
            } else {
                node.period as f64 * 100.0 / total as f64
            };
            let frame = self.frames.get(node.frame);
            let name = frame.sym.as_deref().unwrap_or("[unknown]");
            rows.push(Row {
                entry,
                node: child,
                expandable,
                text: format!("{}{mark} {pct:>6.2}%  {name}", "  ".repeat(depth)),
            });
            if open {
                self.push_nodes(rows, tree, entry, child, depth + 1);
            }
        }
    }

    fn toggle(&mut self) {
        let Some(row) = self
            .state
            .selected()
            .and_then(|i| self.rows.get(i))
            .cloned()
        else {
            return;
        };
        if !row.expandable {
            return;
        }
        let key = (row.entry, row.node);
        if self.expanded.remove(&key) {
            self.rebuild_rows();
            return;
        }
        if row.node == 0 && !self.trees.contains_key(&row.entry) {
            let mut built = build_trees(&self.profile, self.section, &[row.entry], self.order);
            if let Some(tree) = built.pop() {
                self.trees.insert(row.entry, tree);
            }
        }
        self.expanded.insert(key);
        // A chain of single children opens in one go, as perf's browser does.
        if let Some(tree) = self.trees.get(&row.entry) {
            let mut at = row.node;
            loop {
                let kids = tree.sorted_children(at);
                match kids.as_slice() {
                    [only] if tree.node(*only).is_some_and(|n| !n.children.is_empty()) => {
                        self.expanded.insert((row.entry, *only));
                        at = *only;
                    }
                    _ => break,
                }
            }
        }
        self.rebuild_rows();
    }

    /// The thread with the most samples in the selected entry.
    fn thread_of_selection(&self) -> Option<(i32, String)> {
        let row = self.state.selected().and_then(|i| self.rows.get(i))?;
        let ev = self.profile.events.get(self.section)?;
        let entry = ev.entries.get(row.entry)?;
        if let Some(tid) = entry.tid {
            let comm = self.samples.iter().find(|s| s.tid == tid)?.comm.to_string();
            return Some((tid, comm));
        }
        let sym = entry.frame.map(|f| self.profile.keys.sym_of(f));
        let mut counts: HashMap<i32, (u64, &str)> = HashMap::new();
        for s in self.samples.iter().filter(|s| s.event == ev.event) {
            let comm_ok = entry.comm.as_deref().is_none_or(|c| c == &*s.comm);
            let pid_ok = entry.pid.is_none_or(|p| p == s.pid);
            let sym_ok =
                sym.is_none_or(|sym| s.stack.iter().any(|&f| self.profile.keys.sym_of(f) == sym));
            if comm_ok && pid_ok && sym_ok {
                let slot = counts.entry(s.tid).or_insert((0, &s.comm));
                slot.0 = slot.0.saturating_add(s.period);
            }
        }
        counts
            .into_iter()
            .max_by_key(|(tid, (period, _))| (*period, -*tid))
            .map(|(tid, (_, comm))| (tid, comm.to_string()))
    }

    /// The frame of the selected line: its entry's, or its call-tree node's.
    fn frame_of_selection(&self) -> Option<FrameId> {
        let row = self.state.selected().and_then(|i| self.rows.get(i))?;
        let ev = self.profile.events.get(self.section)?;
        let entry = ev.entries.get(row.entry)?;
        match row.node {
            0 => entry.frame,
            n => Some(self.trees.get(&row.entry)?.node(n)?.frame),
        }
    }

    fn dso_of_selection(&self) -> Option<String> {
        let frame = self.frame_of_selection()?;
        Some(self.frames.get(frame).dso.to_string())
    }

    /// The annotation `a` asked for, once (the caller reads the file and
    /// hands the text back with [`Browser::show_text`]).
    pub(crate) fn take_annotate_request(&mut self) -> Option<AnnotateRequest> {
        self.annotate.take()
    }

    /// Shows `lines` over the list until Esc (tabs as spaces).
    pub(crate) fn show_text(&mut self, title: String, lines: Vec<String>) {
        let lines = lines.into_iter().map(|l| l.replace('\t', "    ")).collect();
        self.view = Some(TextView {
            title,
            lines,
            scroll: 0,
        });
    }

    fn request_annotate(&mut self) {
        let symbol = self
            .frame_of_selection()
            .and_then(|f| self.frames.get(f).sym.as_deref().map(str::to_string));
        let event = self
            .profile
            .events
            .get(self.section)
            .map(|ev| self.meta.event_name(ev.event).to_string());
        match (symbol, event) {
            (Some(symbol), Some(event)) => self.annotate = Some(AnnotateRequest { symbol, event }),
            _ => self.note = Some("a: the selected line names no function".to_string()),
        }
    }

    /// Keys of the text view: scroll, or leave.
    fn handle_view_key(&mut self, code: KeyCode) {
        let Some(view) = &mut self.view else {
            return;
        };
        let last = view.lines.len().saturating_sub(1);
        match code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('a') | KeyCode::Left => {
                self.view = None
            }
            KeyCode::Down | KeyCode::Char('j') => view.scroll = (view.scroll + 1).min(last),
            KeyCode::Up | KeyCode::Char('k') => view.scroll = view.scroll.saturating_sub(1),
            KeyCode::PageDown => view.scroll = (view.scroll + 20).min(last),
            KeyCode::PageUp => view.scroll = view.scroll.saturating_sub(20),
            KeyCode::Home => view.scroll = 0,
            KeyCode::End => view.scroll = last,
            _ => {}
        }
    }

    fn move_by(&mut self, delta: isize) {
        if self.rows.is_empty() {
            return;
        }
        let now = self.state.selected().unwrap_or(0) as isize;
        let last = self.rows.len() as isize - 1;
        self.state
            .select(Some((now + delta).clamp(0, last) as usize));
    }

    /// Applies one key press.
    pub(crate) fn handle_key(&mut self, code: KeyCode) {
        self.note = None;
        if self.view.is_some() {
            self.handle_view_key(code);
            return;
        }
        if let Some(text) = &mut self.typing {
            match code {
                KeyCode::Enter => {
                    let query = std::mem::take(text);
                    self.typing = None;
                    self.search = (!query.is_empty()).then_some(query);
                    self.state.select(Some(0));
                    self.rebuild_rows();
                }
                KeyCode::Esc => self.typing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) => text.push(c),
                _ => {}
            }
            return;
        }
        match code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Down | KeyCode::Char('j') => self.move_by(1),
            KeyCode::Up | KeyCode::Char('k') => self.move_by(-1),
            KeyCode::PageDown => self.move_by(20),
            KeyCode::PageUp => self.move_by(-20),
            KeyCode::Home => self.move_by(isize::MIN / 2),
            KeyCode::End => self.move_by(isize::MAX / 2),
            KeyCode::Enter | KeyCode::Char(' ') | KeyCode::Char('+') | KeyCode::Right => {
                self.toggle()
            }
            KeyCode::Left | KeyCode::Char('-') => {
                let selected = self
                    .state
                    .selected()
                    .and_then(|i| self.rows.get(i))
                    .cloned();
                if let Some(row) = selected
                    && self.expanded.contains(&(row.entry, row.node))
                {
                    self.toggle();
                }
            }
            KeyCode::Char('/') => self.typing = Some(String::new()),
            KeyCode::Char('a') => self.request_annotate(),
            KeyCode::Char('t') => {
                self.zoom.thread = match self.zoom.thread {
                    Some(_) => None,
                    None => self.thread_of_selection(),
                };
                self.rebuild_profile();
            }
            KeyCode::Char('d') => {
                self.zoom.dso = match self.zoom.dso {
                    Some(_) => None,
                    None => self.dso_of_selection(),
                };
                self.rebuild_profile();
            }
            KeyCode::Esc => {
                if self.search.is_some() {
                    self.search = None;
                    self.rebuild_rows();
                } else if self.zoom != Zoom::default() {
                    self.zoom = Zoom::default();
                    self.rebuild_profile();
                }
            }
            KeyCode::Tab => {
                let n = self.profile.events.len().max(1);
                self.section = (self.section + 1) % n;
                self.trees.clear();
                self.expanded.clear();
                self.state.select(Some(0));
                self.rebuild_rows();
            }
            _ => {}
        }
    }

    /// Draws the whole screen.
    pub(crate) fn render(&mut self, frame: &mut Frame) {
        let [head, body, foot] = Layout::vertical([
            Constraint::Length(3),
            Constraint::Min(1),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        if let Some(view) = &self.view {
            let title =
                Line::from(view.title.as_str()).style(Style::new().add_modifier(Modifier::BOLD));
            frame.render_widget(Paragraph::new(vec![title]), head);
            let lines: Vec<Line> = view.lines[view.scroll.min(view.lines.len())..]
                .iter()
                .map(|l| Line::from(l.as_str()))
                .collect();
            frame.render_widget(Paragraph::new(lines), body);
            frame.render_widget(Paragraph::new("Esc back  ↑↓ PgUp PgDn scroll"), foot);
            return;
        }

        let mut title = match self.profile.events.get(self.section) {
            Some(ev) => format!(
                "scry report: {} samples of '{}', event count {}",
                ev.nr_samples,
                self.meta.event_name(ev.event),
                ev.total_period
            ),
            None => "scry report: no samples".to_string(),
        };
        if self.profile.events.len() > 1 {
            title.push_str(&format!(
                "  [event {}/{}: Tab]",
                self.section + 1,
                self.profile.events.len()
            ));
        }
        let mut narrowing = Vec::new();
        if let Some((tid, comm)) = &self.zoom.thread {
            narrowing.push(format!("thread {tid} ({comm})"));
        }
        if let Some(dso) = &self.zoom.dso {
            narrowing.push(format!("dso {dso}"));
        }
        if let Some(query) = &self.search {
            narrowing.push(format!("search '{query}'"));
        }
        let zoom_line = if narrowing.is_empty() {
            String::new()
        } else {
            format!("zoom: {} (Esc clears)", narrowing.join(", "))
        };
        let quality = self
            .meta
            .quality_line
            .clone()
            .unwrap_or_else(|| self.meta.quality.line());
        let columns = if self.profile.children {
            "  Children   Self"
        } else {
            "  Overhead"
        };
        let keys: Vec<&str> = self
            .base
            .sort
            .iter()
            .map(|k: &SortKey| k.header())
            .collect();
        frame.render_widget(
            Paragraph::new(vec![
                Line::from(title).style(Style::new().add_modifier(Modifier::BOLD)),
                Line::from(if zoom_line.is_empty() {
                    quality
                } else {
                    zoom_line
                }),
                Line::from(format!("{columns}  {}", keys.join("  ")))
                    .style(Style::new().add_modifier(Modifier::UNDERLINED)),
            ]),
            head,
        );

        let items: Vec<ListItem> = self
            .rows
            .iter()
            .map(|r| ListItem::new(r.text.as_str()))
            .collect();
        let list = List::new(items).highlight_style(Style::new().add_modifier(Modifier::REVERSED));
        frame.render_stateful_widget(list, body, &mut self.state);

        let footer = match (&self.typing, &self.note) {
            (Some(text), _) => format!("/{text}"),
            (None, Some(note)) => note.clone(),
            (None, None) => "q quit  ↑↓ move  ⏎ expand/collapse  a annotate  t thread  d dso  / search  Esc unzoom  Tab event"
                .to_string(),
        };
        frame.render_widget(Paragraph::new(footer), foot);
    }
}

/// Runs the browser on the terminal until `q`; the terminal is restored on
/// every way out.
pub(crate) fn browse(
    samples: &[ResolvedSample],
    frames: &FrameTable,
    meta: &ReportMeta,
    options: ProfileOptions,
    annotate: &mut dyn FnMut(&AnnotateRequest) -> Vec<String>,
) -> io::Result<()> {
    let mut browser = Browser::new(samples, frames, meta, options);
    let mut terminal = ratatui::try_init()?;
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            ratatui::restore();
        }
    }
    let _restore = Restore;
    while !browser.done() {
        terminal.draw(|f| browser.render(f))?;
        if let Event::Key(key) = event::read()?
            && key.kind == KeyEventKind::Press
        {
            browser.handle_key(key.code);
        }
        if let Some(request) = browser.take_annotate_request() {
            let lines = annotate(&request);
            browser.show_text(
                format!("annotate {} ({})", request.symbol, request.event),
                lines,
            );
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "tui_tests.rs"]
mod tests;
