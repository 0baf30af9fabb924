//! `scry serve`: the viewer read back over HTTP and in headless Chromium.
//!
//! - `pulse` (busy for the first 100 ms of every second): the heat map the
//!   server draws has that band; the page with the band selected shows
//!   `pulse_busy`'s flame graph, with no console message; an idle range
//!   shows nothing; the search covers the busy function; the icicle puts
//!   the root at the top; the function table has `pulse_busy` first.
//! - Diff: `cpu7525`, then `cpu7525` and `pulse` in one recording: the diff
//!   marks `pulse_busy` as the function that grew most; the process filter
//!   keeps one process's stacks, the thread filter one thread's; a link
//!   with `sort=total` orders the table by total, `zoom=NAME` zooms.
//! - Hostile requests (path traversal, garbage, huge values, bad numbers)
//!   get a 4xx, and the server keeps answering; `--bind` elsewhere warns.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A running `scry serve`, stopped on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// What it printed before it served.
    banner: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `scry serve --port 0 ARGS FILES`, once it says where it listens.
fn serve(files: &[&Path], args: &[&str]) -> Server {
    let mut cmd = common::scry();
    cmd.args(["serve", "--port", "0"]).args(args).args(files);
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn scry serve");
    // Stopped on drop from here on, whatever happens.
    let mut server = Server {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        banner: String::new(),
    };
    let mut stderr = BufReader::new(server.child.stderr.take().expect("stderr"));
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).expect("read stderr") == 0 {
            panic!("scry serve ended before serving: {}", server.banner);
        }
        server.banner.push_str(&line);
        if let Some(url) = line.split("http://").nth(1) {
            let addr = url.split('/').next().expect("address");
            server.addr = addr.parse().expect("socket address");
            // Keep draining stderr so the server never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return server;
        }
    }
}

/// Sends raw bytes, returns (status, headers and body as text); status 0
/// when the server closed the connection without an answer.
fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    // The server may answer and close before reading all of a huge request.
    let _ = stream.write_all(request);
    if !request.ends_with(b"\r\n\r\n") && !request.ends_with(b"hello") {
        // A request cut short: the client is gone.
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .strip_prefix("HTTP/1.1 ")
        .and_then(|t| t.get(..3))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    raw(addr, request.as_bytes())
}

/// The body of a 200 answer.
fn get_ok(addr: SocketAddr, path: &str) -> String {
    let (status, text) = get(addr, path);
    assert_eq!(status, 200, "GET {path}: {text}");
    text.split_once("\r\n\r\n").expect("body").1.to_string()
}

/// The page at `fragment` in headless Chromium, after asserting the
/// console stayed silent and the page finished loading.
fn page(server: &Server, fragment: &str, dir: &Path, name: &str) -> String {
    let url = format!("http://{}/#{fragment}", server.addr);
    let (dom, console) = common::headless_dom(&url, &dir.join(name));
    assert!(console.is_empty(), "console: {console:#?}");
    assert!(dom.contains(r#"data-state="ready""#), "not loaded: {dom}");
    dom
}

fn text_of<'a>(dom: &'a str, open: &str) -> &'a str {
    let start = dom.find(open).unwrap_or_else(|| panic!("no {open}")) + open.len();
    &dom[start..start + dom[start..].find('<').expect("end")]
}

/// The percentage in a flame graph title `name (N samples, P%...)`.
fn share(title: &str) -> f64 {
    title
        .split(", ")
        .nth(1)
        .and_then(|p| p.split('%').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{title}"))
}

fn record(dir: &Path, name: &str, command: &[&str]) -> PathBuf {
    let data = dir.join(format!("{name}.data"));
    let mut cmd = common::scry();
    cmd.args(["record", "-q", "-F", "999", "-g", "-o"])
        .arg(&data)
        .arg("--");
    cmd.args(command);
    common::run_ok(&mut cmd);
    data
}

fn workload(name: &str) -> String {
    common::workload(name).display().to_string()
}

/// (column, row, samples) of each cell the heat map draws.
fn cells(svg: &str) -> Vec<(usize, usize, u64)> {
    svg.split(r#"class="cell" "#)
        .skip(1)
        .map(|cell| {
            let attr = |name: &str| -> u64 {
                let start = cell.find(&format!("{name}=\"")).expect("attribute") + name.len() + 2;
                cell[start..start + cell[start..].find('"').expect("quote")]
                    .parse()
                    .expect("number")
            };
            (
                attr("data-c") as usize,
                attr("data-r") as usize,
                attr("data-n"),
            )
        })
        .collect()
}

#[test]
fn heat_map_has_the_busy_band_and_selecting_it_shows_the_busy_function() {
    require_kernel!();
    if !common::gate(common::chromium().map(drop)) {
        return;
    }
    let dir = common::tempdir();
    let data = record(dir.path(), "pulse", &[&workload("pulse"), "4"]);
    let server = serve(&[&data], &[]);
    let addr = server.addr;
    assert!(!server.banner.contains("warning"), "{}", server.banner);

    // The band: 6 rows (circular) of 50 hold 90% of the samples, in every
    // whole second (as tests/heatmap.rs reads `scry heatmap`'s page).
    let grid = cells(&get_ok(addr, "/api/heatmap?file=0"));
    let rows = 50;
    let columns = grid.iter().map(|c| c.0).max().expect("cells") + 1;
    assert!((4..=5).contains(&columns), "{columns} columns");
    let total: u64 = grid.iter().map(|c| c.2).sum();
    let mut per_row = vec![0u64; rows];
    for &(_, r, n) in &grid {
        per_row[r] += n;
    }
    let window = |first: usize| -> u64 { (0..6).map(|k| per_row[(first + k) % rows]).sum() };
    let band = (0..rows).max_by_key(|&r| window(r)).expect("rows");
    assert!(
        window(band) * 100 >= total * 90,
        "band at row {band} holds {} of {total}: {per_row:?}",
        window(band)
    );
    for c in 0..4 {
        let in_band = grid
            .iter()
            .any(|&(col, r, _)| col == c && (0..6).any(|k| (band + k) % rows == r));
        assert!(in_band, "second {c} has no band: {grid:?}");
    }

    // Select the band of second 2 in the page.
    let (from, to) = if band + 5 < rows {
        (format!("2.{band}"), format!("2.{}", band + 5))
    } else {
        (format!("1.{band}"), format!("2.{}", (band + 5) % rows))
    };
    let dom = page(
        &server,
        &format!("file=0&select={from}-{to}&search=pulse_b"),
        dir.path(),
        "band",
    );
    let range = text_of(&dom, r#"<p id="range">"#);
    assert!(
        range.starts_with("Flame graph of 2 s") || range.starts_with("Flame graph of 1 s"),
        "{range}"
    );
    assert!(!range.ends_with(": 0 samples"), "{range}");
    let busy = dom
        .split("<title>")
        .find(|t| t.starts_with("pulse_busy ("))
        .unwrap_or_else(|| panic!("no pulse_busy frame: {range}"));
    assert!(share(busy) >= 80.0, "{busy}");
    // The selected cells are marked on the map.
    assert!(dom.contains("cell sel"), "no selected cell");
    // The search covers the busy function.
    let matched = text_of(&dom, r#"<p id="matched">"#);
    let pct: f64 = matched
        .split(": ")
        .nth(1)
        .and_then(|m| m.split('%').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("{matched}"));
    assert!(pct >= 80.0, "{matched}");
    // The function table, sorted by self: pulse_busy first.
    let first_row = dom.split("<tbody>").nth(1).expect("table body");
    let first_sym = text_of(first_row, r#"<td class="sym">"#);
    assert_eq!(first_sym, "pulse_busy", "{first_row}");

    // An idle range: no sample, no frame.
    let near = |r: usize| (0..16).any(|k| (band + rows - 5 + k) % rows == r);
    let idle = (0..rows - 5)
        .find(|&s| (s..s + 6).all(|r| !near(r)))
        .expect("an idle window");
    let dom = page(
        &server,
        &format!("file=0&select=1.{idle}-1.{}", idle + 5),
        dir.path(),
        "idle",
    );
    let range = text_of(&dom, r#"<p id="range">"#);
    assert!(range.ends_with(": 0 samples"), "{range}");
    assert!(!dom.contains("pulse_busy ("));

    // The icicle: the root's frame above the busy function's.
    let y_of = |svg: &str, name: &str| -> f64 {
        let at = svg.find(&format!("<title>{name} (")).expect("frame");
        let rect = &svg[at..];
        let start = rect.find(" y=\"").expect("y") + 4;
        rect[start..start + rect[start..].find('"').expect("quote")]
            .parse()
            .expect("y")
    };
    let flame = get_ok(addr, "/api/flamegraph?file=0");
    let icicle = get_ok(addr, "/api/flamegraph?file=0&inverted=1");
    assert!(y_of(&flame, "all") > y_of(&flame, "pulse_busy"));
    assert!(y_of(&icicle, "all") < y_of(&icicle, "pulse_busy"));
    assert!(
        !flame.contains("<script"),
        "the page's policy runs no inline script"
    );
}

#[test]
fn diff_marks_the_function_that_grew_and_filters_keep_one_process() {
    require_kernel!();
    if !common::gate(common::chromium().map(drop)) {
        return;
    }
    let dir = common::tempdir();
    let cpu = workload("cpu7525");
    let pulse = workload("pulse");
    let before = record(dir.path(), "before", &[&cpu, "50"]);
    let both = format!("{cpu} 50; {pulse} 2 300");
    let after = record(dir.path(), "after", &["sh", "-c", &both]);
    let server = serve(&[&before, &after], &[]);

    let dom = page(&server, "file=1&base=0", dir.path(), "diff");
    let grew: Vec<&str> = dom
        .split(r#"<li class="grew">"#)
        .skip(1)
        .map(|li| &li[..li.find('<').expect("end")])
        .collect();
    assert!(
        grew.first().is_some_and(|g| g.starts_with("pulse_busy +")),
        "grew: {grew:?}"
    );
    let marked = dom
        .split(r#"<g class="grew"><title>"#)
        .skip(1)
        .any(|g| g.starts_with("pulse_busy ("));
    assert!(marked, "pulse_busy's frame is not marked");

    // The process filter: pulse's stacks only.
    let files: Value = serde_json::from_str(&get_ok(server.addr, "/api/files")).expect("JSON");
    let id_of = |comm: &str, key: &str| {
        files[1]["threads"]
            .as_array()
            .expect("threads")
            .iter()
            .find(|t| t["comm"] == comm)
            .and_then(|t| t[key].as_i64())
            .unwrap_or_else(|| panic!("{comm}'s {key}"))
    };
    let pid = id_of("pulse", "pid");
    let only = get_ok(server.addr, &format!("/api/flamegraph?file=1&pid={pid}"));
    assert!(only.contains("<title>pulse_busy (") && !only.contains("<title>hot_a ("));
    let dom = page(&server, &format!("file=1&pid={pid}"), dir.path(), "pid");
    assert!(!dom.contains("<title>hot_a (") && dom.contains("<title>pulse_busy ("));

    // The thread filter, the table sorted by total and a zoom, from a link:
    // cpu7525's thread only; rows in falling total; hot_a's frame (zoomed)
    // the graph's whole width, frames beside it hidden.
    let tid = id_of("cpu7525", "tid");
    let only = get_ok(server.addr, &format!("/api/flamegraph?file=1&tid={tid}"));
    assert!(only.contains("<title>hot_a (") && !only.contains("<title>pulse_busy ("));
    let fragment = format!("file=1&tid={tid}&sort=total&zoom=hot_a");
    let dom = page(&server, &fragment, dir.path(), "tid");
    assert!(dom.contains("<title>hot_a (") && !dom.contains("<title>pulse_busy ("));
    assert!(
        dom.contains(r#"data-key="children_period" class="num sortable sorted""#),
        "the Total column is not the sorted one"
    );
    let totals: Vec<f64> = dom
        .split(r#"data-total=""#)
        .skip(1)
        .map(|t| t[..t.find('"').expect("quote")].parse().expect("total"))
        .collect();
    assert!(totals.len() >= 3, "{totals:?}");
    assert!(
        totals.windows(2).all(|w| w[0] >= w[1]),
        "not sorted by total: {totals:?}"
    );
    let hot_a = dom.split("<title>hot_a (").nth(1).expect("hot_a's frame");
    let width = hot_a
        .split(r#"width=""#)
        .nth(1)
        .and_then(|w| w.split('"').next())
        .expect("width");
    assert_eq!(width, "100.0000%", "hot_a is not zoomed into");
    assert!(
        dom.contains(r#"class="hidden""#),
        "no frame hidden by the zoom"
    );
}

#[test]
fn hostile_requests_get_a_4xx_and_the_server_keeps_answering() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sched.data");
    let server = serve(&[&data], &[]);
    let addr = server.addr;
    let alive = || {
        let (status, text) = get(addr, "/api/files");
        assert_eq!(status, 200, "the server stopped answering: {text}");
    };
    alive();
    let (status, text) = get(addr, "/");
    assert_eq!(status, 200);
    assert!(
        text.to_lowercase()
            .contains("content-security-policy: default-src 'none'")
    );
    assert!(
        !text.contains("http://") && !text.contains("https://"),
        "{text}"
    );

    // Long values scry reads itself (hyper refuses URIs past 64 KiB: below).
    let huge = "9".repeat(10_000);
    let bad: Vec<(String, u16)> = vec![
        ("/../../../../etc/passwd".into(), 404),
        ("/%2e%2e/%2e%2e/etc/passwd".into(), 404),
        ("/api/../../etc/passwd".into(), 404),
        ("/api/flamegraph?file=../../etc/passwd".into(), 400),
        ("/api/flamegraph?file=%2Fetc%2Fpasswd".into(), 400),
        ("/api/flamegraph?file=7".into(), 404),
        ("/api/flamegraph?file=0&file=0".into(), 400),
        ("/api/flamegraph?fil=0".into(), 400),
        ("/api/flamegraph?from=99999.0&to=99999.1".into(), 400),
        ("/api/flamegraph?from=0.0".into(), 400),
        ("/api/flamegraph?from=a.b&to=0.1".into(), 400),
        ("/api/flamegraph?inverted=maybe".into(), 400),
        ("/api/flamegraph?event=4000000000".into(), 400),
        ("/api/heatmap?rows=0".into(), 400),
        ("/api/heatmap?rows=100000000000000000000".into(), 400),
        ("/api/heatmap?rows=%zz".into(), 400),
        ("/api/calltree?pid=-".into(), 400),
        (format!("/api/flamegraph?file={huge}"), 400),
        (format!("/api/flamegraph?{huge}=1"), 400),
    ];
    for (path, want) in &bad {
        let (status, text) = get(addr, path);
        let shown: String = path.chars().take(60).collect();
        assert_eq!(status, *want, "GET {shown}: {text}");
        let body = text.split_once("\r\n\r\n").map_or("", |t| t.1);
        assert!(
            body.starts_with("scry: ") && body.lines().count() == 1,
            "GET {shown}: {body}"
        );
        assert!(!body.contains("root:"), "{body}");
        alive();
    }
    // Requests hyper refuses: a 4xx or a closed connection, never a crash.
    let huge_header = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    let garbage: Vec<Vec<u8>> = vec![
        b"\x00\xff\xfe garbage \r\n\r\n".to_vec(),
        b"GET\r\n\r\n".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"POST /api/files HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello".to_vec(),
        b"GET /api/files HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".to_vec(),
        format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(1 << 20)).into_bytes(),
        format!("GET /api/flamegraph?file={} HTTP/1.1\r\nHost: x\r\n\r\n", "9".repeat(100_000)).into_bytes(),
        huge_header.into_bytes(),
        b"GET / HTTP/1.1\r\nHost: x\r\n".to_vec(),
    ];
    for request in &garbage {
        let (status, text) = raw(addr, request);
        let shown = String::from_utf8_lossy(&request[..request.len().min(40)]).into_owned();
        assert!(
            status == 0 || (400..500).contains(&status),
            "{shown:?}: {status} {}",
            &text[..text.len().min(200)]
        );
        alive();
    }
}

#[test]
fn binding_elsewhere_warns_and_a_bad_file_is_one_line() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sched.data");
    let server = serve(&[&data], &["--bind", "0.0.0.0"]);
    assert!(
        server
            .banner
            .contains("scry: warning: listening on 0.0.0.0:"),
        "{}",
        server.banner
    );
    let out = common::output(common::scry().args(["serve", "--port", "0", "/nonexistent.data"]));
    common::assert_bad_input(&out, "/nonexistent.data", &"a missing file");
}
