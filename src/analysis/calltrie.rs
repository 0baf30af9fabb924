//! Children call trees (`--children`) from one trie of every stack.
//!
//! The tree of entry X holds, for every sample whose stack holds X, the path
//! from X's first occurrence (outermost in caller order, innermost in callee
//! order) to the end of the stack, merged by symbol. Inserting that path
//! into X's tree for every (stack, X) pair costs depth × distinct entries
//! per stack, and holds every entry's whole tree: on deep stacks that was
//! most of `scry report`'s time and memory.
//!
//! Instead, every stack goes once into a trie in path order (one trie per
//! sample context: comm, pid, tid as sorted on). A first occurrence of X is
//! a trie node, and the samples below distinct first occurrences are
//! distinct, so X's tree is the merge, by symbol, of the subtries under
//! X's first occurrences. The merge runs top-down and stops at nodes under
//! `min_period` (the graph threshold): a node's period bounds its
//! descendants', and nodes under the threshold are never drawn. Children
//! come out in the order their first stack was seen, as insertion gives,
//! so ties sort the same way.
//!
//! A sample is *self* for the entry of its leaf, and there perf draws its
//! whole stack (in `caller` order: root → leaf, so a leaf's callers show),
//! not the path from the entry's first occurrence; in `callee` order the
//! two are the same path. Such samples (whose leaf's first occurrence is
//! not the root frame, where the paths differ) are taken out of the
//! subtries under the entry's first occurrences (`Adjust::Exclude`) and
//! merged in again along their whole path from the context root
//! (`Adjust::Only`): both walk the same trie, and a node's order among its
//! siblings is the first sample that reaches it in that tree.

use super::calltree::{CallTree, GraphOrder, Node, TreeRequest};
use super::hash::{FxHashMap, FxHashSet};
use super::profile::{GroupContext, Profile, RawKey};
use super::sample::FrameId;

const NONE: u32 = u32::MAX;

/// One trie node: a frame reached along a path of frames from a context's
/// root.
#[derive(Clone, Debug)]
struct TrieNode {
    frame: FrameId,
    sym: u32,
    /// The stack group that created this node (orders merged children).
    first: u32,
    period: u64,
    samples: u64,
    first_child: u32,
    next_sibling: u32,
    parent: u32,
    /// The first group whose stack ends here (then `Trie::end_next`).
    end_head: u32,
}

/// The stacks of one event's groups, in path order.
struct Trie {
    nodes: Vec<TrieNode>,
    /// Per context: its root node and a group of it (for entry keys).
    roots: Vec<(u32, usize)>,
    /// Per group: the node its stack ends at (NONE if not in the trie), and
    /// the next group ending at the same node.
    leaf_node: Vec<u32>,
    end_next: Vec<u32>,
}

/// A node merged into a tree node: (node, period, samples, first group).
type Member = (u32, u64, u64, u32);

/// Weights to take out of (or to keep only of) the trie's node weights, for
/// one entry's tree: node → (period, samples, first group reaching it).
struct Adjust {
    nodes: FxHashMap<u32, (u64, u64, u32)>,
    /// The groups concerned.
    groups: FxHashSet<u32>,
    only: bool,
}

impl Trie {
    fn build(profile: &Profile, section_event: usize, order: GraphOrder) -> Trie {
        let mut nodes: Vec<TrieNode> = Vec::new();
        let mut roots: Vec<(u32, usize)> = Vec::new();
        let mut contexts: FxHashMap<GroupContext, u32> = FxHashMap::default();
        let mut children: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut leaf_node = vec![NONE; profile.groups.len()];
        let mut end_next = vec![NONE; profile.groups.len()];
        let new_node = |nodes: &mut Vec<TrieNode>, frame, sym, first, parent| {
            nodes.push(TrieNode {
                frame,
                sym,
                first,
                period: 0,
                samples: 0,
                first_child: NONE,
                next_sibling: NONE,
                parent,
                end_head: NONE,
            });
            (nodes.len() - 1) as u32
        };
        for (g, group) in profile.groups.iter().enumerate() {
            if group.event != section_event {
                continue;
            }
            let stack = profile.stack_of(group);
            if stack.is_empty() {
                continue;
            }
            let root = *contexts
                .entry(profile.context_of(group))
                .or_insert_with(|| {
                    let root = new_node(&mut nodes, FrameId(NONE), NONE, g as u32, NONE);
                    roots.push((root, g));
                    root
                });
            let mut at = root;
            let mut step = |at: u32, frame: FrameId, nodes: &mut Vec<TrieNode>| -> u32 {
                let sym = profile.keys.sym_of(frame);
                let child = match children.get(&(at, sym)) {
                    Some(&c) => c,
                    None => {
                        let c = new_node(nodes, frame, sym, g as u32, at);
                        children.insert((at, sym), c);
                        let head = nodes[at as usize].first_child;
                        nodes[c as usize].next_sibling = head;
                        nodes[at as usize].first_child = c;
                        c
                    }
                };
                let node = &mut nodes[child as usize];
                node.period = node.period.saturating_add(group.period);
                node.samples += group.samples;
                child
            };
            {
                let node = &mut nodes[root as usize];
                node.period = node.period.saturating_add(group.period);
                node.samples += group.samples;
            }
            match order {
                GraphOrder::Caller => {
                    for &frame in stack.iter().rev() {
                        at = step(at, frame, &mut nodes);
                    }
                }
                GraphOrder::Callee => {
                    for &frame in stack {
                        at = step(at, frame, &mut nodes);
                    }
                }
            }
            leaf_node[g] = at;
            end_next[g] = nodes[at as usize].end_head;
            nodes[at as usize].end_head = g as u32;
        }
        Trie {
            nodes,
            roots,
            leaf_node,
            end_next,
        }
    }

    /// The smallest group reaching `node` (ending at it or below) that is
    /// not in `skip`, if below `best`; NONE if none. A node's `first` bounds
    /// every group below it, which prunes the walk.
    fn first_not_in(&self, node: u32, skip: &FxHashSet<u32>, mut best: u32) -> u32 {
        let mut todo = vec![node];
        while let Some(n) = todo.pop() {
            let Some(tn) = self.nodes.get(n as usize) else {
                continue;
            };
            if tn.first >= best {
                continue;
            }
            let mut g = tn.end_head;
            while g != NONE {
                if g < best && !skip.contains(&g) {
                    best = g;
                }
                g = self.end_next.get(g as usize).copied().unwrap_or(NONE);
            }
            todo.extend(self.children(n));
        }
        best
    }

    /// A node's weight and first group in one entry's tree under `adjust`.
    fn weight(&self, n: u32, adjust: Option<&Adjust>) -> (u64, u64, u32) {
        let node = &self.nodes[n as usize];
        let Some(adjust) = adjust else {
            return (node.period, node.samples, node.first);
        };
        let (period, samples, first) = adjust.nodes.get(&n).copied().unwrap_or((0, 0, NONE));
        if adjust.only {
            return (period, samples, first);
        }
        let first = if adjust.groups.contains(&node.first) {
            self.first_not_in(n, &adjust.groups, NONE)
        } else {
            node.first
        };
        (node.period - period, node.samples - samples, first)
    }

    /// For the rooted self groups of one entry (see the module doc, with
    /// the position of the entry's first occurrence in each, counted from
    /// the leaf): what to take out of the subtries, and what to keep of
    /// the whole paths.
    fn adjustments(&self, profile: &Profile, groups: &[(u32, usize)]) -> (Adjust, Adjust) {
        let mut exclude = Adjust {
            nodes: FxHashMap::default(),
            groups: FxHashSet::default(),
            only: false,
        };
        let mut only = Adjust {
            nodes: FxHashMap::default(),
            groups: FxHashSet::default(),
            only: true,
        };
        for &(g, position) in groups {
            let Some(group) = profile.groups.get(g as usize) else {
                continue;
            };
            exclude.groups.insert(g);
            only.groups.insert(g);
            let mut at = self.leaf_node.get(g as usize).copied().unwrap_or(NONE);
            let mut depth = 0usize;
            while let Some(node) = self.nodes.get(at as usize) {
                if node.parent == NONE {
                    break;
                }
                let add = |map: &mut FxHashMap<u32, (u64, u64, u32)>| {
                    let w = map.entry(at).or_insert((0, 0, g));
                    w.0 = w.0.saturating_add(group.period);
                    w.1 += group.samples;
                };
                if depth <= position {
                    add(&mut exclude.nodes);
                }
                add(&mut only.nodes);
                depth += 1;
                at = node.parent;
            }
        }
        (exclude, only)
    }

    fn children(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        let mut at = self
            .nodes
            .get(node as usize)
            .map_or(NONE, |n| n.first_child);
        std::iter::from_fn(move || {
            let here = at;
            let node = self.nodes.get(here as usize)?;
            at = node.next_sibling;
            Some(here)
        })
    }

    /// The first occurrences of each wanted entry (by slot in `wanted`).
    fn occurrences(&self, profile: &Profile, wanted: &FxHashMap<RawKey, usize>) -> Vec<Vec<u32>> {
        let mut found: Vec<Vec<u32>> = vec![Vec::new(); wanted.values().max().map_or(0, |m| m + 1)];
        let mask = profile.mask;
        let mut on_path = vec![0u32; mask.slots(&profile.keys)];
        // (node, entering): a node's slot is counted while it is on the path.
        let mut stack: Vec<(u32, bool)> = Vec::new();
        for &(root, group) in &self.roots {
            let Some(group) = profile.groups.get(group) else {
                continue;
            };
            stack.extend(self.children(root).map(|c| (c, true)));
            while let Some((node, entering)) = stack.pop() {
                let Some(n) = self.nodes.get(node as usize) else {
                    continue;
                };
                let slot = mask.slot(&profile.keys, n.frame) as usize;
                if !entering {
                    if let Some(count) = on_path.get_mut(slot) {
                        *count -= 1;
                    }
                    continue;
                }
                if let Some(count) = on_path.get_mut(slot) {
                    if *count == 0
                        && let Some(&index) = wanted.get(&profile.key_in(group, n.frame))
                    {
                        found[index].push(node);
                    }
                    *count += 1;
                }
                stack.push((node, false));
                stack.extend(self.children(node).map(|c| (c, true)));
            }
        }
        found
    }

    /// Adds to `tree` under `at` the merge by symbol of `nodes`, and below
    /// each merged node the merge of their children, leaving out nodes
    /// under `min_period` (and nodes `adjust` leaves empty). Returns the
    /// nodes made under `at`, each with its first group.
    fn merge_into(
        &self,
        tree: &mut CallTree,
        at: u32,
        nodes: &[u32],
        min_period: u64,
        adjust: Option<&Adjust>,
    ) -> Vec<(u32, u32)> {
        // Group by symbol, in order of first appearance.
        // (first, sym, members with their weight and first group)
        let mut groups: Vec<(u32, u32, Vec<Member>)> = Vec::new();
        let mut by_sym: FxHashMap<u32, usize> = FxHashMap::default();
        for &n in nodes {
            let Some(node) = self.nodes.get(n as usize) else {
                continue;
            };
            let (period, samples, first) = self.weight(n, adjust);
            if samples == 0 && period == 0 {
                continue;
            }
            match by_sym.get(&node.sym) {
                Some(&i) => {
                    let g = &mut groups[i];
                    g.0 = g.0.min(first);
                    g.2.push((n, period, samples, first));
                }
                None => {
                    by_sym.insert(node.sym, groups.len());
                    groups.push((first, node.sym, vec![(n, period, samples, first)]));
                }
            }
        }
        groups.sort_by_key(|g| g.0);
        let mut made: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut firsts = Vec::new();
        for (first, sym, members) in groups {
            let (period, samples) = members.iter().fold((0, 0), |(p, s), m| (p + m.1, s + m.2));
            if period < min_period {
                continue;
            }
            // The frame of the member seen first, as insertion would keep.
            let frame = members
                .iter()
                .min_by_key(|m| m.3)
                .map_or(FrameId(NONE), |m| self.nodes[m.0 as usize].frame);
            let members: Vec<u32> = members.iter().map(|m| m.0).collect();
            let index = tree.nodes.len() as u32;
            tree.nodes.push(Node {
                frame,
                sym,
                period,
                samples,
                children: Vec::new(),
            });
            tree.nodes[at as usize].children.push(index);
            made.push((index, members));
            firsts.push((first, index));
        }
        for (index, members) in made {
            let kids: Vec<u32> = members.iter().flat_map(|&m| self.children(m)).collect();
            if !kids.is_empty() {
                self.merge_into(tree, index, &kids, min_period, adjust);
            }
        }
        firsts
    }
}

/// The children trees `request` asks for.
pub(super) fn children_trees(profile: &Profile, request: &TreeRequest<'_>) -> Vec<CallTree> {
    let (event, wanted, slots, order, min_period) = request.parts();
    let trie = Trie::build(profile, event, order);
    let occurrences = trie.occurrences(profile, wanted);
    let rooted = match order {
        GraphOrder::Caller => rooted_self_groups(profile, event, wanted, slots),
        GraphOrder::Callee => vec![Vec::new(); slots],
    };
    let mut trees = vec![CallTree::new(); slots];
    for (slot, tree) in trees.iter_mut().enumerate() {
        let Some(nodes) = occurrences.get(slot) else {
            continue;
        };
        for &n in nodes {
            let node = &trie.nodes[n as usize];
            tree.nodes[0].period = tree.nodes[0].period.saturating_add(node.period);
            tree.nodes[0].samples += node.samples;
        }
        let groups = rooted.get(slot).map_or(&[][..], Vec::as_slice);
        if groups.is_empty() {
            trie.merge_into(tree, 0, nodes, min_period, None);
            continue;
        }
        let (exclude, only) = trie.adjustments(profile, groups);
        let mut top = trie.merge_into(tree, 0, nodes, min_period, Some(&exclude));
        let tops: Vec<u32> = trie
            .roots
            .iter()
            .flat_map(|&(root, _)| trie.children(root))
            .collect();
        top.extend(trie.merge_into(tree, 0, &tops, min_period, Some(&only)));
        top.sort_by_key(|&(first, _)| first);
        tree.nodes[0].children = top.into_iter().map(|(_, index)| index).collect();
    }
    trees
}

/// Per slot: the groups whose leaf is that entry and whose stack holds the
/// entry's first occurrence below the root frame (caller order), with that
/// occurrence's position counted from the leaf.
fn rooted_self_groups(
    profile: &Profile,
    event: usize,
    wanted: &FxHashMap<RawKey, usize>,
    slots: usize,
) -> Vec<Vec<(u32, usize)>> {
    let mut rooted = vec![Vec::new(); slots];
    for (g, group) in profile.groups.iter().enumerate() {
        if group.event != event {
            continue;
        }
        let stack = profile.stack_of(group);
        let Some(&leaf) = stack.first() else {
            continue;
        };
        let key = profile.key_in(group, leaf);
        let Some(&slot) = wanted.get(&key) else {
            continue;
        };
        let outermost = stack
            .iter()
            .rposition(|&f| profile.key_in(group, f) == key)
            .unwrap_or(0);
        if outermost + 1 < stack.len() {
            rooted[slot].push((g as u32, outermost));
        }
    }
    rooted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::calltree::build_trees_above;
    use crate::analysis::profile::{ProfileOptions, SortKey};
    use crate::analysis::testing::Builder;

    /// The obvious construction, the reference: the leaf's entry inserts
    /// the whole stack, every other (stack, entry) pair the path from the
    /// entry's first occurrence.
    fn by_insertion(profile: &Profile, entries: &[usize], order: GraphOrder) -> Vec<CallTree> {
        let ev = &profile.events[0];
        let wanted: FxHashMap<RawKey, usize> = entries
            .iter()
            .enumerate()
            .map(|(slot, &i)| (ev.entries[i].key, slot))
            .collect();
        let mut trees = vec![CallTree::new(); entries.len()];
        let mut seen = profile.seen_set();
        for group in &profile.groups {
            let stack = profile.stack_of(group);
            let weight = (group.period, group.samples);
            seen.next_sample();
            let leaf_key = stack.first().map(|&leaf| profile.key_in(group, leaf));
            if let Some(&slot) = leaf_key.and_then(|k| wanted.get(&k)) {
                match order {
                    GraphOrder::Caller => {
                        trees[slot].insert(profile, stack.iter().rev().copied(), weight)
                    }
                    GraphOrder::Callee => {
                        trees[slot].insert(profile, stack.iter().copied(), weight)
                    }
                }
            }
            let positions: Vec<usize> = match order {
                GraphOrder::Caller => (0..stack.len()).rev().collect(),
                GraphOrder::Callee => (0..stack.len()).collect(),
            };
            for pos in positions {
                let frame = stack[pos];
                if !seen.first_time(&profile.keys, frame)
                    || Some(profile.key_in(group, frame)) == leaf_key
                {
                    continue;
                }
                if let Some(&slot) = wanted.get(&profile.key_in(group, frame)) {
                    match order {
                        GraphOrder::Caller => {
                            trees[slot].insert(profile, stack[..=pos].iter().rev().copied(), weight)
                        }
                        GraphOrder::Callee => {
                            trees[slot].insert(profile, stack[pos..].iter().copied(), weight)
                        }
                    }
                }
            }
        }
        trees
    }

    /// A tree as text: node frames, periods and samples in drawing order
    /// (children hottest first, ties by order), without nodes under `min`.
    fn shape(tree: &CallTree, at: u32, min: u64, out: &mut Vec<String>, depth: usize) {
        for c in tree.sorted_children(at) {
            let n = &tree.nodes[c as usize];
            if n.period < min {
                continue;
            }
            out.push(format!("{depth} {:?} {} {}", n.frame, n.period, n.samples));
            shape(tree, c, min, out, depth + 1);
        }
    }

    fn draw(tree: &CallTree, min: u64) -> Vec<String> {
        let mut out = vec![format!(
            "root {} {}",
            tree.root().period,
            tree.root().samples
        )];
        shape(tree, 0, min, &mut out, 1);
        out
    }

    /// Deterministic pseudo-random stacks with recursion, shared prefixes,
    /// two commands and two binaries.
    fn random_profile(seed: u64, sort: Vec<SortKey>) -> (Builder, Profile) {
        let mut b = Builder::default();
        let mut x = seed;
        let mut next = move |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let names = [
            "main",
            "a",
            "b",
            "c",
            "rec",
            "lib:memcpy",
            "lib:read",
            "k:schedule",
        ];
        for _ in 0..300 {
            let depth = 1 + next(12) as usize;
            let mut stack: Vec<&str> = (0..depth)
                .map(|_| names[next(names.len() as u64) as usize])
                .collect();
            stack.push("main");
            let comm = if next(3) == 0 { "other" } else { "app" };
            b.sample(comm, 1 + next(2) as i32, &stack, 1 + next(4) as usize);
        }
        let options = ProfileOptions {
            sort,
            ..ProfileOptions::default()
        };
        let profile = Profile::build(&b.samples, &b.frames, &options);
        (b, profile)
    }

    #[test]
    fn trie_merge_equals_insertion_for_every_entry_order_and_sort() {
        let sorts = [
            vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            vec![SortKey::Sym],
            vec![SortKey::Dso],
            vec![SortKey::Pid, SortKey::Sym],
        ];
        for seed in 1..6 {
            for sort in &sorts {
                let (_b, profile) = random_profile(seed, sort.clone());
                let all: Vec<usize> = (0..profile.events[0].entries.len()).collect();
                for order in [GraphOrder::Caller, GraphOrder::Callee] {
                    let expected = by_insertion(&profile, &all, order);
                    let total = profile.events[0].total_period;
                    for min in [0, total / 200, total / 20] {
                        let got = build_trees_above(&profile, 0, &all, order, min);
                        for (slot, (e, g)) in expected.iter().zip(&got).enumerate() {
                            assert_eq!(
                                draw(e, min),
                                draw(g, 0),
                                "seed {seed} sort {sort:?} {order:?} min {min} entry {slot}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn nodes_under_the_threshold_are_not_built() {
        let (_b, profile) = random_profile(7, vec![SortKey::Sym]);
        let all: Vec<usize> = (0..profile.events[0].entries.len()).collect();
        let total = profile.events[0].total_period;
        let full: usize = build_trees_above(&profile, 0, &all, GraphOrder::Caller, 0)
            .iter()
            .map(|t| t.nodes.len())
            .sum();
        let pruned = build_trees_above(&profile, 0, &all, GraphOrder::Caller, total / 20);
        assert!(pruned.iter().map(|t| t.nodes.len()).sum::<usize>() * 4 < full);
        for tree in &pruned {
            assert!(tree.nodes[1..].iter().all(|n| n.period >= total / 20));
        }
    }
}
