//! Tests of the engine's hook ranking, group planning and libbpf log reading.

use super::*;

#[test]
fn ranks_sections_and_names_groups() {
    assert!(HookKind::of_section("fentry/x") < HookKind::of_section("tp_btf/sched_switch"));
    assert!(HookKind::of_section("tp_btf/x") < HookKind::of_section("raw_tp/x"));
    assert!(HookKind::of_section("raw_tp/x") < HookKind::of_section("tracepoint/sched/x"));
    assert!(HookKind::of_section("tp/sched/x") < HookKind::of_section("kprobe/f"));
    assert_eq!(group_of("scry_cd_switch__btf"), "scry_cd_switch");
    assert_eq!(group_of("scry_fork"), "scry_fork");
}

#[test]
fn finds_the_failed_programs_in_libbpf_log() {
    let log = vec![
        "libbpf: prog 'a__btf': BPF program load failed: -EPERM".to_string(),
        "libbpf: prog 'a__btf': -- BEGIN PROG LOAD LOG --".to_string(),
        "libbpf: failed to load object 'x'".to_string(),
    ];
    let failed = failed_programs(&log);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed["a__btf"], "BPF program load failed: -EPERM");
}

#[test]
fn function_groups_go_together() {
    let variant = |prog: &str, section: &str| Variant {
        prog: prog.to_string(),
        section: section.to_string(),
        kind: HookKind::of_section(section),
    };
    let group = |role, variants| Group {
        variants,
        current: 0,
        refused: Vec::new(),
        optional: true,
        role,
    };
    let needed = Role::Function { needed: true };
    let mut groups = BTreeMap::new();
    groups.insert(
        "a".to_string(),
        group(needed, vec![variant("a__fentry", "fentry/f")]),
    );
    groups.insert(
        "b".to_string(),
        group(
            needed,
            vec![
                variant("b__fentry", "fentry/g"),
                variant("b__kprobe", "kprobe/g"),
            ],
        ),
    );
    groups.insert(
        "t".to_string(),
        group(Role::Tracepoint, vec![variant("t__tp", "tracepoint/x/y")]),
    );
    assert!(functions_alive(&groups));
    assert!(on_standby(&groups["t"], true));
    groups
        .get_mut("a")
        .map(|g| g.demote("a", "EPERM".to_string()));
    settle_functions(&mut groups);
    assert!(!functions_alive(&groups));
    assert!(groups["b"].chosen().is_none());
    assert!(
        groups["b"].refused[0].reason.contains("a has no hook"),
        "{:?}",
        groups["b"]
    );
    assert!(!on_standby(&groups["t"], functions_alive(&groups)));
}

#[test]
fn describes_the_hook_and_the_refusals() {
    let hook = Hook {
        group: "g".to_string(),
        section: Some("raw_tp/sched_switch".to_string()),
        refused: vec![Refusal {
            section: "tp_btf/sched_switch".to_string(),
            reason: "EPERM".to_string(),
        }],
        standby: false,
    };
    assert_eq!(
        hook.describe(),
        "g: raw_tp/sched_switch (tp_btf/sched_switch refused: EPERM)"
    );
}
