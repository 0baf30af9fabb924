//! `scry klockstat`: kernel lock contention from the lock:contention_begin
//! and contention_end tracepoints, summed in the kernel, printed at the end
//! (Ctrl-C, the duration, or the `-p` process's exit) as `perf lock
//! contention -b` prints it (contended, total, max and average wait, lock
//! type, caller), or `--json`. libbpf-tools' klockstat needs fentry, which
//! this tool does without; it keeps its name and the flags whose meaning
//! carries over to contention: `-p`/`-t`, `-c` caller prefix, `-L` one
//! lock (a kernel symbol or an address), `-n` rows, `-s` stack lines,
//! `-S acq_*` (the wait before the lock is taken), `-d`, `-i`/`-R`/`-T`,
//! `-P` (one row per waiting thread, libbpf-tools' layout; with it `-c`
//! and `-s`, which are about callers, are refused).
//! Hold times (`-S hld_*`) need fexit on the unlock functions: refused in
//! one line. Wiring only:
//! `sys::bpf_klockstat` → `symbol::raw_stacks` → `analysis::klockstat` →
//! `render::klockstat`.

use std::io::{self, Write};

use anyhow::{anyhow, bail};
use clap::Args;

use super::target::PidArg;
use scry::analysis::klockstat::{LockSort, lock_raw_stacks, lock_rows, select_rows, thread_rows};
use scry::capture::bpf_run::{self};
use scry::render::klockstat::{
    write_lock_json, write_lock_table, write_thread_json, write_thread_table,
};
use scry::symbol::ResolveOptions;
use scry::symbol::raw_stacks::RawStackResolver;
use scry::sys::bpf_klockstat::{KlockstatBpf, KlockstatSettings};

use super::bpf_tool;
use super::offcputime::{finish_naming, until};

#[derive(Args, Debug)]
pub(crate) struct KlockstatArgs {
    #[command(flatten)]
    target: PidArg,
    /// Only this thread.
    #[arg(short = 't', long = "tid", value_name = "TID", value_parser = clap::value_parser!(u32).range(1..))]
    tid: Option<u32>,
    /// Only the rows whose caller starts with FUNC (libbpf-tools').
    #[arg(short = 'c', long = "caller", value_name = "FUNC")]
    caller: Option<String>,
    /// Only this lock: a kernel symbol (`cgroup_mutex`) or an address
    /// (`0xffff...`).
    #[arg(short = 'L', long = "lock", value_name = "LOCK")]
    lock: Option<String>,
    /// Print only the first NR_LOCKS rows (default: all).
    #[arg(short = 'n', long = "locks", value_name = "NR_LOCKS", value_parser = clap::value_parser!(u64).range(1..))]
    locks: Option<u64>,
    /// Under each row, the first NR_STACKS frames of its stack (default
    /// 0: the caller column only).
    #[arg(
        short = 's',
        long = "stacks",
        value_name = "NR_STACKS",
        default_value_t = 0
    )]
    stacks: usize,
    /// Rank by acq_total (default), acq_max or acq_count (the wait to
    /// take the lock); hld_* is refused (hold times need fexit).
    #[arg(short = 'S', long = "sort", value_name = "SORT")]
    sort: Option<String>,
    /// Trace this many seconds (as the DURATION operand).
    #[arg(short = 'd', long = "duration", value_name = "SECONDS", conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    duration_flag: Option<u64>,
    /// Print every INTERVAL seconds (the sums so far, or with -R since the
    /// last print).
    #[arg(short = 'i', long = "interval", value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    interval: Option<u64>,
    /// Start each interval's sums from zero.
    #[arg(short = 'R', long = "reset")]
    reset: bool,
    /// Print the time before each print.
    #[arg(short = 'T', long = "timestamp")]
    timestamp: bool,
    /// One row per waiting thread (its id and name) instead of per
    /// caller.
    #[arg(short = 'P', long = "per-thread")]
    per_thread: bool,
    #[command(flatten)]
    run: bpf_tool::StacksUntilArgs,
}

/// `-S`'s fields (libbpf-tools': `acq_count,hld_total`): the acquire
/// field's order; a hold field is refused.
fn sort_of(fields: Option<&str>) -> anyhow::Result<LockSort> {
    let mut sort = LockSort::Total;
    for field in fields.unwrap_or("").split(',').filter(|f| !f.is_empty()) {
        sort = match field {
            "acq_total" => LockSort::Total,
            "acq_max" => LockSort::Max,
            "acq_count" => LockSort::Count,
            "hld_total" | "hld_max" | "hld_count" => bail!(
                "klockstat: -S {field}: hold times need fexit on the unlock functions, which this kernel refuses; scry's klockstat sees the wait to take a lock (lock:contention_begin/end): use acq_total, acq_max or acq_count"
            ),
            other => bail!("klockstat: -S {other}: not acq_total, acq_max or acq_count"),
        };
    }
    Ok(sort)
}

/// `-L`'s lock address: `0x...`, or a kernel symbol from /proc/kallsyms.
fn lock_address(lock: &str) -> anyhow::Result<u64> {
    if let Some(hex) = lock.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16)
            .map_err(|_| anyhow!("klockstat: -L {lock}: not a hexadecimal address"));
    }
    let found = scry::sys::proc::kallsyms_addresses(&[lock])
        .map_err(|e| anyhow!("klockstat: -L {lock}: reading /proc/kallsyms: {e}"))?;
    match found.first().copied().flatten() {
        Some(0) => {
            bail!("klockstat: -L {lock}: /proc/kallsyms hides addresses (kernel.kptr_restrict)")
        }
        Some(address) => Ok(address),
        None => bail!(
            "klockstat: -L {lock}: no such kernel symbol in /proc/kallsyms (a lock variable is listed only with CONFIG_KALLSYMS_ALL): give its address, 0x..."
        ),
    }
}

/// -T's time before a print.
fn write_stamp(out: &mut impl Write, timestamp: bool) -> io::Result<()> {
    if timestamp {
        let (h, m, s) = scry::sys::localtime::now_hms();
        writeln!(out, "{h:02}:{m:02}:{s:02}")?;
    }
    Ok(())
}

pub(crate) fn run(args: KlockstatArgs) -> anyhow::Result<()> {
    bpf_tool::check_pid_tid("klockstat", args.target.pid, args.tid)?;
    let sort = sort_of(args.sort.as_deref())?;
    if args.per_thread && (args.caller.is_some() || args.stacks > 0) {
        bail!("klockstat: -P's rows are threads, not callers: -c and -s do not apply to them");
    }
    let lock = args.lock.as_deref().map(lock_address).transpose()?;
    let duration = args.duration_flag.or(args.run.duration);
    let settings = KlockstatSettings {
        pid: args.target.pid,
        tid: args.tid,
        stack_storage: args.run.stack_storage_size,
        lock,
        per_thread: args.per_thread,
    };
    let mut bpf = bpf_tool::load("klockstat", || KlockstatBpf::load(settings))?;
    bpf_tool::print_hooks("klockstat", &bpf.hooks(), args.run.table.verbose);
    let mut out = io::stdout().lock();
    bpf_tool::write_banner(
        &mut out,
        args.run.table.json,
        format_args!("Tracing kernel lock contention{}", until(duration)),
    )?;
    let mut opts = args.target.run_until(duration);
    opts.interval = args.interval.map(std::time::Duration::from_secs);
    bpf_run::run(&opts, |last| {
        if last {
            bpf.detach();
        }
        let waits = bpf.read()?;
        if args.reset {
            bpf.reset()?;
        }
        let top = args.locks.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        if args.per_thread {
            let rows = thread_rows(&waits, sort, top);
            if args.run.table.json {
                write_thread_json(&mut out, &rows)?;
            } else {
                write_stamp(&mut out, args.timestamp)?;
                write_thread_table(&mut out, &rows)?;
            }
            return out.flush();
        }
        let mut resolver = RawStackResolver::new(&ResolveOptions::default());
        for stack in &lock_raw_stacks(&waits) {
            resolver.add(stack);
        }
        let rows = select_rows(
            lock_rows(&waits, &finish_naming("klockstat", resolver)),
            args.caller.as_deref(),
            sort,
            top,
        );
        if args.run.table.json {
            write_lock_json(&mut out, &rows)?;
        } else {
            write_stamp(&mut out, args.timestamp)?;
            write_lock_table(&mut out, &rows, args.stacks)?;
        }
        out.flush()
    })?;
    Ok(())
}
