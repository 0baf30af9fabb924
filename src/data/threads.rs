//! The name of each thread, as COMM and FORK records set it: what perf
//! shows as a sample's `comm`. One model for every consumer (the resolver's
//! process model, `script`, the sched and profile feeds, `trace`).
//!
//! The decision that is not obvious: a thread no record named gets perf's
//! fallback (`swapper` for the idle task, `:TID` otherwise), kept apart from
//! the recorded names, so a thread it forks does not inherit it (perf's
//! `comm_set`). Each name is one `Arc`, shared by every sample of the
//! thread (samples merge by its address).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use linux_perf_event_reader::{CommonData, ForkOrExitRecord};

use super::handler::{Comm, RecordHandler};

/// See the module doc. `S`: the hasher (the resolver uses a fast one).
#[derive(Debug, Default)]
pub struct ThreadNames<S = std::collections::hash_map::RandomState> {
    named: HashMap<i32, Arc<str>, S>,
    /// The fallback names handed out, made once per thread.
    fallback: HashMap<i32, Arc<str>, S>,
}

impl<S: BuildHasher + Default> ThreadNames<S> {
    /// Thread `tid` is called `name` from now on (COMM, COMM_EXEC).
    pub(crate) fn set(&mut self, tid: i32, name: &[u8]) {
        let name = String::from_utf8_lossy(name);
        self.named.insert(tid, Arc::from(name.as_ref()));
    }

    /// Thread `tid` was made by `ptid`: it has its maker's recorded name
    /// until it sets its own.
    pub(crate) fn fork(&mut self, tid: i32, ptid: i32) {
        if let Some(name) = self.named.get(&ptid).cloned() {
            self.named.insert(tid, name);
        }
    }

    /// `name` for `tid` unless a record named it already (a guess from
    /// /proc that a later record may correct).
    pub(crate) fn guess(&mut self, tid: i32, name: &str) {
        self.named.entry(tid).or_insert_with(|| Arc::from(name));
    }

    /// The recorded name of `tid`, if a record named it.
    pub(crate) fn recorded(&self, tid: i32) -> Option<&str> {
        self.named.get(&tid).map(|n| &**n)
    }

    /// The name perf shows for `tid`: the recorded one, or the fallback.
    pub fn get(&mut self, tid: i32) -> Arc<str> {
        Arc::clone(self.get_ref(tid))
    }

    /// As `get`, borrowed: a caller that only compares names (by pointer)
    /// takes no reference count per sample.
    pub(crate) fn get_ref(&mut self, tid: i32) -> &Arc<str> {
        if let Some(name) = self.named.get(&tid) {
            return name;
        }
        self.fallback.entry(tid).or_insert_with(|| match tid {
            0 => Arc::from("swapper"),
            _ => Arc::from(format!(":{tid}").as_str()),
        })
    }
}

impl<S: BuildHasher + Default> RecordHandler for ThreadNames<S> {
    fn handle_comm(&mut self, _attr_index: usize, comm: &Comm<'_>, _id: &CommonData) {
        self.set(comm.tid, comm.name);
    }

    fn handle_fork(&mut self, _attr_index: usize, fork: &ForkOrExitRecord, _id: &CommonData) {
        self.fork(fork.tid, fork.ptid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_comm_and_fork_and_fallbacks_stay_apart() {
        let mut names = ThreadNames::<std::collections::hash_map::RandomState>::default();
        names.set(10, b"parent");
        names.fork(11, 10);
        assert_eq!(&*names.get(11), "parent");
        names.set(11, b"child");
        assert_eq!(&*names.get(11), "child");
        assert_eq!(&*names.get(10), "parent");
        assert_eq!(&*names.get(0), "swapper");
        assert_eq!(&*names.get(99), ":99");
        // A fallback is not inherited.
        names.fork(100, 99);
        assert_eq!(&*names.get(100), ":100");
        assert_eq!(names.recorded(99), None);
        names.guess(12, "guessed");
        names.guess(10, "wrong");
        assert_eq!(names.recorded(12), Some("guessed"));
        assert_eq!(names.recorded(10), Some("parent"));
    }
}
