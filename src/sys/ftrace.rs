//! The kernel's function tracers (`function`, `function_graph`) for one
//! run: settings written to tracefs, the trace text read back, everything
//! put back as it was found (`nop`, no filters, no pid filter).
//!
//! The decision: the top-level tracefs is used, not an instance (kernels
//! before 6.x refuse `function_graph` in instances, and Debian stable's 6.1
//! is one of them), so this state is global. A run refuses to start when
//! another tracer is set (someone else's), and a watchdog process (scry
//! itself, `scry __ftrace-restore ROOT`, started with a pipe on its stdin)
//! puts the tracer back when the pipe closes, so a SIGKILL of scry does not
//! leave the kernel tracing. [`FunctionTracer`] restores on drop too.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// What to trace.
#[derive(Clone, Debug, Default)]
pub(crate) struct TracerOptions {
    /// `function_graph` or `function`.
    pub(crate) tracer: String,
    /// `max_graph_depth` (function_graph; 0 is no limit).
    pub(crate) depth: u32,
    /// `set_ftrace_filter` globs (empty: every function).
    pub(crate) filters: Vec<String>,
    /// `set_ftrace_notrace` globs.
    pub(crate) notrace: Vec<String>,
    /// `set_graph_function` (function_graph: only these functions and
    /// what they call; empty: every function).
    pub(crate) graph_functions: Vec<String>,
    /// `set_ftrace_pid` (empty: every task); their children follow.
    pub(crate) pids: Vec<i32>,
}

/// Options switched on for the run and off again after it.
const OPTIONS: &[&str] = &[
    "function-fork",
    "funcgraph-proc",
    "funcgraph-abstime",
    "funcgraph-tail",
];

/// A function tracer running until [`FunctionTracer::finish`] or drop.
pub(crate) struct FunctionTracer {
    root: PathBuf,
    watchdog: Option<Child>,
    done: bool,
}

/// `file` of `root` opened for writing (emptied), or an error naming it.
fn open_truncated(root: &Path, file: &str) -> io::Result<(std::fs::File, PathBuf)> {
    let path = root.join(file);
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .map(|f| (f, path.clone()))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

fn write(root: &Path, file: &str, text: &str) -> io::Result<()> {
    let (mut f, path) = open_truncated(root, file)?;
    f.write_all(text.as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("{} <- {text:?}: {e}", path.display())))
}

/// Writes `globs` to a filter file one by one (the kernel takes one glob
/// per write and refuses one that matches no function with EINVAL), so the
/// glob refused is named, with the `flag` that gave it: `-l 'SyS*': no
/// kernel function matches it` (the one wording of `scry profile`, `record
/// --profile` and `trace --function`). No globs: the filter is emptied.
fn write_globs(root: &Path, file: &str, flag: &str, globs: &[String]) -> io::Result<()> {
    let (mut f, path) = open_truncated(root, file)?;
    for glob in globs {
        f.write_all(format!("{glob}\n").as_bytes()).map_err(|e| {
            if e.raw_os_error() == Some(libc::EINVAL) {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{flag} '{glob}': no kernel function matches it ({file} refused it; \
                         available_filter_functions lists those that can be traced)"
                    ),
                )
            } else {
                io::Error::new(e.kind(), format!("{} <- {glob:?}: {e}", path.display()))
            }
        })?;
    }
    Ok(())
}

/// The tracers this kernel offers (`available_tracers`).
pub(crate) fn available(root: &Path) -> Vec<String> {
    std::fs::read_to_string(root.join("available_tracers"))
        .map(|t| t.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Puts the tracer settings back as a kernel boots with them. Errors are
/// ignored: each file is tried.
pub(crate) fn restore(root: &Path) {
    let _ = write(root, "current_tracer", "nop");
    let _ = write(root, "set_ftrace_filter", "");
    let _ = write(root, "set_ftrace_notrace", "");
    let _ = write(root, "set_ftrace_pid", "");
    let _ = write(root, "set_graph_function", "");
    let _ = write(root, "max_graph_depth", "0");
    for option in OPTIONS {
        let _ = write(root, &format!("options/{option}"), "0");
    }
    let _ = write(root, "tracing_on", "1");
}

impl FunctionTracer {
    /// Starts `opts.tracer`, with `watchdog` the command that restores the
    /// tracer when its stdin closes (None: no watchdog).
    pub(crate) fn start(
        root: &Path,
        opts: &TracerOptions,
        watchdog: Option<Command>,
    ) -> io::Result<FunctionTracer> {
        if !available(root).contains(&opts.tracer) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "no {} tracer in this kernel (available_tracers: {})",
                    opts.tracer,
                    available(root).join(" ")
                ),
            ));
        }
        let current = std::fs::read_to_string(root.join("current_tracer"))?;
        if current.trim() != "nop" {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "the {} tracer is in use (current_tracer); as root: echo nop > {}/current_tracer",
                    current.trim(),
                    root.display()
                ),
            ));
        }
        let watchdog = match watchdog {
            Some(mut cmd) => Some(cmd.stdin(Stdio::piped()).stdout(Stdio::null()).spawn()?),
            None => None,
        };
        let mut tracer = FunctionTracer {
            root: root.to_path_buf(),
            watchdog,
            done: false,
        };
        tracer.configure(opts)?;
        Ok(tracer)
    }

    fn configure(&mut self, opts: &TracerOptions) -> io::Result<()> {
        let root = &self.root;
        write(root, "tracing_on", "0")?;
        write(root, "trace", "")?;
        write_globs(root, "set_ftrace_filter", "-l", &opts.filters)?;
        write_globs(root, "set_ftrace_notrace", "-n", &opts.notrace)?;
        let pids: Vec<String> = opts.pids.iter().map(i32::to_string).collect();
        write(root, "set_ftrace_pid", &pids.join(" "))?;
        if opts.tracer == "function_graph" {
            write(root, "max_graph_depth", &opts.depth.to_string())?;
            write_globs(root, "set_graph_function", "-G", &opts.graph_functions)?;
        }
        for option in OPTIONS {
            // An option this kernel lacks (funcgraph-tail is old; all are).
            let _ = write(root, &format!("options/{option}"), "1");
        }
        write(root, "current_tracer", &opts.tracer)?;
        write(root, "tracing_on", "1")
    }

    /// Stops tracing, returns the trace text and restores the settings.
    pub(crate) fn finish(mut self) -> io::Result<String> {
        let _ = write(&self.root, "tracing_on", "0");
        let text = std::fs::read_to_string(self.root.join("trace"));
        self.put_back();
        text
    }

    fn put_back(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        restore(&self.root);
        let _ = write(&self.root, "trace", "");
        if let Some(mut child) = self.watchdog.take() {
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

impl Drop for FunctionTracer {
    fn drop(&mut self) {
        self.put_back();
    }
}

/// The watchdog's body: waits for its stdin to close (scry exited, however)
/// and restores the tracer unless scry already did.
pub(crate) fn watchdog(root: &Path) {
    let mut sink = Vec::new();
    let _ = io::Read::read_to_end(&mut io::stdin(), &mut sink);
    let current = std::fs::read_to_string(root.join("current_tracer")).unwrap_or_default();
    if current.trim() != "nop" {
        restore(root);
    }
}
