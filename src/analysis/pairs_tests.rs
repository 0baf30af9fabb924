//! Unit tests of `pairs`: the built-in and custom pairs, lost records and
//! the wakeup rules, on hand-made occurrences.

use super::*;

fn occ<'a>(
    event: usize,
    time: u64,
    tid: i32,
    fields: &'a HashMap<&'a str, u64>,
) -> Occurrence<'a, HashMap<&'a str, u64>> {
    Occurrence {
        event,
        time,
        cpu: 0,
        tid,
        fields,
    }
}

#[test]
fn builtin_pairs() {
    let roles = vec![
        Builtin::SchedSwitch,
        Builtin::SchedWakeup,
        Builtin::SysEnter,
        Builtin::SysExit,
    ];
    let names = [(74u64, "fsync".to_string())].into_iter().collect();
    let mut e = PairEngine::new(roles, Vec::new(), names);
    e.pids.insert(7);
    let f = |pairs: &[(&'static str, u64)]| pairs.iter().copied().collect::<HashMap<&str, u64>>();
    let enter = f(&[("id", 74)]);
    assert_eq!(e.handle(&occ(2, 100, 7, &enter)), Want::Nothing);
    let out = f(&[("prev_pid", 7), ("prev_state", 2), ("next_pid", 0)]);
    assert_eq!(e.handle(&occ(0, 110, 7, &out)), Want::Stack);
    let wake = f(&[("pid", 7)]);
    e.handle(&occ(1, 500, 0, &wake));
    let back = f(&[("prev_pid", 0), ("prev_state", 0), ("next_pid", 7)]);
    e.handle(&occ(0, 530, 0, &back));
    e.handle(&occ(3, 600, 7, &enter));
    e.finish();
    let t = &e.stats[&Scope::Task(7)];
    assert_eq!(t["sys_fsync"].total, 500);
    assert_eq!(t["sched_switch:D"].total, 390);
    assert_eq!(t["sched_switch:D"].stacks, vec![(0, 390)]);
    assert_eq!(t["sched_wakeup"].total, 30);
}

#[test]
fn lost_records_drop_pairs_they_may_reach() {
    let roles = vec![Builtin::SysEnter, Builtin::SysExit];
    let mut e = PairEngine::new(roles, Vec::new(), HashMap::new());
    e.all = true;
    let f = [("id", 1u64)].into_iter().collect::<HashMap<&str, u64>>();
    let on = |cpu: u32, event, time, tid| Occurrence {
        event,
        time,
        cpu,
        tid,
        fields: &f,
    };
    // Task 5 on CPU 1: a pair that ends after CPU 0's last record.
    e.seen(0, 10);
    e.handle(&on(1, 0, 5, 5));
    e.seen(1, 5);
    e.handle(&on(1, 1, 20, 5));
    e.seen(1, 20);
    // Task 6 opens a call, then CPU 0 reports a loss after 10.
    e.handle(&on(1, 0, 21, 6));
    e.seen(1, 21);
    e.lost(Some(0));
    // Its exit comes, but the start was dropped: nothing is stretched.
    e.handle(&on(1, 1, 900, 6));
    e.finish();
    assert_eq!(e.lost_dropped, 2);
    assert!(e.stats.is_empty(), "{:?}", e.stats);
}

#[test]
fn wakeup_of_a_running_task_waits_zero() {
    let roles = vec![Builtin::SchedSwitch, Builtin::SchedWakeup];
    let mut e = PairEngine::new(roles, Vec::new(), HashMap::new());
    e.all = true;
    e.switch_in(100, 0, 7);
    let wake = [("pid", 7u64)].into_iter().collect::<HashMap<&str, u64>>();
    e.handle(&occ(1, 150, 3, &wake));
    e.finish();
    let w = &e.stats[&Scope::Task(7)]["sched_wakeup"];
    assert_eq!((w.count, w.total), (1, 0));
}

#[test]
fn sched_waking_is_the_wakeup_where_recorded() {
    let roles = vec![
        Builtin::SchedSwitch,
        Builtin::SchedWakeup,
        Builtin::SchedWaking,
    ];
    let mut e = PairEngine::new(roles, Vec::new(), HashMap::new());
    e.all = true;
    let wake = [("pid", 7u64)].into_iter().collect::<HashMap<&str, u64>>();
    e.handle(&occ(2, 100, 3, &wake));
    e.handle(&occ(1, 110, 0, &wake));
    e.switch_in(130, 1, 7);
    e.finish();
    let w = &e.stats[&Scope::Task(7)]["sched_wakeup"];
    assert_eq!((w.count, w.total), (1, 30));
    assert_eq!(e.unmatched, 0);
}

#[test]
fn custom_global_hook_sections_per_value() {
    let hook = Hook::parse("hrtimer_expire_entry,hrtimer/hrtimer_expire_exit,hrtimer,g").unwrap();
    assert!(hook.global && !hook.stack);
    let mut e = PairEngine::new(
        vec![Builtin::Other, Builtin::Other],
        vec![(hook, 0, 1)],
        HashMap::new(),
    );
    let a = [("hrtimer", 0xa)]
        .into_iter()
        .collect::<HashMap<&str, u64>>();
    let b = [("hrtimer", 0xb)]
        .into_iter()
        .collect::<HashMap<&str, u64>>();
    e.handle(&occ(0, 10, 1, &a));
    e.handle(&occ(0, 12, 1, &b));
    e.handle(&occ(1, 15, 1, &a));
    e.handle(&occ(1, 22, 1, &b));
    e.finish();
    assert_eq!(
        e.stats[&Scope::Global(0xa)]["hrtimer_expire_entry-hrtimer_expire_exit"].total,
        5
    );
    assert_eq!(
        e.stats[&Scope::Global(0xb)]["hrtimer_expire_entry-hrtimer_expire_exit"].total,
        10
    );
}

#[test]
fn summed_pairs_take_the_engine_labels() {
    let names = [(74u64, "fsync".to_string())].into_iter().collect();
    let mut e = PairEngine::new(vec![Builtin::SysEnter, Builtin::SysExit], Vec::new(), names);
    e.all = true;
    let f = [("id", 74u64)].into_iter().collect::<HashMap<&str, u64>>();
    e.handle(&occ(0, 100, 7, &f));
    e.handle(&occ(1, 130, 7, &f));
    let summed = PairStat::from_sums([2, 50, 40, 900, 10, 800]);
    e.add_summed(7, SummedKind::Syscall(74), &summed);
    e.add_summed(7, SummedKind::Softirq(1), &summed);
    e.finish();
    let fsync = &e.stats[&Scope::Task(7)]["sys_fsync"];
    assert_eq!((fsync.count, fsync.total), (3, 80));
    assert_eq!((fsync.max, fsync.max_ts), (40, 900));
    assert_eq!((fsync.min, fsync.min_ts), (10, 800));
    assert_eq!(e.stats[&Scope::Task(7)]["softirq:TIMER"].count, 2);
}

#[test]
fn bad_hooks() {
    assert!(Hook::parse("a,b").is_err());
    assert!(
        Hook::parse("a,b/c,d,x")
            .unwrap_err()
            .to_string()
            .contains("unknown flag 'x'")
    );
    assert!(Hook::parse("/c").is_err());
}

/// A sleep whose wakeup is never seen (it fired in a task the kernel emits
/// no samples for, such as this VM's agent threads, or before the
/// switch-out) still counts: it ends at the switch-in, counted apart.
#[test]
fn blocked_without_a_seen_wakeup_ends_at_the_switch_in() {
    let roles = vec![Builtin::SchedSwitch, Builtin::SchedWaking];
    let mut e = PairEngine::new(roles, Vec::new(), HashMap::new());
    e.pids.insert(7);
    let f = |pairs: &[(&'static str, u64)]| pairs.iter().copied().collect::<HashMap<&str, u64>>();
    let out = f(&[("prev_pid", 7), ("prev_state", 1), ("next_pid", 0)]);
    let wake = f(&[("pid", 7)]);
    for round in 0..3u64 {
        let t = round * 1000;
        e.switch_in(t, 0, 7);
        assert_eq!(e.handle(&occ(0, t + 10, 7, &out)), Want::Stack);
        // Round 1's wakeup is seen; rounds 0 and 2 come back unseen.
        if round == 1 {
            e.handle(&occ(1, t + 500, 0, &wake));
        }
    }
    e.switch_in(3000, 1, 7);
    e.finish();
    let s = &e.stats[&Scope::Task(7)]["sched_switch:S"];
    assert_eq!((s.count, s.total), (3, 990 + 490 + 990));
    assert_eq!(e.ended_at_switch_in, 2);
    assert_eq!(e.unmatched, 0);
}
