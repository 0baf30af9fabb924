//! The command name of each thread, as COMM and FORK records set it.

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_data::linux_perf_event_reader::EventRecord;

/// The command name of each thread as COMM and FORK records set it: what
/// perf shows as a sample's `comm`. Feed it every record in time order.
#[derive(Debug, Default)]
pub struct Comms {
    by_tid: HashMap<i32, Arc<str>>,
}

impl Comms {
    pub fn handle_record(&mut self, record: &EventRecord<'_>) {
        match record {
            EventRecord::Comm(c) => {
                let name = String::from_utf8_lossy(&c.name.as_slice()).into_owned();
                self.by_tid.insert(c.tid, name.into());
            }
            EventRecord::Fork(f) => {
                if let Some(parent) = self.by_tid.get(&f.ptid).cloned() {
                    self.by_tid.insert(f.tid, parent);
                }
            }
            _ => {}
        }
    }

    /// The thread's name; as perf: `swapper` for the idle thread (tid 0),
    /// `:tid` for a thread no record named.
    pub fn get(&mut self, tid: i32) -> Arc<str> {
        self.by_tid
            .entry(tid)
            .or_insert_with(|| match tid {
                0 => "swapper".into(),
                _ => format!(":{tid}").into(),
            })
            .clone()
    }
}
