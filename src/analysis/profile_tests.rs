//! Tests of `profile`: perf's self/children arithmetic, sort keys,
//! filters and limits on small built profiles.

use super::*;
use crate::analysis::hash::FxHashSet;
use crate::analysis::testing::{Builder, find};

/// The set of distinct entry keys on one stack: what `children` counts.
fn distinct_keys(profile: &Profile, sample: &ResolvedSample) -> FxHashSet<RawKey> {
    sample
        .stack
        .iter()
        .filter_map(|&f| profile.key_of(sample, f))
        .collect()
}

#[test]
fn self_goes_to_the_leaf_children_to_every_distinct_frame() {
    let mut b = Builder::default();
    // main -> a -> leaf (3 samples), main -> b (1 sample)
    b.sample("app", 1, &["leaf", "a", "main"], 3);
    b.sample("app", 1, &["b", "main"], 1);
    let profile = Profile::build(&b.samples, &b.frames, &ProfileOptions::default());
    let ev = &profile.events[0];
    assert_eq!(ev.total_period, 4 * 1000);
    assert_eq!(ev.nr_samples, 4);
    let main = find(ev, &b.frames, "main");
    assert_eq!((main.self_period, main.children_period), (0, 4000));
    let leaf = find(ev, &b.frames, "leaf");
    assert_eq!((leaf.self_period, leaf.children_period), (3000, 3000));
    let a = find(ev, &b.frames, "a");
    assert_eq!((a.self_period, a.children_period), (0, 3000));
    assert_eq!(ev.percent(a.children_period), 75.0);
    // Sorted by children: main first.
    assert_eq!(ev.entries[0].frame, Some(b.id("main")));
}

#[test]
fn recursion_counts_once_in_children() {
    let mut b = Builder::default();
    b.sample("app", 1, &["rec", "rec", "rec", "main"], 2);
    b.sample("app", 1, &["leaf", "rec", "rec", "main"], 2);
    let profile = Profile::build(&b.samples, &b.frames, &ProfileOptions::default());
    let ev = &profile.events[0];
    let rec = find(ev, &b.frames, "rec");
    assert_eq!(rec.children_period, 4000, "4 samples, each counted once");
    assert_eq!(rec.children_samples, 4);
    assert_eq!(rec.self_period, 2000);
    for entry in &ev.entries {
        assert!(entry.self_period <= entry.children_period);
        assert!(entry.children_period <= ev.total_period);
    }
    assert_eq!(distinct_keys(&profile, &b.samples[0]).len(), 2);
}

#[test]
fn no_children_uses_self_only_and_sorts_by_it() {
    let mut b = Builder::default();
    b.sample("app", 1, &["x", "main"], 1);
    b.sample("app", 1, &["y", "main"], 3);
    let options = ProfileOptions {
        children: false,
        ..ProfileOptions::default()
    };
    let profile = Profile::build(&b.samples, &b.frames, &options);
    let ev = &profile.events[0];
    assert_eq!(ev.entries.len(), 2, "main has no self time: no entry");
    assert_eq!(ev.entries[0].frame, Some(b.id("y")));
    assert_eq!(ev.entries[0].children_period, ev.entries[0].self_period);
}

#[test]
fn sort_keys_merge_and_split_entries() {
    let mut b = Builder::default();
    b.sample("one", 10, &["f", "main"], 1);
    b.sample("two", 20, &["f", "main"], 1);
    let by_sym = ProfileOptions {
        sort: vec![SortKey::Sym],
        children: false,
        ..ProfileOptions::default()
    };
    let ev = &Profile::build(&b.samples, &b.frames, &by_sym).events[0];
    assert_eq!(ev.entries.len(), 1);
    assert_eq!(ev.entries[0].self_samples, 2);
    assert_eq!(ev.entries[0].comm, None);

    let by_comm_sym = ProfileOptions {
        sort: vec![SortKey::Comm, SortKey::Sym],
        children: false,
        ..ProfileOptions::default()
    };
    let ev = &Profile::build(&b.samples, &b.frames, &by_comm_sym).events[0];
    assert_eq!(ev.entries.len(), 2);

    let by_pid = ProfileOptions {
        sort: vec![SortKey::Pid],
        children: true,
        ..ProfileOptions::default()
    };
    let ev = &Profile::build(&b.samples, &b.frames, &by_pid).events[0];
    assert_eq!(ev.entries.len(), 2);
    // Every frame of a sample has the same pid: children == total share.
    assert!(ev.entries.iter().all(|e| e.children_period == 1000));
    assert_eq!(ev.entries[0].pid, Some(10));
}

#[test]
fn filters_hide_entries_but_keep_the_denominator() {
    let mut b = Builder::default();
    b.sample("one", 10, &["f", "main"], 1);
    b.sample("two", 20, &["g", "main"], 3);
    let options = ProfileOptions {
        filter: SampleFilter {
            comms: vec!["one".into()],
            ..SampleFilter::default()
        },
        ..ProfileOptions::default()
    };
    let ev = &Profile::build(&b.samples, &b.frames, &options).events[0];
    assert_eq!(ev.total_period, 4000);
    assert!(ev.entries.iter().all(|e| e.comm.as_deref() == Some("one")));
    assert_eq!(ev.percent(find(ev, &b.frames, "f").self_period), 25.0);

    let options = ProfileOptions {
        filter: SampleFilter {
            symbols: vec!["g".into()],
            ..SampleFilter::default()
        },
        ..ProfileOptions::default()
    };
    let ev = &Profile::build(&b.samples, &b.frames, &options).events[0];
    assert_eq!(ev.entries.len(), 1);
    assert_eq!(ev.percent(ev.entries[0].self_period), 75.0);
}

#[test]
fn events_get_their_own_sections_and_empty_stacks_count_in_totals() {
    let mut b = Builder::default();
    b.sample("app", 1, &["f"], 2);
    b.event = 1;
    b.sample("app", 1, &["g"], 1);
    b.sample("app", 1, &[], 1);
    let profile = Profile::build(&b.samples, &b.frames, &ProfileOptions::default());
    assert_eq!(profile.events.len(), 2);
    assert_eq!(profile.events[1].event, 1);
    assert_eq!(profile.events[1].nr_samples, 2);
    assert_eq!(profile.events[1].no_ip_samples, 1);
    assert_eq!(profile.events[1].entries.len(), 1);
}

#[test]
fn percent_limit_drops_small_entries() {
    let mut b = Builder::default();
    b.sample("app", 1, &["big"], 99);
    b.sample("app", 1, &["small"], 1);
    let mut profile = Profile::build(&b.samples, &b.frames, &ProfileOptions::default());
    profile.events[0].retain_above(5.0, true);
    assert_eq!(profile.events[0].entries.len(), 1);
}
