//! The BPF engine's kernel side: loads a skeleton's object and attaches
//! each of its programs to the best hook the running kernel accepts, reads
//! maps, and says in one line what is missing when BPF cannot be used.
//!
//! Hook choice, made at run time from what loads: a program may come in
//! variants named `GROUP__KIND` (e.g. `scry_cd_switch__btf` and
//! `scry_cd_switch__raw`), one per hook; their sections rank them (fentry
//! and fexit, then tp_btf, then raw_tp, then classic tracepoints, then
//! kprobes). Every group starts at its best variant; when the object does
//! not load, the programs libbpf names in its log are demoted to their
//! group's next variant and the object is opened and loaded again (so each
//! refusal costs one load, and the reason is kept for `-v`). An attach
//! refusal demotes the same way. A group listed as optional may end with
//! no hook (its tracepoint does not exist here); any other group without
//! a hook is an error naming every refusal.
//!
//! bcc's hooks on kernel functions (`GroupRules::functions`: fentry/fexit,
//! then kprobe/kretprobe variants) go together, in place of a tool's
//! `GroupRules::tracepoints` groups: those are not loaded while every
//! needed function group has a variant left; once one has none, all are
//! given up (each says why) and the tracepoint groups load and attach.
//!
//! A classic tracepoint program's return value decides, for every perf
//! event on that tracepoint system-wide, whether the record is delivered
//! (the kernel's `perf_trace_run_bpf_submit`): ours return 0, as bcc's do,
//! so while such a tool runs, `perf record -e` of the same tracepoint gets
//! nothing (`scry syscount` on classic tracepoints: perf counted 0 of 69
//! sys_exit; on raw_tp, 69). tp_btf and raw_tp programs leave perf's
//! events alone: one more reason they rank first. The tools with classic
//! tracepoints only (opensnoop, execsnoop, statsnoop, ...) still do this.
//!
//! Ownership: programs, maps and links are file descriptors of this
//! process (nothing is pinned), so however scry ends, even by SIGKILL, the
//! kernel detaches and frees them when the descriptors close.
//! `SCRY_BPF_HOOKS` (a comma list of kinds: `fentry,tp_btf,raw_tp,tp,
//! kprobe`) restricts the kinds tried, to see or test a fallback.

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, PrintLevel};

use super::bpf::io_error;
pub(crate) use super::bpf::preflight;
pub(crate) use super::bpf_maps::*;

/// A hook kind, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum HookKind {
    Fentry,
    TpBtf,
    RawTp,
    Tracepoint,
    Kprobe,
    /// A program run by a perf event (a sampling clock): attached by
    /// [`Loaded::attach_perf_events`], never by `attach`.
    PerfEvent,
    Other,
}

impl HookKind {
    /// The kind of a program from its ELF section (`tp_btf/sched_switch`).
    pub(crate) fn of_section(section: &str) -> HookKind {
        let prefix = section.split('/').next().unwrap_or("");
        match prefix {
            "fentry" | "fexit" | "fmod_ret" => HookKind::Fentry,
            "tp_btf" => HookKind::TpBtf,
            "raw_tp" | "raw_tracepoint" => HookKind::RawTp,
            "tp" | "tracepoint" => HookKind::Tracepoint,
            "kprobe" | "kretprobe" | "ksyscall" | "kretsyscall" => HookKind::Kprobe,
            "perf_event" => HookKind::PerfEvent,
            _ => HookKind::Other,
        }
    }

    /// The spelling `SCRY_BPF_HOOKS` uses.
    pub(crate) fn name(self) -> &'static str {
        match self {
            HookKind::Fentry => "fentry",
            HookKind::TpBtf => "tp_btf",
            HookKind::RawTp => "raw_tp",
            HookKind::Tracepoint => "tp",
            HookKind::Kprobe => "kprobe",
            HookKind::PerfEvent => "perf_event",
            HookKind::Other => "other",
        }
    }
}

/// A hook that was tried and refused, and what the kernel or libbpf said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) section: String,
    pub(crate) reason: String,
}

/// Where one group of programs ended up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hook {
    pub(crate) group: String,
    /// The section of the variant in use; `None`: an optional group left
    /// without a hook, or a tracepoint group on standby.
    pub(crate) section: Option<String>,
    /// Better variants refused first, best first.
    pub(crate) refused: Vec<Refusal>,
    /// A tracepoint group not loaded: the kernel-function hooks count.
    pub(crate) standby: bool,
}

impl Hook {
    /// The `-v` line: which hook was used, and why a better one was not.
    pub(crate) fn describe(&self) -> String {
        let used = match &self.section {
            Some(section) => format!("{}: {section}", self.group),
            None if self.standby => format!(
                "{}: not attached (the kernel-function hooks count)",
                self.group
            ),
            None => format!("{}: not attached", self.group),
        };
        if self.refused.is_empty() {
            return used;
        }
        let why: Vec<String> = self
            .refused
            .iter()
            .map(|r| format!("{} refused: {}", r.section, r.reason))
            .collect();
        format!("{used} ({})", why.join("; "))
    }
}

/// One program variant of the object.
#[derive(Clone, Debug)]
struct Variant {
    prog: String,
    section: String,
    kind: HookKind,
}

/// What a group is to its tool (see `GroupRules::functions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Plain,
    /// One of bcc's hooks on kernel functions; `needed`: the path is lost
    /// without it.
    Function {
        needed: bool,
    },
    /// The fallback of the function groups.
    Tracepoint,
}

/// The variants of one group, best first, and which one is in use.
#[derive(Clone, Debug)]
struct Group {
    variants: Vec<Variant>,
    current: usize,
    refused: Vec<Refusal>,
    optional: bool,
    role: Role,
}

impl Group {
    fn chosen(&self) -> Option<&Variant> {
        self.variants.get(self.current)
    }

    /// The current variant was refused: move on. Err when none is left
    /// and the group is not optional.
    fn demote(&mut self, name: &str, reason: String) -> io::Result<()> {
        if let Some(v) = self.chosen() {
            self.refused.push(Refusal {
                section: v.section.clone(),
                reason,
            });
        }
        self.current += 1;
        if self.chosen().is_none() && !self.optional {
            let why: Vec<String> = self
                .refused
                .iter()
                .map(|r| format!("{}: {}", r.section, r.reason))
                .collect();
            return Err(io::Error::other(format!(
                "no hook for the BPF program {name} loads here ({})",
                why.join("; ")
            )));
        }
        Ok(())
    }
}

/// Which groups of an object may end without a hook (their tracepoint may
/// not exist here), which are not wanted this run (not loaded), and which
/// are bcc's hooks on kernel functions with their tracepoint fallback.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GroupRules<'a> {
    pub(crate) optional: &'a [&'a str],
    pub(crate) skip: &'a [&'a str],
    /// Groups on kernel functions (fentry/fexit, then kprobe/kretprobe
    /// variants), used all together (those also in `optional` may be
    /// missing) or not at all.
    pub(crate) functions: &'a [&'a str],
    /// Groups loaded only when the function groups are given up.
    pub(crate) tracepoints: &'a [&'a str],
}

/// Whether the function groups are still in the running: there are some,
/// and each needed one has a variant left.
fn functions_alive(groups: &BTreeMap<String, Group>) -> bool {
    let mut any = false;
    for g in groups.values() {
        if let Role::Function { needed } = g.role {
            any = true;
            if needed && g.chosen().is_none() {
                return false;
            }
        }
    }
    any
}

/// Once a needed function group has no variant left, gives up the others
/// (saying why), so the tracepoint groups take over.
fn settle_functions(groups: &mut BTreeMap<String, Group>) {
    if functions_alive(groups) {
        return;
    }
    let lost: Vec<String> = groups
        .iter()
        .filter(|(_, g)| g.role == Role::Function { needed: true } && g.chosen().is_none())
        .map(|(name, _)| name.clone())
        .collect();
    let Some(first) = lost.first() else { return };
    for g in groups.values_mut() {
        if matches!(g.role, Role::Function { .. })
            && let Some(v) = g.chosen()
        {
            g.refused.push(Refusal {
                section: v.section.clone(),
                reason: format!(
                    "given up: {first} has no hook (the kernel-function hooks go together)"
                ),
            });
            g.current = g.variants.len();
        }
    }
}

/// Whether group `g` is left out this load: a tracepoint group while the
/// function groups are in the running.
fn on_standby(g: &Group, functions: bool) -> bool {
    g.role == Role::Tracepoint && functions
}

impl<'a> GroupRules<'a> {
    /// These groups may end without a hook; every group is wanted.
    pub(crate) fn optional(optional: &'a [&'a str]) -> GroupRules<'a> {
        GroupRules {
            optional,
            ..GroupRules::default()
        }
    }

    /// bcc's hooks on kernel functions (`functions`), else the tracepoint
    /// groups they stand in for; `optional` may end without a hook.
    pub(crate) fn kernel_functions(
        functions: &'a [&'a str],
        tracepoints: &'a [&'a str],
        optional: &'a [&'a str],
    ) -> GroupRules<'a> {
        GroupRules {
            optional,
            functions,
            tracepoints,
            ..GroupRules::default()
        }
    }

    /// These groups are not wanted this run; every other one needs a hook.
    pub(crate) fn skipping(skip: &'a [&'a str]) -> GroupRules<'a> {
        GroupRules {
            skip,
            ..GroupRules::default()
        }
    }
}

/// libbpf's warnings of the current load, to learn which program failed.
static LIBBPF_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep_libbpf_line(_level: PrintLevel, line: String) {
    if let Ok(mut log) = LIBBPF_LOG.lock()
        && log.len() < 256
    {
        log.push(line.trim_end().to_string());
    }
}

fn take_libbpf_log() -> Vec<String> {
    LIBBPF_LOG
        .lock()
        .map(|mut log| std::mem::take(&mut *log))
        .unwrap_or_default()
}

/// The programs libbpf's log says failed, with its first line about each.
fn failed_programs(log: &[String]) -> BTreeMap<String, String> {
    let mut failed = BTreeMap::new();
    for line in log {
        let Some(rest) = line.split("prog '").nth(1) else {
            continue;
        };
        let Some((name, what)) = rest.split_once('\'') else {
            continue;
        };
        let what = what.trim_start_matches(':').trim();
        failed
            .entry(name.to_string())
            .or_insert_with(|| what.to_string());
    }
    failed
}

/// The kinds `SCRY_BPF_HOOKS` allows (all when unset or empty).
fn allowed_kinds() -> Option<Vec<String>> {
    let value = std::env::var("SCRY_BPF_HOOKS").ok()?;
    let kinds: Vec<String> = value
        .split(',')
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .collect();
    (!kinds.is_empty()).then_some(kinds)
}

/// The group of a program: its name up to `__`.
fn group_of(prog: &str) -> &str {
    prog.split_once("__").map_or(prog, |(group, _)| group)
}

/// A skeleton loaded, its programs attached (or only loaded, see
/// [`load_only`]); links close with it.
pub(crate) struct Loaded<S> {
    pub(crate) skel: S,
    links: Vec<Link>,
    groups: BTreeMap<String, Group>,
}

impl<S> std::fmt::Debug for Loaded<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("links", &self.links.len())
            .field("hooks", &self.hooks())
            .finish()
    }
}

impl<S> Loaded<S> {
    /// Where each group ended up, by group name.
    pub(crate) fn hooks(&self) -> Vec<Hook> {
        let functions = functions_alive(&self.groups);
        self.groups
            .iter()
            .map(|(name, g)| {
                let standby = on_standby(g, functions);
                Hook {
                    group: name.clone(),
                    section: g.chosen().filter(|_| !standby).map(|v| v.section.clone()),
                    refused: g.refused.clone(),
                    standby,
                }
            })
            .collect()
    }

    /// Whether group `name` has a hook.
    pub(crate) fn has(&self, name: &str) -> bool {
        let functions = functions_alive(&self.groups);
        self.groups
            .get(name)
            .is_some_and(|g| g.chosen().is_some() && !on_standby(g, functions))
    }

    /// Whether bcc's hooks on kernel functions count (`GroupRules::functions`),
    /// not the tracepoint groups.
    pub(crate) fn on_kernel_functions(&self) -> bool {
        functions_alive(&self.groups)
    }

    /// Err saying `missing` (what did not attach, and what would provide
    /// it) unless one of `groups` (all optional) has a hook.
    pub(crate) fn require_any(&self, groups: &[&str], missing: &str) -> io::Result<()> {
        if groups.iter().any(|g| self.has(g)) {
            Ok(())
        } else {
            Err(io::Error::other(missing.to_string()))
        }
    }
}

impl<S: Skel<'static>> Loaded<S> {
    /// Attaches every loaded program; a refusal of an optional group drops
    /// it, any other is an error (used after `load(.., Attach::Later)`,
    /// where reloading is not possible).
    pub(crate) fn attach(&mut self) -> io::Result<()> {
        self.attach_programs(false).map(drop)
    }

    /// Attaches the programs in use; a refused one demotes its group.
    /// `stop`: stop at the first refusal and detach all (the caller loads
    /// again). True when something was refused.
    fn attach_programs(&mut self, stop: bool) -> io::Result<bool> {
        let mut refused = false;
        for (prog, group) in self.loaded_programs() {
            match attach_one(&self.skel, &prog) {
                Ok(link) => self.links.push(link),
                Err((e, reason)) => {
                    let g = self.groups.get_mut(&group).ok_or(e)?;
                    g.demote(&group, reason)?;
                    refused = true;
                    if stop {
                        self.links.clear();
                        break;
                    }
                }
            }
        }
        Ok(refused)
    }

    /// Attaches program `prog` to each of `events` (perf events: a
    /// software clock per CPU); each link owns its event and closes it.
    pub(crate) fn attach_perf_events(
        &mut self,
        prog: &str,
        events: Vec<super::perf_event::PerfEventFd>,
    ) -> io::Result<()> {
        let found = find_program(&self.skel, prog)?;
        for event in events {
            let link = found
                .attach_perf_event(event.raw_fd())
                .map_err(|e| io_error(&format!("attaching {prog} to a perf event"), e))?;
            let _owned_by_link = event.into_raw_fd();
            self.links.push(link);
        }
        Ok(())
    }

    /// Attaches program `prog` as a uprobe (or, `retprobe`, a return
    /// probe) at `file_offset` of `path`, in process `pid` only (-1: all):
    /// the uprobe PMU's descriptor belongs to the link, so it goes with
    /// scry however it ends. The caller found the offset (nothing here
    /// reads ELF). The program reads `cookie` with `bpf_get_attach_cookie`.
    pub(crate) fn attach_uprobe(
        &mut self,
        prog: &str,
        retprobe: bool,
        pid: i32,
        (path, file_offset): (&std::path::Path, u64),
        cookie: u64,
    ) -> io::Result<()> {
        let found = find_program(&self.skel, prog)?;
        let offset = usize::try_from(file_offset)
            .map_err(|_| io::Error::other(format!("{prog}: offset {file_offset:#x} too large")))?;
        let opts = libbpf_rs::UprobeOpts {
            cookie,
            retprobe,
            ..libbpf_rs::UprobeOpts::default()
        };
        let link = found
            .attach_uprobe_with_opts(pid, path, offset, opts)
            .map_err(|e| {
                io_error(
                    &format!("attaching {prog} to {}:{file_offset:#x}", path.display()),
                    e,
                )
            })?;
        self.links.push(link);
        Ok(())
    }

    /// Detaches every program: maps stop moving.
    pub(crate) fn detach(&mut self) {
        self.links.clear();
    }

    /// (program, group) of the variants in use that attach to a hook
    /// (not the perf-event programs: `attach_perf_events` attaches those).
    fn loaded_programs(&self) -> Vec<(String, String)> {
        let functions = functions_alive(&self.groups);
        self.groups
            .iter()
            .filter(|(_, g)| !on_standby(g, functions))
            .filter_map(|(name, g)| Some((g.chosen()?, name)))
            .filter(|(v, _)| v.kind != HookKind::PerfEvent)
            .map(|(v, name)| (v.prog.clone(), name.clone()))
            .collect()
    }
}

/// Program `prog` of the loaded object, or an error naming it.
fn find_program<'a, S: Skel<'static>>(
    skel: &'a S,
    prog: &str,
) -> io::Result<libbpf_rs::ProgramMut<'a>> {
    skel.object()
        .progs_mut()
        .find(|p| p.name().to_str() == Some(prog))
        .ok_or_else(|| io::Error::other(format!("the BPF object has no program {prog}")))
}

fn attach_one<S: Skel<'static>>(skel: &S, prog: &str) -> Result<Link, (io::Error, String)> {
    let found = find_program(skel, prog).map_err(|e| (e, "missing".to_string()))?;
    found.attach().map_err(|e| {
        let reason = e.to_string();
        (io_error(&format!("attaching {prog}"), e), reason)
    })
}

/// When [`load`] attaches the programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Attach {
    /// At once; a refused hook demotes its group and the object is loaded
    /// again with the next variant.
    Now,
    /// Later, by [`Loaded::attach`] (the caller fills maps first).
    Later,
}

/// Opens, configures and loads an object with the best variant of each
/// group, and attaches them (`attach`). `configure` sets the object's
/// `.rodata` before each load; `rules` say which groups may end without a
/// hook and which to leave out.
pub(crate) fn load<B, C>(
    builder: impl Fn() -> B,
    configure: C,
    rules: GroupRules<'_>,
    attach: Attach,
) -> io::Result<Loaded<<B::Output as OpenSkel<'static>>::Output>>
where
    B: SkelBuilder<'static>,
    C: FnMut(&mut B::Output) -> io::Result<()>,
{
    if attach == Attach::Later {
        if !rules.functions.is_empty() {
            // A kprobe refused at attach would need the tracepoint
            // programs, which were not loaded.
            return Err(io::Error::other(
                "kernel-function hooks attach at load (bpf_engine::load_prepared)",
            ));
        }
        let mut configure = configure;
        return load_with(&builder, &mut configure, rules, None);
    }
    load_prepared(builder, configure, rules, |_| Ok(()))
}

/// As [`load`] with `Attach::Now`, and `prepare` called on each loaded
/// object before its programs attach (to fill maps a program reads from
/// its first run: a cgroup, the processes to watch). A refused hook loads
/// the object again, so `prepare` may run more than once.
pub(crate) fn load_prepared<B, C, P>(
    builder: impl Fn() -> B,
    configure: C,
    rules: GroupRules<'_>,
    mut prepare: P,
) -> io::Result<Loaded<<B::Output as OpenSkel<'static>>::Output>>
where
    B: SkelBuilder<'static>,
    C: FnMut(&mut B::Output) -> io::Result<()>,
    P: FnMut(&mut <B::Output as OpenSkel<'static>>::Output) -> io::Result<()>,
{
    let mut configure = configure;
    let mut groups = None;
    loop {
        let mut loaded = load_with(&builder, &mut configure, rules, groups.take())?;
        prepare(&mut loaded.skel)?;
        if !loaded.attach_programs(true)? {
            return Ok(loaded);
        }
        groups = Some(std::mem::take(&mut loaded.groups));
    }
}

/// [`load`] with every group wanted and needed, attached at once: what
/// most tools' objects ask.
pub(crate) fn load_now<B, C>(
    builder: impl Fn() -> B,
    configure: C,
) -> io::Result<Loaded<<B::Output as OpenSkel<'static>>::Output>>
where
    B: SkelBuilder<'static>,
    C: FnMut(&mut B::Output) -> io::Result<()>,
{
    load(builder, configure, GroupRules::default(), Attach::Now)
}

fn load_with<B, C>(
    builder: &impl Fn() -> B,
    configure: &mut C,
    rules: GroupRules<'_>,
    groups: Option<BTreeMap<String, Group>>,
) -> io::Result<Loaded<<B::Output as OpenSkel<'static>>::Output>>
where
    B: SkelBuilder<'static>,
    C: FnMut(&mut B::Output) -> io::Result<()>,
{
    let mut groups = match groups {
        Some(groups) => groups,
        None => {
            let open = super::bpf::open_skel(builder())?;
            plan_groups(&open, rules)?
        }
    };
    loop {
        settle_functions(&mut groups);
        let functions = functions_alive(&groups);
        let mut open = super::bpf::open_skel(builder())?;
        configure(&mut open)?;
        for mut prog in open.open_object_mut().progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            let wanted = groups
                .get(group_of(&name))
                .filter(|g| !on_standby(g, functions))
                .and_then(Group::chosen)
                .is_some_and(|v| v.prog == name);
            prog.set_autoload(wanted);
        }
        take_libbpf_log();
        libbpf_rs::set_print(Some((PrintLevel::Warn, keep_libbpf_line)));
        let result = open.load();
        libbpf_rs::set_print(None);
        let err = match result {
            Ok(skel) => {
                return Ok(Loaded {
                    skel,
                    links: Vec::new(),
                    groups,
                });
            }
            Err(err) => err,
        };
        let log = take_libbpf_log();
        let failed = failed_programs(&log);
        let mut demoted = false;
        for (name, g) in groups.iter_mut() {
            let Some(v) = g.chosen() else { continue };
            if let Some(reason) = failed.get(&v.prog) {
                let reason = if reason.is_empty() {
                    err.to_string()
                } else {
                    reason.clone()
                };
                g.demote(name, reason)?;
                demoted = true;
            }
        }
        if !demoted {
            return Err(io_error("loading the BPF programs", err));
        }
    }
}

/// The object's groups, their variants ranked, `SCRY_BPF_HOOKS` applied.
fn plan_groups<O: OpenSkel<'static>>(
    open: &O,
    rules: GroupRules<'_>,
) -> io::Result<BTreeMap<String, Group>> {
    let allowed = allowed_kinds();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for prog in open.open_object().progs() {
        let name = prog.name().to_string_lossy().into_owned();
        let section = prog.section().to_string_lossy().into_owned();
        let kind = HookKind::of_section(&section);
        let group = group_of(&name).to_string();
        if rules.skip.contains(&group.as_str()) {
            continue;
        }
        let listed = |list: &[&str]| list.contains(&group.as_str());
        let optional = listed(rules.optional);
        let role = if listed(rules.functions) {
            Role::Function { needed: !optional }
        } else if listed(rules.tracepoints) {
            Role::Tracepoint
        } else {
            Role::Plain
        };
        let entry = groups.entry(group.clone()).or_insert_with(|| Group {
            variants: Vec::new(),
            current: 0,
            refused: Vec::new(),
            // A function group may end without a hook: its tool's
            // tracepoint groups take over.
            optional: optional || role != Role::Plain && role != Role::Tracepoint,
            role,
        });
        if allowed
            .as_ref()
            .is_some_and(|kinds| !kinds.iter().any(|k| k == kind.name()))
        {
            entry.refused.push(Refusal {
                section,
                reason: "not in SCRY_BPF_HOOKS".to_string(),
            });
            continue;
        }
        entry.variants.push(Variant {
            prog: name,
            section,
            kind,
        });
    }
    for (name, g) in &mut groups {
        // Kinds best first; within a kind, by name (`__fentry` before
        // `__fentry2`: a tool's second choice of function).
        g.variants
            .sort_by(|a, b| a.kind.cmp(&b.kind).then_with(|| a.prog.cmp(&b.prog)));
        if g.variants.is_empty() && !g.optional {
            return Err(io::Error::other(format!(
                "SCRY_BPF_HOOKS leaves no hook for the BPF program {name}"
            )));
        }
    }
    Ok(groups)
}

#[cfg(test)]
#[path = "bpf_engine_tests.rs"]
mod tests;
