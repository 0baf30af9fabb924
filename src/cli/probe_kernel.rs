//! `scry probe` on kernel functions (no `-x`): lasting kprobes in tracefs
//! `kprobe_events`, named `probe:FUNC` (`probe:FUNC__return`) as perf
//! probe names them, with arguments by register, `$argN`, `$retval`, or by
//! name and type from the kernel's BTF (`'tcp_sendmsg size'`,
//! `'FUNC sk->__sk_common.skc_state'`: no debuginfo package); `-V FUNC`
//! lists what BTF knows of the parameters; `-l`/`-d` list and delete the
//! kernel's probes (`cli::probe` joins them with the uprobes); `-n` prints
//! the definition instead of writing it. Filters on the arguments belong to
//! the commands that open the event (`scry record -e probe:vfs_write
//! --filter 'count > 100'`): a perf counter ignores the event's tracefs
//! `filter` file.
//!
//! BTF is read only when a definition needs it (a named argument, or a
//! `$retval`/`$argN` given no type, whose type BTF then supplies); a kernel
//! without BTF still takes registers and `$retval` as `x64`.

use std::io::Write;

use anyhow::{Context, bail};

use scry::event::btf::Btf;
use scry::symbol::kprobe_spec::{
    self, KPROBE_GROUP, KernelDefined, Prototype, fetch_kernel_arg, kprobe_line,
};
use scry::symbol::probe_spec;
use scry::sys::kprobe;

/// How a kernel probe is added.
pub(crate) struct AddOptions {
    /// Print the `kprobe_events` line, write nothing.
    pub(crate) dry_run: bool,
    /// Say the line on stderr before writing it (`Writing event: LINE`, as perf -v).
    pub(crate) verbose: bool,
}

fn tracefs() -> anyhow::Result<&'static std::path::Path> {
    scry::sys::tracefs::root().context("kernel probes need tracefs")
}

fn no_kprobes(func: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot probe kernel function '{func}': this kernel has no kprobes (CONFIG_KPROBES is off: no kprobe_events in tracefs); \
         use tracepoints instead (scry list 'syscalls:*', 'sched:*'), or probe a user binary with -x"
    )
}

/// Whether a definition's arguments need BTF: one names a parameter, or
/// is a `$retval`/`$argN` without a type.
fn wants_btf(args: &[String]) -> bool {
    args.iter().any(|w| {
        let body = w.split_once('=').map_or(w.as_str(), |(_, e)| e);
        let typed = body.contains(':');
        body.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            || (!typed && (body == "$retval" || body.starts_with("$arg")))
    })
}

pub(crate) fn add(def: &str, opts: &AddOptions, out: &mut dyn Write) -> anyhow::Result<()> {
    let point = probe_spec::parse_point(def)?;
    let func = point.func.as_str();
    let btf = if wants_btf(&point.args) {
        match Btf::load_vmlinux() {
            Ok(b) => Some(b),
            // `$retval`/`$argN` do without (as x64); a named one says why.
            Err(_) if point.args.iter().all(|w| w.starts_with('$')) => None,
            Err(e) => return Err(e).context(format!("probe '{def}'")),
        }
    } else {
        None
    };
    let function = btf.as_ref().and_then(|b| b.function(func));
    if btf.is_some() && function.is_none() && !point.args.iter().all(|w| w.starts_with('$')) {
        bail!("probe '{def}': the kernel's BTF knows no function '{func}' (see 'scry probe -F')");
    }
    let proto = btf
        .as_ref()
        .zip(function.as_ref())
        .map(|(btf, func)| Prototype { btf, func });
    let fetch: Vec<String> = point
        .args
        .iter()
        .enumerate()
        .map(|(i, w)| fetch_kernel_arg(w, i, proto.as_ref(), point.retprobe))
        .collect::<Result<_, _>>()?;
    let line = kprobe_line(&point, &fetch);
    let name = point.event_name();
    if opts.dry_run {
        writeln!(out, "{line}")?;
        return Ok(());
    }
    let root = tracefs()?;
    if !kprobe::available(root) {
        return Err(no_kprobes(func));
    }
    if root.join("events").join(KPROBE_GROUP).join(&name).exists() {
        bail!(
            "event '{KPROBE_GROUP}:{name}' already exists (delete it with 'scry probe -d {KPROBE_GROUP}:{name}', or name it NAME={func})"
        );
    }
    if opts.verbose {
        eprintln!("Writing event: {line}");
    }
    kprobe::add_event(root, &line).with_context(|| {
        format!(
            "the kernel refused kprobe '{line}' (is '{func}' a kernel function? see /proc/kallsyms)"
        )
    })?;
    let with: Vec<&str> = fetch.iter().filter_map(|f| f.split('=').next()).collect();
    writeln!(out, "Added new event:")?;
    write!(
        out,
        "  {KPROBE_GROUP}:{name:<20} (on {func}{}",
        if point.retprobe { "%return" } else { "" }
    )?;
    if !with.is_empty() {
        write!(out, " with {}", with.join(" "))?;
    }
    writeln!(
        out,
        ")\n\nYou can now use it in all scry tools, such as:\n\n\tscry record -e {KPROBE_GROUP}:{name} -a sleep 1\n"
    )?;
    Ok(())
}

/// `-V FUNC`: the parameters BTF knows, as perf probe -V prints them.
pub(crate) fn vars(func: &str, out: &mut dyn Write) -> anyhow::Result<()> {
    let btf = Btf::load_vmlinux()?;
    let Some(f) = btf.function(func) else {
        bail!("the kernel's BTF knows no function '{func}'");
    };
    writeln!(out, "Available variables at {func}")?;
    writeln!(out, "        @<{func}+0>")?;
    for p in &f.params {
        writeln!(
            out,
            "                {}\t{}",
            btf.type_name(p.type_id),
            p.name
        )?;
    }
    Ok(())
}

/// The kernel's probes, or none where the kernel has no kprobes.
pub(crate) fn defined() -> anyhow::Result<Vec<KernelDefined>> {
    let root = tracefs()?;
    if !kprobe::available(root) {
        return Ok(Vec::new());
    }
    let text = kprobe::list_events(root)
        .with_context(|| format!("cannot read {}/kprobe_events", root.display()))?;
    Ok(text
        .lines()
        .filter_map(kprobe_spec::parse_kernel_defined)
        .collect())
}

/// `-l`: one line per kernel probe, as perf probe -l prints them.
pub(crate) fn list(pattern: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    for d in defined()? {
        if pattern.is_some_and(|p| !d.matches(p)) {
            continue;
        }
        write!(
            out,
            "  {}:{:<20} (on {}{}",
            d.group,
            d.name,
            d.place,
            if d.retprobe { "%return" } else { "" }
        )?;
        if !d.args.is_empty() {
            write!(out, " with {}", d.args.join(" "))?;
        }
        writeln!(out, ")")?;
    }
    Ok(())
}

/// Why deleting the probe `group:name` failed (EBUSY: in use).
pub(crate) fn delete_error(group: &str, name: &str, e: &std::io::Error) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::EBUSY) {
        anyhow::anyhow!("cannot delete {group}:{name}: it is in use (a record or trace is running)")
    } else {
        anyhow::anyhow!("cannot delete {group}:{name}: {e}")
    }
}

/// `-d`: deletes the kernel probes `pattern` names; how many.
pub(crate) fn delete(pattern: &str, out: &mut dyn Write) -> anyhow::Result<usize> {
    let victims: Vec<KernelDefined> = defined()?
        .into_iter()
        .filter(|d| d.matches(pattern))
        .collect();
    let root = tracefs()?;
    for d in &victims {
        kprobe::remove_event(root, &d.group, &d.name)
            .map_err(|e| delete_error(&d.group, &d.name, &e))?;
        writeln!(out, "Removed event: {}:{}", d.group, d.name)?;
    }
    Ok(victims.len())
}
