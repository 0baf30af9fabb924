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
    /// `(period, samples)`: the trees the others are checked against.
    #[cfg(test)]
    pub(crate) fn insert(
        &mut self,
        profile: &Profile,
        path: impl Iterator<Item = FrameId>,
        (period, samples): (u64, u64),
    ) {
        self.nodes[0].period = self.nodes[0].period.saturating_add(period);
        self.nodes[0].samples += samples;
        let mut at = 0;
        for frame in path {
            at = self.add_child(profile, at, frame, (period, samples));
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
    let request = TreeRequest {
        event: ev.event,
        wanted: &wanted,
        slots: entries.len(),
        order,
        min_period,
    };
    if profile.children {
        return super::calltrie::children_trees(profile, &request);
    }
    self_trees(profile, &request)
}

/// The trees asked for: event `event`'s entries in `wanted` (entry key →
/// slot below `slots`), in `order`, without nodes under `min_period`.
pub(super) struct TreeRequest<'a> {
    pub(super) event: usize,
    pub(super) wanted: &'a FxHashMap<RawKey, usize>,
    pub(super) slots: usize,
    pub(super) order: GraphOrder,
    pub(super) min_period: u64,
}

impl<'a> TreeRequest<'a> {
    /// Event, wanted entries, slots, order and threshold, in that order.
    pub(super) fn parts(&self) -> (usize, &'a FxHashMap<RawKey, usize>, usize, GraphOrder, u64) {
        (
            self.event,
            self.wanted,
            self.slots,
            self.order,
            self.min_period,
        )
    }
}

/// One self stack being walked down its entry's tree (`self_trees`).
struct Walk<'a> {
    slot: usize,
    stack: &'a [FrameId],
    weight: (u64, u64),
    /// The node this stack reached at the last depth.
    node: u32,
}

/// The `--no-children` trees: each entry's self stacks, built a depth at a
/// time, so that the nodes under `min_period` (never drawn) are dropped,
/// with everything below them, before the next depth: built whole, the
/// callee trees of a deep profile held every distinct stack (28 of the 62
/// MB of bench/report.sh's deep report). Siblings keep the order in which
/// the stacks, in the profile's order, first reach them, and each node the
/// first frame that reached it: the trees one insertion pass builds, less
/// the nodes under the threshold.
fn self_trees(profile: &Profile, request: &TreeRequest<'_>) -> Vec<CallTree> {
    let (event, wanted, slots, order, min_period) = request.parts();
    let mut trees = vec![CallTree::new(); slots];
    let mut walks = Vec::new();
    for group in &profile.groups {
        if group.event != event {
            continue;
        }
        let stack = profile.stack_of(group);
        let Some(&leaf) = stack.first() else {
            continue;
        };
        let Some(&slot) = wanted.get(&profile.key_in(group, leaf)) else {
            continue;
        };
        let root = &mut trees[slot].nodes[0];
        root.period = root.period.saturating_add(group.period);
        root.samples += group.samples;
        walks.push(Walk {
            slot,
            stack,
            weight: (group.period, group.samples),
            node: 0,
        });
    }
    let mut depth = 0usize;
    while !walks.is_empty() {
        // The nodes this depth adds start here in each tree.
        let firsts: Vec<usize> = trees.iter().map(|t| t.nodes.len()).collect();
        walks.retain_mut(|w| {
            let at = match order {
                GraphOrder::Callee => Some(depth),
                GraphOrder::Caller => w.stack.len().checked_sub(depth + 1),
            };
            let Some(&frame) = at.and_then(|i| w.stack.get(i)) else {
                return false;
            };
            w.node = trees[w.slot].add_child(profile, w.node, frame, w.weight);
            true
        });
        // Where each new node went (None: under the threshold, dropped).
        let moved: Vec<Vec<Option<u32>>> = trees
            .iter_mut()
            .zip(&firsts)
            .map(|(tree, &first)| tree.drop_new_below(first, min_period))
            .collect();
        walks.retain_mut(|w| {
            let first = firsts[w.slot];
            let to = (w.node as usize)
                .checked_sub(first)
                .and_then(|i| moved[w.slot].get(i).copied().flatten());
            match to {
                Some(to) => {
                    w.node = to;
                    true
                }
                None => false,
            }
        });
        depth += 1;
    }
    trees
}

impl CallTree {
    /// The child of `at` for `frame`'s function, made if missing, with
    /// `(period, samples)` added.
    fn add_child(
        &mut self,
        profile: &Profile,
        at: u32,
        frame: FrameId,
        (period, samples): (u64, u64),
    ) -> u32 {
        let sym = profile.keys.sym_of(frame);
        let at = at as usize;
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
        self.nodes[child].period = self.nodes[child].period.saturating_add(period);
        self.nodes[child].samples += samples;
        child as u32
    }

    /// Drops the nodes from `first` on (the last depth's, all leaves)
    /// whose period is under `min_period`; returns where each went.
    fn drop_new_below(&mut self, first: usize, min_period: u64) -> Vec<Option<u32>> {
        let mut moved = Vec::with_capacity(self.nodes.len().saturating_sub(first));
        let mut next = first;
        for i in first..self.nodes.len() {
            if self.nodes[i].period < min_period {
                moved.push(None);
            } else {
                self.nodes.swap(next, i);
                moved.push(Some(next as u32));
                next += 1;
            }
        }
        self.nodes.truncate(next);
        if moved.iter().all(Option::is_some) {
            return moved;
        }
        // Only the nodes before `first` have children among the new ones.
        for node in &mut self.nodes[..first] {
            node.children
                .retain_mut(|c| match (*c as usize).checked_sub(first) {
                    None => true,
                    Some(i) => match moved.get(i).copied().flatten() {
                        Some(to) => {
                            *c = to;
                            true
                        }
                        None => false,
                    },
                });
        }
        moved
    }
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

    /// `--no-children` trees leave out the nodes under the threshold, and
    /// all below them, and are otherwise the whole trees: the same nodes,
    /// periods, frames and sibling order.
    #[test]
    fn self_trees_hold_only_what_the_threshold_lets_through() {
        let mut b = Builder::default();
        b.sample("app", 1, &["f", "a", "main"], 6);
        b.sample("app", 1, &["f", "b", "main"], 1);
        b.sample("app", 1, &["f", "c", "x", "main"], 3);
        b.sample("app", 1, &["g", "main"], 1);
        let options = ProfileOptions {
            children: false,
            ..ProfileOptions::default()
        };
        let profile = Profile::build(&b.samples, &b.frames, &options);
        let f = entry_index(&profile, &mut b, "f");
        for order in [GraphOrder::Callee, GraphOrder::Caller] {
            let whole = &build_trees_above(&profile, 0, &[f], order, 0)[0];
            let cut = &build_trees_above(&profile, 0, &[f], order, 2000)[0];
            // The node at each path of names, with its period and frame.
            fn paths(t: &CallTree, at: u32, path: &mut Vec<FrameId>, out: &mut Vec<String>) {
                for c in t.sorted_children(at) {
                    let n = &t.nodes[c as usize];
                    path.push(n.frame);
                    out.push(format!("{path:?} {} {}", n.period, n.samples));
                    paths(t, c, path, out);
                    path.pop();
                }
            }
            let (mut all, mut kept) = (Vec::new(), Vec::new());
            paths(whole, 0, &mut Vec::new(), &mut all);
            paths(cut, 0, &mut Vec::new(), &mut kept);
            let expected: Vec<String> = all
                .into_iter()
                .filter(|line| {
                    // A path is kept when every node on it is at 2000 or more;
                    // its own period is the smallest on it.
                    let period: u64 = line
                        .split(' ')
                        .nth_back(1)
                        .and_then(|p| p.parse().ok())
                        .unwrap_or(0);
                    period >= 2000
                })
                .collect();
            assert_eq!(kept, expected, "{order:?}");
            assert!(cut.nodes.len() < whole.nodes.len(), "{order:?}");
            assert_eq!(cut.root().period, 10_000);
        }
        // Callee order: f, then a (6) before c (3); b (1) is gone.
        let cut = &build_trees_above(&profile, 0, &[f], GraphOrder::Callee, 2000)[0];
        let n_f = child_named(cut, 0, &mut b, "f");
        let n_a = child_named(cut, n_f, &mut b, "a");
        let n_c = child_named(cut, n_f, &mut b, "c");
        assert_eq!(cut.sorted_children(n_f), vec![n_a, n_c]);
        assert_eq!(cut.nodes.len(), 7, "root, f, a, main, c, x, main");
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
