//! threadsnoop's lines, in bcc's layout (`TIME(ms) PID COMM FUNC`: ms
//! since the tool started, the creating process, the new thread's start
//! function), and their JSON fields. The function's name comes from the
//! caller (`name_of`: this module reads no process): `[unknown]` when
//! the kernel side had no function, its address when it had no name.

use std::io::{self, Write};

use serde_json::{Value, json};

use super::snoop::{Clock, SnoopFormat};
use crate::analysis::snoop::ThreadEvent;

/// threadsnoop's layout; `name_of` names an event's start function.
pub(crate) struct ThreadLayout<N> {
    pub(crate) name_of: N,
}

impl<N: Fn(&ThreadEvent) -> Option<String>> ThreadLayout<N> {
    fn func(&self, e: &ThreadEvent) -> String {
        if e.func == 0 {
            return "[unknown]".to_string();
        }
        (self.name_of)(e).unwrap_or_else(|| format!("{:#x}", e.func))
    }
}

impl<N: Fn(&ThreadEvent) -> Option<String>> SnoopFormat for ThreadLayout<N> {
    type Event = ThreadEvent;

    fn header<W: Write>(&self, w: &mut W) -> io::Result<()> {
        writeln!(w, "{:<10} {:<7} {:<16} FUNC", "TIME(ms)", "PID", "COMM")
    }

    fn line<W: Write>(&self, w: &mut W, e: &ThreadEvent, clock: Clock) -> io::Result<()> {
        let ms = (clock.secs * 1000.0) as u64;
        writeln!(w, "{ms:<10} {:<7} {:<16} {}", e.pid, e.comm, self.func(e))
    }

    fn fields(&self, e: &ThreadEvent) -> Value {
        let name = (e.func != 0).then(|| (self.name_of)(e)).flatten();
        json!({
            "pid": e.pid, "tid": e.tid, "new_tid": e.new_tid, "comm": e.comm,
            "func": name, "func_addr": e.func,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_bcc_layout() {
        let layout = ThreadLayout {
            name_of: |e: &ThreadEvent| (e.func == 0x10).then(|| "start".to_string()),
        };
        let clock = Clock {
            hms: (0, 0, 0),
            secs: 1.5,
        };
        let event = |func| ThreadEvent {
            func,
            pid: 4,
            comm: "app".into(),
            ..ThreadEvent::default()
        };
        let mut out = Vec::new();
        layout.header(&mut out).unwrap();
        for func in [0x10, 0x20, 0] {
            layout.line(&mut out, &event(func), clock).unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "TIME(ms)   PID     COMM             FUNC\n\
             1500       4       app              start\n\
             1500       4       app              0x20\n\
             1500       4       app              [unknown]\n"
        );
    }
}
