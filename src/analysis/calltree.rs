//! Call trees under report entries (`scry report -g`), and the whole-profile
//! tree the interactive browser expands.
//!
//! Which paths go into the tree of entry X (the decision perf leaves
//! implicit; ours is stated here):
//! - with `--children`, every sample whose stack holds X contributes:
//!   `caller` order: the path from X down to the leaf (what X spends its
//!   time in), starting at X's *outermost* occurrence so recursion keeps the
//!   whole subtree; `callee` order: the path from X up to the root (who
//!   calls X), starting at X's *innermost* occurrence;
//! - with `--no-children`, only samples whose leaf is X contribute, with
//!   their whole stack: `caller` root → leaf, `callee` leaf → root.
//!
//! Nodes are identified by symbol (name + binary), as perf's default
//! `function` callchain key does. Periods are absolute: a renderer divides
//! by the event's total, so a branch reads as a share of everything
//! recorded, like perf's default `graph` mode.

use super::hash::FxHashMap;
use super::profile::{Profile, RawKey};
use super::sample::FrameId;

/// Order of frames along a call-tree path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GraphOrder {
    /// Callers first, towards callees.
    Caller,
    /// Callees first, towards callers.
    Callee,
}

/// One node: a function reached along some path from the tree's root.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    /// A frame of this node's function (unused on the root).
    pub(crate) frame: FrameId,
    pub(super) sym: u32,
    /// Period of the samples whose path passes through this node.
    pub(crate) period: u64,
    pub(crate) samples: u64,
    /// Child node indices, in insertion order (sort before printing).
    pub(crate) children: Vec<u32>,
}

/// A tree whose node 0 is a virtual root standing for the entry itself.
#[derive(Clone, Debug)]
pub(crate) struct CallTree {
    pub(crate) nodes: Vec<Node>,
}

impl CallTree {
    pub(crate) fn new() -> CallTree {
        CallTree {
            nodes: vec![Node {
                frame: FrameId(u32::MAX),
                sym: u32::MAX,
                period: 0,
                samples: 0,
                children: Vec::new(),
            }],
        }
    }

    pub(crate) fn root(&self) -> &Node {
        &self.nodes[0]
    }

    pub(crate) fn node(&self, index: u32) -> Option<&Node> {
        self.nodes.get(index as usize)
    }

    /// Children of `index`, hottest first (ties by node order, stable).
    pub(crate) fn sorted_children(&self, index: u32) -> Vec<u32> {
        let mut children = self
            .node(index)
            .map(|n| n.children.clone())
            .unwrap_or_default();
        children.sort_by_key(|&c| std::cmp::Reverse(self.node(c).map_or(0, |n| n.period)));
        children
    }

    /// Adds the path (frames in tree order) of samples weighing
    /// `(period, samples)`.
    pub(crate) fn insert(
        &mut self,
        profile: &Profile,
        path: impl Iterator<Item = FrameId>,
        (period, samples): (u64, u64),
    ) {
        let mut at = 0usize;
        self.nodes[0].period += period;
        self.nodes[0].samples += samples;
        for frame in path {
            let sym = profile.keys.sym_of(frame);
            let found = self.nodes[at]
                .children
                .iter()
                .copied()
                .find(|&c| self.nodes[c as usize].sym == sym);
            let child = match found {
                Some(c) => c as usize,
                None => {
                    let c = self.nodes.len();
                    self.nodes.push(Node {
                        frame,
                        sym,
                        period: 0,
                        samples: 0,
                        children: Vec::new(),
                    });
                    self.nodes[at].children.push(c as u32);
                    c
                }
            };
            self.nodes[child].period += period;
            self.nodes[child].samples += samples;
            at = child;
        }
    }
}

impl Default for CallTree {
    fn default() -> Self {
        CallTree::new()
    }
}

/// Builds the whole call trees of the given entries (indices into
/// `profile.events[section].entries`); `Profile::build` already applied the
/// sample filters.
pub(crate) fn build_trees(
    profile: &Profile,
    section: usize,
    entries: &[usize],
    order: GraphOrder,
) -> Vec<CallTree> {
    build_trees_above(profile, section, entries, order, 0)
}

/// The call trees of `entries` without the nodes under `min_period` (a
/// graph threshold: such nodes are never drawn, nor anything below them).
/// Children trees come from one trie of all stacks (`calltrie`); trees of
/// `--no-children` entries hold each self sample's stack once, inserted
/// in one pass over the profile's merged stacks.
pub(crate) fn build_trees_above(
    profile: &Profile,
    section: usize,
    entries: &[usize],
    order: GraphOrder,
    min_period: u64,
) -> Vec<CallTree> {
    let Some(ev) = profile.events.get(section) else {
        return Vec::new();
    };
    // Entry key → its slot in `entries` (and in the trees returned).
    let mut wanted: FxHashMap<RawKey, usize> = FxHashMap::default();
    for (slot, &index) in entries.iter().enumerate() {
        if let Some(entry) = ev.entries.get(index) {
            wanted.insert(entry.key, slot);
        }
    }
    if profile.children {
        return super::calltrie::children_trees(
            profile,
            ev.event,
            &wanted,
            entries.len(),
            order,
            min_period,
        );
    }
    let mut trees = vec![CallTree::new(); entries.len()];
    for group in &profile.groups {
        if group.event != ev.event {
            continue;
        }
        let stack = profile.stack_of(group);
        let Some(&leaf) = stack.first() else {
            continue;
        };
        let Some(&slot) = wanted.get(&profile.key_in(group, leaf)) else {
            continue;
        };
        let weight = (group.period, group.samples);
        let tree = &mut trees[slot];
        match order {
            GraphOrder::Callee => tree.insert(profile, stack.iter().copied(), weight),
            GraphOrder::Caller => tree.insert(profile, stack.iter().rev().copied(), weight),
        }
    }
    trees
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::profile::ProfileOptions;
    use crate::analysis::testing::Builder;

    fn entry_index(profile: &Profile, b: &mut Builder, sym: &str) -> usize {
        let id = b.id(sym);
        profile.events[0]
            .entries
            .iter()
            .position(|e| e.frame == Some(id))
            .unwrap_or_else(|| panic!("no entry {sym}"))
    }

    fn child_named(tree: &CallTree, at: u32, b: &mut Builder, sym: &str) -> u32 {
        let id = b.id(sym);
        tree.node(at)
            .and_then(|n| {
                n.children
                    .iter()
                    .copied()
                    .find(|&c| tree.nodes[c as usize].frame == id)
            })
            .unwrap_or_else(|| panic!("no child {sym}"))
    }

    #[test]
    fn caller_tree_of_a_children_entry_goes_down_to_the_leaves() {
        let mut b = Builder::default();
        b.sample("app", 1, &["leaf", "a", "main"], 3);
        b.sample("app", 1, &["b", "main"], 1);
        let profile = Profile::build(&b.samples, &b.frames, &ProfileOptions::default());
        let main = entry_index(&profile, &mut b, "main");
        let trees = build_trees(&profile, 0, &[main], GraphOrder::Caller);
        let tree = &trees[0];
        assert_eq!(tree.root().period, 4000);
        let n_main = child_named(tree, 0, &mut b, "main");
        assert_eq!(tree.nodes[n_main as usize].period, 4000);
        let n_a = child_named(tree, n_main, &mut b, "a");
        assert_eq!(tree.nodes[n_a as usize].period, 3000);
        let n_b = child_named(tree, n_main, &mut b, "b");
        assert_eq!(tree.nodes[n_b as usize].period, 1000);
        assert_eq!(tree.sorted_children(n_main), vec![n_a, n_b]);
    }

    #[test]
    fn recursion_enters_the_tree_once_from_the_outermost_frame() {
        let mut b = Builder::default();
        b.sample("app", 1, &["leaf", "rec", "rec", "main"], 2);
        let profile = Profile::build(&b.samples, &b.frames, &ProfileOptions::default());
        let rec = entry_index(&profile, &mut b, "rec");
        let trees = build_trees(&profile, 0, &[rec], GraphOrder::Caller);
        let tree = &trees[0];
        assert_eq!(tree.root().period, 2000, "each sample once");
        let outer = child_named(tree, 0, &mut b, "rec");
        let inner = child_named(tree, outer, &mut b, "rec");
        let leaf = child_named(tree, inner, &mut b, "leaf");
        assert_eq!(tree.nodes[leaf as usize].period, 2000);
    }

    #[test]
    fn callee_tree_goes_up_to_the_callers() {
        let mut b = Builder::default();
        b.sample("app", 1, &["f", "a", "main"], 3);
        b.sample("app", 1, &["f", "b", "main"], 1);
        let profile = Profile::build(&b.samples, &b.frames, &ProfileOptions::default());
        let f = entry_index(&profile, &mut b, "f");
        let trees = build_trees(&profile, 0, &[f], GraphOrder::Callee);
        let tree = &trees[0];
        let n_f = child_named(tree, 0, &mut b, "f");
        let n_a = child_named(tree, n_f, &mut b, "a");
        let n_b = child_named(tree, n_f, &mut b, "b");
        assert_eq!(tree.nodes[n_a as usize].period, 3000);
        assert_eq!(tree.nodes[n_b as usize].period, 1000);
        let n_main = child_named(tree, n_b, &mut b, "main");
        assert_eq!(tree.nodes[n_main as usize].period, 1000);
    }

    #[test]
    fn no_children_trees_hold_whole_stacks_of_self_samples() {
        let mut b = Builder::default();
        b.sample("app", 1, &["f", "a", "main"], 3);
        b.sample("app", 1, &["a", "main"], 1);
        let options = ProfileOptions {
            children: false,
            ..ProfileOptions::default()
        };
        let profile = Profile::build(&b.samples, &b.frames, &options);
        let f = entry_index(&profile, &mut b, "f");
        let a = entry_index(&profile, &mut b, "a");
        let trees = build_trees(&profile, 0, &[f, a], GraphOrder::Caller);
        assert_eq!(trees[0].root().period, 3000);
        assert_eq!(trees[1].root().period, 1000, "only a's self samples");
        let n_main = child_named(&trees[0], 0, &mut b, "main");
        let n_a = child_named(&trees[0], n_main, &mut b, "a");
        child_named(&trees[0], n_a, &mut b, "f");
    }
}
