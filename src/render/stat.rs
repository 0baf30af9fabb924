//! `scry stat` output in perf's three shapes: the aligned table (perf
//! stat's default), `-x SEP` separated values and `--json` (one object per
//! line, as `perf stat -j`).
//!
//! The layout is perf 6.1's `util/stat-display.c`, column for column:
//! counts right-aligned in 18, unit in 4, the event name in 32 (25 for
//! `<not counted>` / `<not supported>` lines), the `# metric` in 35, then
//! `( +- x.xx% )` for `-r` and `(xx.xx%)` when a counter was multiplexed.
//! Where perf prints `(null)` (the JSON `metric-unit` of an event without a
//! metric) we print an empty string.
//!
//! Invariant: nothing here computes; every number comes from
//! `analysis::stat`.

use std::io::{self, Write};
use std::time::Duration;

use crate::analysis::stat::{CountState, Metric, Row, Stats, relative_pct, unit_prefix};

const METRIC_LEN: usize = 35;
const NOT_COUNTED: &str = "<not counted>";
const NOT_SUPPORTED: &str = "<not supported>";

/// Which of perf's output shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StatFormat {
    Text,
    /// `-x SEP`.
    Separated(String),
    /// `--json`.
    Json,
}

/// How one event is named and scaled on output.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EventLabel {
    pub(crate) name: String,
    /// `msec` for the clocks, empty otherwise, or what the event says
    /// (`ns` for tool events, a PMU event's sysfs unit).
    pub(crate) unit: String,
    /// Multiplier from the kernel's unit to the printed one (1e-6: ns → msec).
    pub(crate) scale: f64,
}

impl EventLabel {
    pub(crate) fn new(name: &str, is_clock: bool) -> EventLabel {
        EventLabel {
            name: name.to_string(),
            unit: if is_clock { "msec" } else { "" }.to_string(),
            scale: if is_clock { 1e-6 } else { 1.0 },
        }
    }

    /// A label with its own unit and scale.
    pub(crate) fn with_unit(name: &str, unit: &str, scale: f64) -> EventLabel {
        EventLabel {
            name: name.to_string(),
            unit: unit.to_string(),
            scale,
        }
    }

    fn fractional(&self) -> bool {
        self.scale.floor() != self.scale
    }
}

/// What was counted, for the `Performance counter stats for ...` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Subject {
    Command(Vec<String>),
    SystemWide,
    Cpus(String),
    Pid(String),
    Tid(String),
}

/// Writes stat output; keeps the interval-header count between calls.
#[derive(Clone, Debug)]
pub(crate) struct StatPrinter {
    pub(crate) format: StatFormat,
    pub(crate) labels: Vec<EventLabel>,
    pub(crate) cgroup: Option<String>,
    pub(crate) per_cpu: bool,
    pub(crate) runs: usize,
    intervals_printed: usize,
}

impl StatPrinter {
    pub(crate) fn new(
        format: StatFormat,
        labels: Vec<EventLabel>,
        per_cpu: bool,
        runs: usize,
    ) -> Self {
        StatPrinter {
            format,
            labels,
            cgroup: None,
            per_cpu,
            runs,
            intervals_printed: 0,
        }
    }

    fn sep(&self) -> &str {
        match &self.format {
            StatFormat::Separated(sep) => sep,
            _ => " ",
        }
    }

    /// ` Performance counter stats for 'ls -l' (5 runs):` and its blank
    /// lines; nothing for machine formats.
    pub(crate) fn header(&self, out: &mut impl Write, subject: &Subject) -> io::Result<()> {
        if self.format != StatFormat::Text {
            return Ok(());
        }
        let what = match subject {
            Subject::Command(argv) => format!("'{}'", argv.join(" ")),
            Subject::SystemWide => "'system wide'".to_string(),
            Subject::Cpus(list) => format!("'CPU(s) {list}'"),
            Subject::Pid(pid) => format!("process id '{pid}'"),
            Subject::Tid(tid) => format!("thread id '{tid}'"),
        };
        let runs = if self.runs > 1 {
            format!(" ({} runs)", self.runs)
        } else {
            String::new()
        };
        write!(out, "\n Performance counter stats for {what}{runs}:\n\n")
    }

    /// One block of lines: the whole run, or one `-I` interval (`at`: time
    /// since the start).
    pub(crate) fn rows(
        &mut self,
        out: &mut impl Write,
        rows: &[Row],
        at: Option<Duration>,
    ) -> io::Result<()> {
        if at.is_some() && self.format == StatFormat::Text {
            if self.intervals_printed == 0 {
                if self.per_cpu {
                    writeln!(
                        out,
                        "#           time CPU                    counts unit events"
                    )?;
                } else {
                    writeln!(out, "#           time             counts unit events")?;
                }
            }
            self.intervals_printed = (self.intervals_printed + 1) % 25;
        }
        for row in rows {
            match self.format {
                StatFormat::Json => self.json_line(out, row, at)?,
                _ => self.line(out, row, at)?,
            }
        }
        Ok(())
    }

    fn label(&self, row: &Row) -> EventLabel {
        self.labels
            .get(row.event)
            .cloned()
            .unwrap_or_else(|| EventLabel::new(&format!("event{}", row.event), false))
    }

    fn line(&self, out: &mut impl Write, row: &Row, at: Option<Duration>) -> io::Result<()> {
        let text = self.format == StatFormat::Text;
        let sep = self.sep().to_string();
        let label = self.label(row);
        if let Some(t) = at {
            write!(out, "{:>6}.{:09}{sep}", t.as_secs(), t.subsec_nanos())?;
        }
        if let Some(cpu) = row.cpu {
            if text {
                write!(out, "CPU{cpu:<7}{sep}")?;
            } else {
                write!(out, "CPU{cpu}{sep}")?;
            }
        }
        let cgroup = match &self.cgroup {
            Some(name) => format!("{sep}{name}"),
            None => String::new(),
        };
        let placeholder = match row.state {
            CountState::Counted => None,
            CountState::NotCounted => Some(NOT_COUNTED),
            CountState::NotSupported => Some(NOT_SUPPORTED),
        };
        if let Some(word) = placeholder {
            if text {
                write!(
                    out,
                    "{word:>18}{sep}{:<4}{sep}{:<25}{cgroup}{:METRIC_LEN$}",
                    label.unit, label.name, ""
                )?;
            } else {
                write!(out, "{word}{sep}{}{sep}{}{cgroup}", label.unit, label.name)?;
            }
        } else {
            let value = row.count * label.scale;
            let number = if label.fractional() {
                format!("{value:.2}")
            } else {
                format!("{value:.0}")
            };
            if text {
                write!(
                    out,
                    "{number:>18}{sep}{:<4}{sep}{:<32}{cgroup}",
                    label.unit, label.name
                )?;
            } else {
                write!(
                    out,
                    "{number}{sep}{}{sep}{}{cgroup}",
                    label.unit, label.name
                )?;
            }
        }
        if text {
            if placeholder.is_none() {
                write!(out, "{}", metric_text(row.metric))?;
            }
            if self.runs > 1 && row.noise_pct != 0.0 {
                write!(out, "  ( +-{:6.2}% )", row.noise_pct)?;
            }
            if row.running < row.enabled {
                write!(out, "  ({:.2}%)", 100.0 * row.running / row.enabled)?;
            }
        } else {
            if self.runs > 1 {
                write!(out, "{sep}{:.2}%", row.noise_pct)?;
            }
            write!(
                out,
                "{sep}{:.0}{sep}{:.2}",
                row.running,
                integer_running_pct(row)
            )?;
            match row.metric.filter(|_| placeholder.is_none()) {
                Some(m) => {
                    let (value, unit) = metric_parts(m);
                    write!(out, "{sep}{}{sep}{unit}", csv_number(&value))?;
                }
                None => write!(out, "{sep}{sep}")?,
            }
        }
        writeln!(out)
    }

    fn json_line(&self, out: &mut impl Write, row: &Row, at: Option<Duration>) -> io::Result<()> {
        let label = self.label(row);
        let mut line = String::from("{");
        if let Some(t) = at {
            line.push_str(&format!(
                "\"interval\" : {}.{:09}, ",
                t.as_secs(),
                t.subsec_nanos()
            ));
        }
        if let Some(cpu) = row.cpu {
            line.push_str(&format!("\"cpu\" : \"{cpu}\", "));
        }
        let value = match row.state {
            CountState::Counted => format!("{:.6}", row.count * label.scale),
            CountState::NotCounted => NOT_COUNTED.to_string(),
            CountState::NotSupported => NOT_SUPPORTED.to_string(),
        };
        line.push_str(&format!(
            "\"counter-value\" : {}, \"unit\" : {}, \"event\" : {}, ",
            json_string(&value),
            json_string(&label.unit),
            json_string(&label.name)
        ));
        if let Some(cgroup) = &self.cgroup {
            line.push_str(&format!("\"cgroup\" : {}, ", json_string(cgroup)));
        }
        if self.runs > 1 {
            line.push_str(&format!("\"variance\" : {:.2}, ", row.noise_pct));
        }
        line.push_str(&format!(
            "\"event-runtime\" : {:.0}, \"pcnt-running\" : {:.2}, ",
            row.running,
            integer_running_pct(row)
        ));
        let (metric_value, metric_unit) =
            match row.metric.filter(|_| row.state == CountState::Counted) {
                Some(m) => {
                    let (value, unit) = metric_raw(m);
                    (value, unit)
                }
                None => (0.0, String::new()),
            };
        line.push_str(&format!(
            "\"metric-value\" : {metric_value:.6}, \"metric-unit\" : {}}}",
            json_string(&metric_unit)
        ));
        writeln!(out, "{line}")
    }

    /// The `seconds time elapsed` block (text format, whole runs only).
    /// `rusage`: the command's user and system seconds (one run only).
    pub(crate) fn footer(
        &self,
        out: &mut impl Write,
        walltime_ns: &Stats,
        rusage: Option<(f64, f64)>,
    ) -> io::Result<()> {
        if self.format != StatFormat::Text {
            return Ok(());
        }
        let avg = walltime_ns.mean() / 1e9;
        writeln!(out)?;
        if self.runs <= 1 {
            write!(out, " {avg:17.9} seconds time elapsed")?;
            if let Some((user, sys)) = rusage {
                write!(out, "\n\n")?;
                writeln!(out, " {user:17.9} seconds user")?;
                writeln!(out, " {sys:17.9} seconds sys")?;
            }
        } else {
            let sd = walltime_ns.stddev_of_mean() / 1e9;
            let precision = precision_for(sd) + 2;
            write!(
                out,
                " {avg:17.precision$} +- {sd:.precision$} seconds time elapsed"
            )?;
            let pct = relative_pct(sd, avg);
            if pct != 0.0 {
                write!(out, "  ( +-{pct:6.2}% )")?;
            }
        }
        write!(out, "\n\n")
    }
}

/// perf's `get_precision`: decimals needed to show the first digit of `sd`.
fn precision_for(sd: f64) -> usize {
    if sd > 1.0 {
        return 0;
    }
    if sd <= 0.0 || !sd.is_finite() {
        return 7;
    }
    (-sd.log10()).ceil().clamp(0.0, 15.0) as usize
}

/// perf computes the CSV/JSON running percentage in integers.
fn integer_running_pct(row: &Row) -> f64 {
    if row.enabled > 0.0 && row.running < row.enabled {
        (100.0 * row.running / row.enabled).floor()
    } else {
        100.0
    }
}

/// The metric as perf's printf formats it, and its unit.
fn metric_parts(metric: Metric) -> (String, String) {
    match metric {
        Metric::CpusUtilized(v) => (format!("{v:8.3}"), "CPUs utilized".into()),
        Metric::PerSecond(v) => {
            let (v, prefix) = unit_prefix(v);
            (format!("{v:8.3}"), format!("{prefix}/sec"))
        }
        Metric::Ghz(v) => (format!("{v:8.3}"), "GHz".into()),
        Metric::InsnPerCycle(v) => (format!("{v:7.2} "), "insn per cycle".into()),
        Metric::Percent { value, of } => (format!("{value:7.2}%"), of.into()),
    }
}

/// The metric's number as JSON prints it (rates after the K/M/G prefix).
fn metric_raw(metric: Metric) -> (f64, String) {
    match metric {
        Metric::PerSecond(v) => {
            let (v, prefix) = unit_prefix(v);
            (v, format!("{prefix}/sec"))
        }
        Metric::CpusUtilized(v) | Metric::Ghz(v) | Metric::InsnPerCycle(v) => {
            (v, metric_parts(metric).1)
        }
        Metric::Percent { value, of } => (value, of.into()),
    }
}

/// ` #    0.998 CPUs utilized          ` (35 wide), or 35 spaces.
fn metric_text(metric: Option<Metric>) -> String {
    match metric {
        Some(m) => {
            let (value, unit) = metric_parts(m);
            let head = format!(" # {value}");
            let width = METRIC_LEN.saturating_sub(head.len() + 1);
            format!("{head} {unit:<width$}")
        }
        None => " ".repeat(METRIC_LEN),
    }
}

/// CSV keeps only the number of a formatted metric (no padding, no `%`).
fn csv_number(formatted: &str) -> &str {
    let trimmed = formatted.trim_start();
    let end = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(trimmed.len());
    &trimmed[..end]
}

fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(event: usize, state: CountState, count: f64, metric: Option<Metric>) -> Row {
        Row {
            event,
            cpu: None,
            state,
            count,
            noise_pct: 0.0,
            running: 1_516_331.0,
            enabled: 1_516_331.0,
            metric,
        }
    }

    fn printer(format: StatFormat) -> StatPrinter {
        StatPrinter::new(
            format,
            vec![
                EventLabel::new("task-clock", true),
                EventLabel::new("page-faults", false),
                EventLabel::new("cycles", false),
            ],
            false,
            1,
        )
    }

    fn rows() -> Vec<Row> {
        vec![
            row(
                0,
                CountState::Counted,
                1_516_331.0,
                Some(Metric::CpusUtilized(0.01412)),
            ),
            row(
                1,
                CountState::Counted,
                74.0,
                Some(Metric::PerSecond(48_802.0)),
            ),
            Row {
                running: 0.0,
                enabled: 0.0,
                ..row(2, CountState::NotSupported, 0.0, None)
            },
        ]
    }

    /// The lines perf 6.1 printed for `perf stat -- sleep 0.1` here (the
    /// numbers substituted), byte for byte.
    #[test]
    fn text_matches_perf_columns() {
        let mut out = Vec::new();
        let mut p = printer(StatFormat::Text);
        p.rows(&mut out, &rows(), None).unwrap();
        let text = String::from_utf8(out).unwrap();
        let expected = "              1.52 msec task-clock                       #    0.014 CPUs utilized          \n                74      page-faults                      #   48.802 K/sec                  \n   <not supported>      cycles                                                      \n";
        assert_eq!(text, expected);
        for line in text.lines().take(2) {
            assert_eq!(line.len(), 91);
        }
    }

    #[test]
    fn csv_matches_perf_fields() {
        let mut out = Vec::new();
        let mut p = printer(StatFormat::Separated(",".into()));
        p.rows(&mut out, &rows(), None).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1.52,msec,task-clock,1516331,100.00,0.014,CPUs utilized\n74,,page-faults,1516331,100.00,48.802,K/sec\n<not supported>,,cycles,0,100.00,,\n"
        );
    }

    #[test]
    fn json_lines_parse() {
        let mut out = Vec::new();
        let mut p = printer(StatFormat::Json);
        p.rows(&mut out, &rows(), Some(Duration::from_millis(100)))
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["counter-value"], "1.516331");
        assert_eq!(first["metric-unit"], "CPUs utilized");
        assert_eq!(first["interval"].as_f64(), Some(0.1));
        let third: serde_json::Value = serde_json::from_str(text.lines().nth(2).unwrap()).unwrap();
        assert_eq!(third["counter-value"], "<not supported>");
    }

    #[test]
    fn noise_multiplexing_and_footer() {
        let mut p = printer(StatFormat::Text);
        p.runs = 3;
        let mut r = row(1, CountState::Counted, 49.0, None);
        r.noise_pct = 1.37;
        r.running = 50.0;
        r.enabled = 100.0;
        let mut out = Vec::new();
        p.rows(&mut out, &[r], None).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with("  ( +-  1.37% )  (50.00%)\n"), "{text:?}");

        let mut wall = Stats::default();
        for ns in [1_520_000.0, 1_550_000.0, 1_580_000.0] {
            wall.push(ns);
        }
        let mut out = Vec::new();
        p.footer(&mut out, &wall, None).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "\n         0.0015500 +- 0.0000173 seconds time elapsed  ( +-  1.12% )\n\n"
        );
    }

    #[test]
    fn interval_prefix_and_header() {
        let mut p = printer(StatFormat::Text);
        let mut out = Vec::new();
        let at = Some(Duration::new(0, 103_755_981));
        p.rows(&mut out, &rows()[1..2], at).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "#           time             counts unit events\n     0.103755981                 74      page-faults                      #   48.802 K/sec                  \n"
        );
    }

    /// A whole `perf stat`-shaped report: counted, multiplexed, not
    /// counted and not supported lines, with the command's footer.
    fn golden_rows() -> Vec<Row> {
        let mut multiplexed = row(
            1,
            CountState::Counted,
            1_234_567.0,
            Some(Metric::PerSecond(8.1e8)),
        );
        multiplexed.running = 758_165.0;
        multiplexed.enabled = 1_516_331.0;
        let mut not_counted = row(1, CountState::NotCounted, 0.0, None);
        not_counted.running = 0.0;
        let mut rows = rows();
        rows.insert(1, multiplexed);
        rows.insert(2, not_counted);
        rows
    }

    fn render(
        mut p: StatPrinter,
        subject: &Subject,
        rows: &[Row],
        wall: &Stats,
        rusage: Option<(f64, f64)>,
    ) -> String {
        let mut out = Vec::new();
        p.header(&mut out, subject).unwrap();
        p.rows(&mut out, rows, None).unwrap();
        p.footer(&mut out, wall, rusage).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn one_wall(ns: f64) -> Stats {
        let mut s = Stats::default();
        s.push(ns);
        s
    }

    #[test]
    fn golden_files() {
        use crate::render::golden::check_golden;
        let command = Subject::Command(vec!["./calls".into(), "100000".into()]);
        let rows = golden_rows();
        check_golden(
            "stat_default.txt",
            &render(
                printer(StatFormat::Text),
                &command,
                &rows,
                &one_wall(107_477_710.0),
                Some((0.002318, 0.0)),
            ),
        );
        check_golden(
            "stat.csv",
            &render(
                printer(StatFormat::Separated(",".into())),
                &command,
                &rows,
                &one_wall(1e8),
                None,
            ),
        );
        check_golden(
            "stat.json",
            &render(
                printer(StatFormat::Json),
                &command,
                &rows,
                &one_wall(1e8),
                None,
            ),
        );

        let mut repeat = printer(StatFormat::Text);
        repeat.runs = 5;
        let mut noisy = golden_rows();
        noisy[0].noise_pct = 1.37;
        noisy[3].noise_pct = 0.42;
        let mut wall = Stats::default();
        for ns in [
            1_520_000.0,
            1_550_000.0,
            1_580_000.0,
            1_530_000.0,
            1_570_000.0,
        ] {
            wall.push(ns);
        }
        check_golden(
            "stat_repeat.txt",
            &render(repeat, &command, &noisy, &wall, None),
        );

        // `-a -A -I 100`: CPU columns and the interval header.
        let mut per_cpu = printer(StatFormat::Text);
        per_cpu.per_cpu = true;
        let mut out = Vec::new();
        for (tick, ns) in [(1u64, 102_680_000.0), (2, 60_130_000.0)] {
            let rows: Vec<Row> = (0..2)
                .map(|cpu| Row {
                    cpu: Some(cpu),
                    ..row(
                        0,
                        CountState::Counted,
                        ns,
                        Some(Metric::CpusUtilized(ns / 1e8)),
                    )
                })
                .collect();
            per_cpu
                .rows(
                    &mut out,
                    &rows,
                    Some(Duration::from_millis(100 * tick) + Duration::from_nanos(2_614_028)),
                )
                .unwrap();
        }
        check_golden(
            "stat_interval_per_cpu.txt",
            &String::from_utf8(out).unwrap(),
        );
    }

    #[test]
    fn header_names_the_subject() {
        let p = printer(StatFormat::Text);
        let mut out = Vec::new();
        p.header(
            &mut out,
            &Subject::Command(vec!["sleep".into(), "0.1".into()]),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\n Performance counter stats for 'sleep 0.1':\n\n"
        );
    }
}
