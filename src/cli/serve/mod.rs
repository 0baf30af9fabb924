//! `scry serve [FILE...]`: a local web viewer of recordings. Each file is
//! resolved once at start (`symbol::resolve_file`, samples kept with their
//! times); every answer is then made by the analysis and render functions
//! the other commands use: the flame graph and icicle are `scry
//! flamegraph`'s (`analysis::folded` → `render::folded` →
//! `render::flamegraph`, inferno's SVG; the diff of two files its `--diff`),
//! the heat map is `scry heatmap`'s grid (`analysis::heatmap`,
//! `render::heatmap::write_offset_svg`) and a selection of its cells is
//! `analysis::heatmap::OffsetWindow::samples_in`, the function table is
//! `scry report --format json` (`analysis::profile`, `render::report_json`).
//!
//! Decisions: the page, its script and style are compiled in
//! (`include_str!`) and served with a Content-Security-Policy that lets the
//! page load nothing but them and the server's answers; the server answers
//! only its own paths (files are named by their index on the command line,
//! never by a path, so there is nothing to traverse); it listens on
//! 127.0.0.1 unless `--bind` says otherwise, and then warns, since a
//! profile holds other processes' stacks and command names. Requests are
//! read by hyper (malformed ones get its 400 and a closed connection); a
//! parameter scry does not take, or a value it cannot use, gets a 4xx with
//! one line saying which (`api`). The work of an answer runs on tokio's
//! blocking pool, so a slow answer does not stop the others.

mod api;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use scry::analysis::profile::{Profile, ProfileOptions, SortKey};
use scry::symbol::{ResolveOptions, Resolved, resolve_file};

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Recordings to serve (perf.data format). Default perf.data.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// Port to listen on; 0 picks a free one. Default 8080.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on. Default 127.0.0.1 (this machine only); any
    /// other address lets whoever reaches it read the profiles (a warning
    /// says so).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Keep raw (mangled) symbol names.
    #[arg(long = "no-demangle")]
    no_demangle: bool,
}

/// A thread of a served file, for the page's filters.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct ThreadRow {
    pub(crate) comm: String,
    pub(crate) pid: i32,
    pub(crate) tid: i32,
    pub(crate) samples: u64,
}

/// One file the server was given, resolved.
pub(crate) struct Served {
    /// As named on the command line.
    pub(crate) name: String,
    pub(crate) resolved: Resolved,
    /// Its threads, busiest first (`analysis::profile` keyed by comm, pid
    /// and tid).
    pub(crate) threads: Vec<ThreadRow>,
}

/// Everything the server answers from.
pub(crate) struct State {
    pub(crate) files: Vec<Served>,
    /// The answers made so far (`api::Memo`).
    memo: api::Memo,
}

fn threads_of(resolved: &Resolved) -> Vec<ThreadRow> {
    let options = ProfileOptions {
        sort: vec![SortKey::Comm, SortKey::Pid, SortKey::Tid],
        children: false,
        ..ProfileOptions::default()
    };
    let profile = Profile::build(&resolved.samples, &resolved.frames, &options);
    let mut rows: Vec<ThreadRow> = Vec::new();
    for entry in profile.events.iter().flat_map(|e| &e.entries) {
        let (Some(pid), Some(tid)) = (entry.pid, entry.tid) else {
            continue;
        };
        let comm = entry.comm.as_deref().unwrap_or("?");
        match rows
            .iter_mut()
            .find(|r| r.pid == pid && r.tid == tid && r.comm == comm)
        {
            Some(row) => row.samples += entry.self_samples,
            None => rows.push(ThreadRow {
                comm: comm.to_string(),
                pid,
                tid,
                samples: entry.self_samples,
            }),
        }
    }
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.tid.cmp(&b.tid)));
    rows
}

fn load(args: &ServeArgs) -> anyhow::Result<State> {
    let paths = if args.files.is_empty() {
        vec![PathBuf::from("perf.data")]
    } else {
        args.files.clone()
    };
    let options = ResolveOptions {
        demangle: !args.no_demangle,
        ..ResolveOptions::default()
    };
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        // The reader's errors name the file.
        let resolved = resolve_file(&path, &options)?;
        if resolved.samples.is_empty() {
            anyhow::bail!("{}: no samples to show", path.display());
        }
        files.push(Served {
            name: path.display().to_string(),
            threads: threads_of(&resolved),
            resolved,
        });
    }
    Ok(State {
        files,
        memo: api::Memo::default(),
    })
}

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<()> {
    let state = Arc::new(load(&args)?);
    let addr = SocketAddr::new(args.bind, args.port);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()
        .context("starting the server's threads")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr().context("the listening address")?;
        if !args.bind.is_loopback() {
            eprintln!(
                "scry: warning: listening on {local}: anyone who can reach this address can read \
                 these profiles (stacks, command names); the default 127.0.0.1 keeps them on this machine"
            );
        }
        let host = match local.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            ip => ip,
        };
        let url = SocketAddr::new(host, local.port());
        eprintln!(
            "scry: serving {} file{} at http://{url}/ (Ctrl-C stops)",
            state.files.len(),
            if state.files.len() == 1 { "" } else { "s" }
        );
        axum::serve(listener, api::router(state))
            .await
            .context("serving")
    })
}
