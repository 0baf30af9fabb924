//! SIGINT/SIGTERM/SIGHUP as data: a handler that records the signal and
//! writes a byte to a non-blocking self-pipe, so a poll loop wakes up and
//! finishes its work (flush, finalize the file) instead of dying mid-write.
//! A hangup (a closed terminal or ssh session) stops a capture as Ctrl-C
//! does: every live command installs `STOP_SIGNALS`.
//! Also `poll(2)` and pidfds, the other things such a loop waits on, and
//! [`RunStop`], the one way a live run starts and stops: every run loop
//! (the BPF tools', the capture sessions', `stat`'s, `scry run`'s, top's
//! ticks) installs the stop signals through it and waits through it, so
//! the stop logic (a signal, the duration, the watched process's exit, in
//! that order) is written once.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// The signals that stop a capture cleanly: Ctrl-C, kill, a hangup.
pub(crate) const STOP_SIGNALS: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A signal as the C library describes it ("Killed", "Segmentation fault").
pub(crate) fn describe(sig: i32) -> String {
    // SAFETY: strsignal returns a pointer to a NUL-terminated string (static
    // or in a thread-local buffer) valid until the next call on this thread;
    // it is copied at once.
    unsafe {
        let text = libc::strsignal(sig);
        if text.is_null() {
            return format!("signal {sig}");
        }
        std::ffi::CStr::from_ptr(text)
            .to_string_lossy()
            .into_owned()
    }
}

static PIPE_WRITE_FD: AtomicI32 = AtomicI32::new(-1);
static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    LAST_SIGNAL.store(sig, Ordering::SeqCst);
    let fd = PIPE_WRITE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; the fd is our non-blocking
        // pipe, and a full pipe just drops the byte (the flag is already set).
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Catches the given signals for as long as it lives (handlers are reset to
/// the default on drop). Installed while another is alive (a tool's early
/// catch, taken before it loads and attaches), it keeps the signal that
/// one caught, so a Ctrl-C during the setup ends the run cleanly at once.
#[derive(Debug)]
pub(crate) struct SignalPipe {
    read: OwnedFd,
    _write: OwnedFd,
    signals: Vec<i32>,
}

impl SignalPipe {
    /// Catches `signals` (only [`RunStop::install`] calls it: every run
    /// catches [`STOP_SIGNALS`] through it).
    fn install(signals: &[i32]) -> io::Result<Self> {
        let mut fds = [0; 2];
        // SAFETY: fds is a valid array of two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 just returned these two descriptors; we own them.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A pipe already catching (the early catch a tool takes before it
        // attaches): what it caught still ends this run, at its first wait.
        let earlier = PIPE_WRITE_FD.swap(write.as_raw_fd(), Ordering::SeqCst) >= 0;
        if !earlier {
            LAST_SIGNAL.store(0, Ordering::SeqCst);
        } else if LAST_SIGNAL.load(Ordering::SeqCst) != 0 {
            let byte = 1u8;
            // SAFETY: writing one byte from a valid local to our own
            // non-blocking pipe.
            unsafe {
                libc::write(write.as_raw_fd(), (&byte as *const u8).cast(), 1);
            }
        }
        for &sig in signals {
            // SAFETY: a zeroed sigaction with a valid handler function and an
            // empty mask is a valid argument; the old action is not needed.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(sig, &action, std::ptr::null_mut()) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        Ok(SignalPipe {
            read,
            _write: write,
            signals: signals.to_vec(),
        })
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    /// The last signal caught, if any.
    pub(crate) fn received(&self) -> Option<i32> {
        match LAST_SIGNAL.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(sig),
        }
    }

    /// Empty the pipe after a wake-up.
    pub(crate) fn drain(&self) {
        let mut buf = [0u8; 64];
        // SAFETY: reading into a valid local buffer from our non-blocking pipe.
        while unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {
        }
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        PIPE_WRITE_FD.store(-1, Ordering::SeqCst);
        for &sig in &self.signals {
            // SAFETY: restoring the default disposition has no preconditions.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// A stop signal (SIGINT, SIGTERM, SIGHUP).
    Signal(i32),
    /// The duration ([`RunStop::until`]) elapsed.
    Duration,
    /// The process given to [`RunStop::until_exit`] exited.
    TargetExited,
}

/// A live run's start and stop: the stop signals caught from
/// [`RunStop::install`] until it drops, and, when asked, the time the run
/// ends and the process whose exit ends it. A run loop waits with
/// [`RunStop::wait`] on its own descriptors (rings, a workload's pidfd)
/// and learns why it must stop, if it must.
///
/// Installed while an earlier one lives (`scry`'s early catch, taken
/// before a tool loads and attaches: `cli::Command::catches_stop_signals_early`),
/// it keeps what that one caught, so a Ctrl-C during the setup ends the
/// run at its first wait.
#[derive(Debug)]
pub(crate) struct RunStop {
    signals: SignalPipe,
    end_at: Option<Instant>,
    pidfd: Option<OwnedFd>,
    /// The process given to `until_exit` was gone before its pidfd opened.
    gone: bool,
}

impl RunStop {
    /// Catches [`STOP_SIGNALS`]; no end time, no process watched.
    pub(crate) fn install() -> io::Result<RunStop> {
        Ok(RunStop {
            signals: SignalPipe::install(&STOP_SIGNALS)?,
            end_at: None,
            pidfd: None,
            gone: false,
        })
    }

    /// The run also ends `duration` from now (None: no end time).
    pub(crate) fn until(mut self, duration: Option<Duration>) -> RunStop {
        self.end_at = duration.map(|d| Instant::now() + d);
        self
    }

    /// The run also ends when `pid` exits. Its pidfd is opened now, so a
    /// process already gone ends the run at the first wait: the tools
    /// check that `pid` exists before they load, so one gone by now
    /// (ESRCH) exited while they did, and that is the run's end, not an
    /// error.
    pub(crate) fn until_exit(mut self, pid: Option<i32>) -> io::Result<RunStop> {
        if let Some(pid) = pid {
            match pidfd_open(pid) {
                Ok(fd) => self.pidfd = Some(fd),
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => self.gone = true,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("watching process {pid}: {e}"),
                    ));
                }
            }
        }
        Ok(self)
    }

    /// The stop signal caught so far, if any (nothing is consumed).
    pub(crate) fn caught(&self) -> Option<i32> {
        self.signals.received()
    }

    /// Waits until one of `fds` is readable (their `revents` set), the
    /// timeout passes (`timeout_ms`, -1: none; never past the end time),
    /// or the run must stop; then says why it must, checking a signal,
    /// the watched process's exit and the end time, in that order.
    pub(crate) fn wait(&self, fds: &mut [PollFd], timeout_ms: i32) -> io::Result<Option<Stopped>> {
        let own = 1 + usize::from(self.pidfd.is_some());
        let mut set: Vec<PollFd> = [
            Some(self.signals.fd()),
            self.pidfd.as_ref().map(|fd| fd.as_raw_fd()),
        ]
        .into_iter()
        .flatten()
        .chain(fds.iter().map(|p| p.fd))
        .map(|fd| PollFd { fd, revents: 0 })
        .collect();
        let timeout_ms = match self.end_at {
            Some(end) => {
                let left = end
                    .saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(i32::MAX as u128) as i32;
                if timeout_ms < 0 {
                    left
                } else {
                    timeout_ms.min(left)
                }
            }
            None => timeout_ms,
        };
        poll(&mut set, if self.gone { 0 } else { timeout_ms })?;
        for (p, polled) in fds.iter_mut().zip(&set[own..]) {
            p.revents = polled.revents;
        }
        if let Some(sig) = self.signals.received() {
            self.signals.drain();
            return Ok(Some(Stopped::Signal(sig)));
        }
        if self.gone || (self.pidfd.is_some() && set[1].revents != 0) {
            return Ok(Some(Stopped::TargetExited));
        }
        if self.end_at.is_some_and(|end| Instant::now() >= end) {
            return Ok(Some(Stopped::Duration));
        }
        Ok(None)
    }
}

/// One entry of a poll set.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PollFd {
    pub(crate) fd: RawFd,
    pub(crate) revents: i16,
}

pub(crate) const POLLIN: i16 = libc::POLLIN;
pub(crate) const POLLHUP: i16 = libc::POLLHUP;
pub(crate) const POLLERR: i16 = libc::POLLERR;

/// poll(2) for readability; an interrupted wait returns Ok(0).
pub(crate) fn poll(fds: &mut [PollFd], timeout_ms: i32) -> io::Result<usize> {
    let mut raw: Vec<libc::pollfd> = fds
        .iter()
        .map(|p| libc::pollfd {
            fd: p.fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: raw is a valid array of pollfd of the given length.
    let n = unsafe { libc::poll(raw.as_mut_ptr(), raw.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::Interrupted {
            Ok(0)
        } else {
            Err(err)
        };
    }
    for (p, r) in fds.iter_mut().zip(&raw) {
        p.revents = r.revents;
    }
    Ok(n as usize)
}

/// pidfd_open(2): a descriptor that polls readable when the process exits.
pub(crate) fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor; we own it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// kill(2).
pub(crate) fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_gone_before_its_pidfd_opens_ends_the_run_at_once() {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id() as i32;
        child.wait().expect("wait"); // reaped: the pid is gone
        let stop = RunStop::install()
            .and_then(|s| s.until_exit(Some(pid)))
            .expect("a gone process is no error");
        // No timeout: without the exit seen, this would wait forever.
        assert_eq!(
            stop.wait(&mut [], -1).expect("wait"),
            Some(Stopped::TargetExited)
        );
    }
}
