//! `scry serve`'s answers: the page and its assets (compiled in), and the
//! views of a file: `/api/files` (what is served: names, events, threads),
//! `/api/flamegraph` (inferno's SVG: flame graph, icicle, a heat map
//! selection, the diff of two files), `/api/heatmap` (the offset map's
//! grid as SVG), `/api/calltree` (the report's JSON: functions with self
//! and total).
//!
//! Parameters are checked before any work: only the names a path takes,
//! each once, short values, numbers in range, files by index. A bad one
//! is a 400 (404 for a file or selection that is not there) with one
//! `scry: ...` line; nothing a request holds reaches a file name. Every
//! answer carries the Content-Security-Policy (`CSP`).
//!
//! Answers are kept (`Memo`, by path and parameters, bounded in bytes): a
//! served file does not change, and a big file's flame graph takes a
//! while to draw; asked again (the page asks again on each filter change
//! back), it is sent as made.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State as Shared};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use scry::analysis::folded::{FoldOptions, FoldedStacks};
use scry::analysis::heatmap::{OffsetHeatmap, OffsetOptions, OffsetWindow};
use scry::analysis::profile::{Profile, ProfileOptions, SampleFilter, SortKey};
use scry::analysis::quality::QualitySummary;
use scry::model::sample::ResolvedSample;
use scry::render::flamegraph::{FlameOptions, inert_svg, write_diff_svg, write_svg};
use scry::render::folded::{FoldedOptions, folded_lines};
use scry::render::heatmap::write_offset_svg;
use scry::render::report::{ReportInput, ReportMeta, ReportOptions};
use scry::render::report_json::write_json;

use super::{Served, State};

const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// The page may load its own script and style and ask the server; nothing
/// else, from nowhere else (no inline script or style either).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                   connect-src 'self'; img-src 'self'; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

/// The longest parameter value taken (a number or `COL.ROW`).
const MAX_VALUE: usize = 24;

/// The most cells a heat map may have (rows times seconds).
const MAX_CELLS: u64 = 2_000_000;

/// A request that cannot be answered: its status and why.
#[derive(Debug)]
struct Bad(StatusCode, String);

impl IntoResponse for Bad {
    fn into_response(self) -> Response {
        let text = format!("scry: {}\n", self.1);
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            text,
        )
            .into_response()
    }
}

fn bad(text: impl Into<String>) -> Bad {
    Bad(StatusCode::BAD_REQUEST, text.into())
}

fn missing(text: impl Into<String>) -> Bad {
    Bad(StatusCode::NOT_FOUND, text.into())
}

pub(super) fn router(state: Arc<State>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", PAGE) }),
        )
        .route(
            "/page.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/page.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/api/files", get(files))
        .route("/api/flamegraph", get(flamegraph))
        .route("/api/heatmap", get(heatmap))
        .route("/api/calltree", get(calltree))
        .fallback(|| async { missing("no such page (the viewer is at /)") })
        .with_state(state)
        .layer(axum::middleware::map_response(secure))
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

type Pairs = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// What a view was asked for.
#[derive(Debug, Default)]
struct Params {
    file: usize,
    event: Option<usize>,
    pid: Option<i32>,
    tid: Option<i32>,
    rows: Option<u32>,
    from: Option<(u32, u32)>,
    to: Option<(u32, u32)>,
    base: Option<usize>,
    inverted: bool,
}

fn number<T: std::str::FromStr>(name: &str, value: &str, what: &str) -> Result<T, Bad> {
    value
        .parse()
        .map_err(|_| bad(format!("{name}={value}: not {what}")))
}

fn cell(name: &str, value: &str) -> Result<(u32, u32), Bad> {
    value
        .split_once('.')
        .and_then(|(c, r)| Some((c.parse().ok()?, r.parse().ok()?)))
        .ok_or_else(|| bad(format!("{name}={value}: not a cell (SECOND.ROW, as 2.5)")))
}

fn file_index(state: &State, name: &str, value: &str) -> Result<usize, Bad> {
    let n: usize = number(name, value, "a file's index")?;
    if n >= state.files.len() {
        return Err(missing(format!(
            "{name}={n}: no such file (serving {}, numbered from 0)",
            state.files.len()
        )));
    }
    Ok(n)
}

/// Parses the query of a path that takes the parameters `allowed`.
fn params(state: &State, query: Pairs, allowed: &[&str]) -> Result<Params, Bad> {
    let Query(pairs) = query.map_err(|e| bad(format!("bad query: {}", e.body_text())))?;
    let mut p = Params::default();
    let mut seen: Vec<&str> = Vec::new();
    for (name, value) in &pairs {
        let Some(&known) = allowed.iter().find(|a| **a == name) else {
            let shown: String = name.chars().take(MAX_VALUE).collect();
            return Err(bad(format!(
                "unknown parameter '{shown}' (this path takes: {})",
                allowed.join(", ")
            )));
        };
        if seen.contains(&known) {
            return Err(bad(format!("{known} given twice")));
        }
        seen.push(known);
        if value.len() > MAX_VALUE {
            return Err(bad(format!(
                "{known}: a value of {} bytes (at most {MAX_VALUE})",
                value.len()
            )));
        }
        match known {
            "file" => p.file = file_index(state, known, value)?,
            "base" => p.base = Some(file_index(state, known, value)?),
            "event" => p.event = Some(number(known, value, "an event's index")?),
            "pid" => p.pid = Some(number(known, value, "a process id")?),
            "tid" => p.tid = Some(number(known, value, "a thread id")?),
            "rows" => {
                let rows: u32 = number(known, value, "a number of rows")?;
                if !(1..=1000).contains(&rows) {
                    return Err(bad(format!(
                        "rows={rows}: a second splits into 1 to 1000 rows"
                    )));
                }
                p.rows = Some(rows);
            }
            "from" => p.from = Some(cell(known, value)?),
            "to" => p.to = Some(cell(known, value)?),
            "inverted" => {
                p.inverted = match value.as_str() {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    _ => return Err(bad(format!("inverted={value}: 0 or 1"))),
                }
            }
            _ => {}
        }
    }
    let served = &state.files[p.file];
    if let Some(event) = p.event
        && event >= served.resolved.events.len()
    {
        return Err(bad(format!(
            "event={event}: {} has {} events (numbered from 0)",
            served.name,
            served.resolved.events.len()
        )));
    }
    Ok(p)
}

/// A view's answer: what the memo keeps.
#[derive(Clone, Debug)]
struct Answer {
    kind: &'static str,
    body: Bytes,
    /// `x-scry-samples`: the samples a flame graph drew.
    samples: Option<u64>,
}

impl Answer {
    fn new(kind: &'static str, body: impl Into<Bytes>) -> Self {
        Answer {
            kind,
            body: body.into(),
            samples: None,
        }
    }

    fn into_response(self) -> Response {
        let mut response = ([(header::CONTENT_TYPE, self.kind)], self.body).into_response();
        if let Some(n) = self.samples {
            response
                .headers_mut()
                .insert("x-scry-samples", HeaderValue::from(n));
        }
        response
    }
}

/// The answers made so far by path and parameters (see the module doc);
/// emptied when they would pass `MEMO_BYTES`.
#[derive(Debug, Default)]
pub(super) struct Memo(Mutex<(HashMap<String, Answer>, usize)>);

/// The most bytes of answers kept.
const MEMO_BYTES: usize = 256 << 20;

impl Memo {
    fn get(&self, key: &str) -> Option<Answer> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.0.get(key).cloned()
    }

    fn put(&self, key: String, answer: &Answer) {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (answers, bytes) = &mut *kept;
        if *bytes + answer.body.len() > MEMO_BYTES {
            answers.clear();
            *bytes = 0;
        }
        if answer.body.len() <= MEMO_BYTES {
            *bytes += answer.body.len();
            if let Some(old) = answers.insert(key, answer.clone()) {
                *bytes -= old.body.len();
            }
        }
    }
}

/// Runs a view on the blocking pool (the work is CPU-bound), or sends
/// the answer it made before to the same parameters.
async fn answer(
    state: Arc<State>,
    query: Pairs,
    allowed: &'static [&'static str],
    view: fn(&State, &Params) -> Result<Answer, Bad>,
) -> Response {
    let result = tokio::task::spawn_blocking(move || -> Result<Answer, Bad> {
        let p = params(&state, query, allowed)?;
        let key = format!("{:x} {p:?}", view as usize);
        if let Some(kept) = state.memo.get(&key) {
            return Ok(kept);
        }
        let made = view(&state, &p)?;
        state.memo.put(key, &made);
        Ok(made)
    })
    .await;
    match result {
        Ok(Ok(answer)) => answer.into_response(),
        Ok(Err(bad)) => bad.into_response(),
        Err(_) => Bad(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the view failed (the server goes on)".into(),
        )
        .into_response(),
    }
}

fn svg(body: Vec<u8>) -> Answer {
    Answer::new("image/svg+xml", body)
}

fn json(body: Vec<u8>) -> Answer {
    Answer::new("application/json", body)
}

/// The samples of the process and thread asked for (all when none is).
fn chosen<'a>(served: &'a Served, p: &Params) -> Cow<'a, [ResolvedSample]> {
    let samples = &served.resolved.samples;
    if p.pid.is_none() && p.tid.is_none() {
        return Cow::Borrowed(samples);
    }
    Cow::Owned(
        samples
            .iter()
            .filter(|s| p.pid.is_none_or(|pid| s.pid == pid) && p.tid.is_none_or(|t| s.tid == t))
            .cloned()
            .collect(),
    )
}

/// The event a view shows: the one asked for, or the first sample's (as
/// `scry flamegraph` and `scry heatmap` pick it).
fn event_of(served: &Served, p: &Params) -> usize {
    p.event
        .or_else(|| served.resolved.samples.first().map(|s| s.event))
        .unwrap_or(0)
}

/// The offset map's window over `samples`, bounded in cells.
fn window(samples: &[ResolvedSample], options: &OffsetOptions) -> Result<OffsetWindow, Bad> {
    let window = OffsetWindow::of(samples, options).map_err(|e| {
        missing(format!(
            "no heat map: {e} (of this event, process and thread)"
        ))
    })?;
    let cells = u64::from(window.columns) * u64::from(window.rows);
    if cells > MAX_CELLS {
        return Err(bad(format!(
            "{} s of {} rows are {cells} cells (at most {MAX_CELLS}): ask for fewer rows",
            window.columns, window.rows
        )));
    }
    Ok(window)
}

async fn files(Shared(state): Shared<Arc<State>>, query: Pairs) -> Response {
    answer(state, query, &[], |state, _| {
        let list: Vec<serde_json::Value> = state
            .files
            .iter()
            .enumerate()
            .map(|(index, f)| {
                serde_json::json!({
                    "index": index,
                    "name": f.name,
                    "events": f.resolved.events.iter().map(|e| &e.name).collect::<Vec<_>>(),
                    "event": event_of(f, &Params::default()),
                    "samples": f.resolved.samples.iter().map(|s| s.count).sum::<u64>(),
                    "threads": f.threads,
                })
            })
            .collect();
        Ok(json(serde_json::to_vec(&list).unwrap_or_default()))
    })
    .await
}

/// Folded lines of one event of `samples`, kernel frames marked, as `scry
/// flamegraph` draws them.
fn fold(samples: &[ResolvedSample], served: &Served, event: usize) -> Vec<String> {
    let folded = FoldedStacks::build(samples, &FoldOptions { event: Some(event) });
    folded_lines(
        &folded,
        &served.resolved.frames,
        FoldedOptions {
            annotate_kernel: true,
        },
    )
}

/// Samples of `event` with a stack (those a flame graph draws).
fn count(samples: &[ResolvedSample], event: usize) -> u64 {
    samples
        .iter()
        .filter(|s| s.event == event && !s.stack.is_empty())
        .map(|s| s.count)
        .sum()
}

const FLAME_PARAMS: &[&str] = &[
    "file", "event", "pid", "tid", "rows", "from", "to", "base", "inverted",
];

fn flame_view(state: &State, p: &Params) -> Result<Answer, Bad> {
    let served = &state.files[p.file];
    let samples = chosen(served, p);
    let event = event_of(served, p);
    let title;
    let samples_drawn;
    let lines = match (p.from, p.to) {
        (None, None) => {
            title = served.name.clone();
            samples_drawn = count(&samples, event);
            fold(&samples, served, event)
        }
        (Some(from), Some(to)) => {
            let options = OffsetOptions {
                rows: p.rows.unwrap_or(50),
                event: Some(event),
            };
            let window = window(&samples, &options)?;
            let index = |name: &str, (col, row): (u32, u32)| {
                if col >= window.columns || row >= window.rows {
                    return Err(bad(format!(
                        "{name}={col}.{row}: the map has {} seconds of {} rows",
                        window.columns, window.rows
                    )));
                }
                Ok(col as usize * window.rows as usize + row as usize)
            };
            let (a, b) = (index("from", from)?, index("to", to)?);
            let picked = window.samples_in(&samples, &options, a.min(b), a.max(b));
            title = format!(
                "{}: {}.{} to {}.{}",
                served.name, from.0, from.1, to.0, to.1
            );
            samples_drawn = count(&picked, event);
            fold(&picked, served, event)
        }
        _ => return Err(bad("from and to go together")),
    };
    if lines.is_empty() {
        // An empty selection is an answer, not an error.
        let text = "no samples with stacks here (of this event, process, thread and range)\n";
        return Ok(Answer::new("text/plain; charset=utf-8", text));
    }
    let options = FlameOptions {
        title,
        inverted: p.inverted,
        ..FlameOptions::default()
    };
    let mut out = Vec::new();
    let drawn = match p.base {
        Some(base) => {
            let before_file = &state.files[base];
            let before = fold(
                &before_file.resolved.samples,
                before_file,
                event_of(before_file, &Params::default()),
            );
            write_diff_svg(&before, &lines, &options, &mut out)
        }
        None => write_svg(&lines, &options, &mut out),
    };
    drawn.map_err(|e| bad(format!("flame graph: {e}")))?;
    let inert = inert_svg(&String::from_utf8_lossy(&out));
    let mut answer = svg(inert.into_bytes());
    answer.samples = Some(samples_drawn);
    Ok(answer)
}

async fn flamegraph(Shared(state): Shared<Arc<State>>, query: Pairs) -> Response {
    answer(state, query, FLAME_PARAMS, flame_view).await
}

async fn heatmap(Shared(state): Shared<Arc<State>>, query: Pairs) -> Response {
    const ALLOWED: &[&str] = &["file", "event", "pid", "tid", "rows"];
    answer(state, query, ALLOWED, |state, p| {
        let served = &state.files[p.file];
        let samples = chosen(served, p);
        let options = OffsetOptions {
            rows: p.rows.unwrap_or(50),
            event: Some(event_of(served, p)),
        };
        window(&samples, &options)?;
        let map = OffsetHeatmap::build(&samples, &options)
            .map_err(|e| missing(format!("no heat map: {e}")))?;
        let mut out = Vec::new();
        write_offset_svg(&map, &mut out).map_err(|e| bad(format!("heat map: {e}")))?;
        Ok(svg(out))
    })
    .await
}

async fn calltree(Shared(state): Shared<Arc<State>>, query: Pairs) -> Response {
    const ALLOWED: &[&str] = &["file", "pid", "tid"];
    answer(state, query, ALLOWED, |state, p| {
        let served = &state.files[p.file];
        let resolved = &served.resolved;
        let sort = vec![SortKey::Dso, SortKey::Sym];
        let options = ProfileOptions {
            sort: sort.clone(),
            children: true,
            filter: SampleFilter {
                pids: p.pid.into_iter().collect(),
                tids: p.tid.into_iter().collect(),
                ..SampleFilter::default()
            },
            ..ProfileOptions::default()
        };
        let profile = Profile::build(&resolved.samples, &resolved.frames, &options);
        let meta = ReportMeta {
            event_names: resolved.events.iter().map(|e| e.name.clone()).collect(),
            lost_samples: resolved.lost,
            quality: QualitySummary::from_samples(&resolved.samples, &resolved.frames),
            quality_line: None,
        };
        let report = ReportOptions {
            sort,
            ..ReportOptions::default()
        };
        let mut out = Vec::new();
        let input = ReportInput {
            profile: &profile,
            trees: None,
            frames: &resolved.frames,
            meta: &meta,
            options: &report,
        };
        write_json(&mut out, &input).map_err(|e| bad(format!("function table: {e}")))?;
        Ok(json(out))
    })
    .await
}
