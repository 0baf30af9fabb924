//! Starting the workload the way perf does: fork a child that waits on a
//! pipe, open the counters on its pid (with `enable_on_exec`), then let it
//! exec. `std::process::Command` cannot do this: its `spawn` waits for the
//! exec to happen, and the counters must exist before it does.
//!
//! Between fork and exec the child only calls async-signal-safe functions
//! (read, write, close, sigaction, prctl, execvp, _exit); everything it
//! needs is prepared before fork. Until its exec the child must never
//! outlive scry or a failed start: it closes its copy of the start pipe's
//! write end (so scry's exit is an EOF), dies with scry
//! (`PR_SET_PDEATHSIG`, cleared just before the exec: a started workload
//! outlives scry, as under perf), and takes the default signal dispositions
//! and an empty mask (scry's handlers would make it shrug off SIGTERM, and
//! the SIGPIPE that Rust ignores must reach the workload). A `PendingChild`
//! that is dropped without `start` is killed and reaped; so is a running
//! `Child` that is dropped before it was waited for.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// A forked child waiting for `start()` before it execs. Dropped without
/// `start`, it is killed and reaped.
#[derive(Debug)]
pub(crate) struct PendingChild {
    pid: i32,
    /// The start pipe's write end; `None` once `start` wrote to it.
    go: Option<OwnedFd>,
    exec_error: OwnedFd,
    program: String,
}

/// A running (or exited, not yet reaped) child. Dropped before it was
/// reaped, it is killed and reaped.
#[derive(Debug)]
pub(crate) struct Child {
    pub(crate) pid: i32,
    status: Option<ExitStatus>,
}

/// How the child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl ExitStatus {
    pub(crate) fn success(self) -> bool {
        self == ExitStatus::Code(0)
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 just returned these descriptors; we own them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The child's side between fork and exec: see the module doc. Never
/// returns.
///
/// # Safety
/// Only in the child of a fork: `argv` is a NUL-terminated array of valid C
/// strings, `max_signal` the highest signal number, all prepared before it.
unsafe fn child_until_exec(
    parent: libc::pid_t,
    go_read: libc::c_int,
    go_write: libc::c_int,
    err_read: libc::c_int,
    err_write: libc::c_int,
    argv: &[*const libc::c_char],
    max_signal: libc::c_int,
) -> ! {
    // SAFETY: every call is async-signal-safe and takes locals or memory
    // prepared before the fork (the caller's contract).
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            // scry died before the prctl took effect.
            libc::_exit(127);
        }
        libc::close(go_write);
        libc::close(err_read);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut action.sa_mask);
        for sig in 1..=max_signal {
            // SIGKILL, SIGSTOP and libc's internal signals refuse: ignored.
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigprocmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
        let mut byte = 0u8;
        let n = libc::read(go_read, (&mut byte as *mut u8).cast(), 1);
        if n == 1 {
            libc::prctl(libc::PR_SET_PDEATHSIG, 0 as libc::c_ulong);
            libc::execvp(argv[0], argv.as_ptr());
        }
        // exec failed (or scry went away: EOF): report errno and leave.
        let errno = *libc::__errno_location();
        let bytes = errno.to_ne_bytes();
        libc::write(err_write, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127);
    }
}

/// Fork a child that will exec `argv` once `start()` is called.
pub(crate) fn fork_pending(argv: &[OsString]) -> io::Result<PendingChild> {
    let Some(first) = argv.first() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no command given",
        ));
    };
    let program = first.to_string_lossy().into_owned();
    let cargs: Vec<CString> = argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "argument contains a NUL byte"))?;
    let mut ptrs: Vec<*const libc::c_char> = cargs.iter().map(|c| c.as_ptr()).collect();
    ptrs.push(std::ptr::null());

    let (go_read, go_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    let max_signal = libc::SIGRTMAX();

    // SAFETY: fork has no memory preconditions. In the child only
    // async-signal-safe calls follow, on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: we are the child; argv and the descriptors were prepared
        // before the fork.
        unsafe {
            child_until_exec(
                parent,
                go_read.as_raw_fd(),
                go_write.as_raw_fd(),
                err_read.as_raw_fd(),
                err_write.as_raw_fd(),
                &ptrs,
                max_signal,
            )
        }
    }
    drop(go_read);
    drop(err_write);
    Ok(PendingChild {
        pid,
        go: Some(go_write),
        exec_error: err_read,
        program,
    })
}

impl PendingChild {
    pub(crate) fn pid(&self) -> i32 {
        self.pid
    }

    /// Let the child exec. Fails with the exec error (ENOENT, EACCES, ...)
    /// if it could not run the program; the child is reaped then.
    pub(crate) fn start(mut self) -> Result<Child, (String, io::Error)> {
        let byte = 1u8;
        if let Some(go) = self.go.take() {
            // SAFETY: writing one byte from a valid local to our pipe.
            unsafe {
                libc::write(go.as_raw_fd(), (&byte as *const u8).cast(), 1);
            }
        }
        let mut buf = [0u8; 4];
        // SAFETY: reading into a valid 4-byte local buffer. The pipe is
        // close-on-exec, so read returns 0 once the exec succeeded.
        let n = unsafe {
            libc::read(
                self.exec_error.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        let mut child = Child {
            pid: self.pid,
            status: None,
        };
        if n == 4 {
            let _ = child.wait();
            return Err((
                std::mem::take(&mut self.program),
                io::Error::from_raw_os_error(i32::from_ne_bytes(buf)),
            ));
        }
        Ok(child)
    }

    /// Kill the waiting child (the counters could not be set up).
    pub(crate) fn abort(self) {
        drop(self);
    }
}

impl Drop for PendingChild {
    fn drop(&mut self) {
        if self.go.is_some() {
            drop(Child {
                pid: self.pid,
                status: None,
            });
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // Only a child still ours and running (waitpid errs once it is
        // reaped elsewhere: its pid may be someone else's by now).
        if self.status.is_none() && matches!(self.try_wait(), Ok(None)) {
            let _ = crate::sys::signal::kill(self.pid, libc::SIGKILL);
            let _ = self.wait();
        }
    }
}

impl Child {
    fn decode(status: libc::c_int) -> ExitStatus {
        if libc::WIFSIGNALED(status) {
            ExitStatus::Signal(libc::WTERMSIG(status))
        } else {
            ExitStatus::Code(libc::WEXITSTATUS(status))
        }
    }

    /// Reap the child if it has exited.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_some() {
            return Ok(self.status);
        }
        let mut status = 0;
        // SAFETY: waitpid writes the status into a valid local.
        let rc = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        if rc == self.pid {
            self.status = Some(Self::decode(status));
        }
        Ok(self.status)
    }

    /// Block until the child exits.
    pub(crate) fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a valid local.
            let rc = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if rc == self.pid {
                let decoded = Self::decode(status);
                self.status = Some(decoded);
                return Ok(decoded);
            }
            let err = io::Error::last_os_error();
            if err.kind() != io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }
}

/// Raise the soft limit on open files to the hard limit: one counter per
/// event × CPU × thread adds up quickly (perf does the same).
pub(crate) fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write a valid local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// CPU time (user, system) of every reaped child of this process so far
/// (getrusage(RUSAGE_CHILDREN)); `stat` prints the workload's share.
pub(crate) fn children_cpu_time() -> io::Result<(std::time::Duration, std::time::Duration)> {
    // SAFETY: rusage is plain integers; zeroed is a valid value to overwrite.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the valid local struct.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let tv = |t: libc::timeval| {
        std::time::Duration::from_secs(t.tv_sec.max(0) as u64)
            + std::time::Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Ok((tv(usage.ru_utime), tv(usage.ru_stime)))
}
