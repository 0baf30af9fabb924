//! The local wall-clock time of day, for the `[HH:MM:SS]` lines bcc's
//! tools print at each interval (localtime_r: the TZ environment and
//! /etc/localtime apply, as for them), and the kernel's clocks read by id
//! (`clock_gettime`/`clock_getres`: `record -k` stamps events with one).

/// (hours, minutes, seconds) now, local time; UTC if the conversion fails.
pub(crate) fn now_hms() -> (u32, u32, u32) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let t = now as libc::time_t;
    // SAFETY: a zeroed tm is a valid out-parameter; localtime_r writes it
    // and keeps no pointer to either argument.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to valid locals for the call's duration.
    let ok = !unsafe { libc::localtime_r(&t, &mut tm) }.is_null();
    if ok {
        (tm.tm_hour as u32, tm.tm_min as u32, tm.tm_sec as u32)
    } else {
        let day = now % 86_400;
        (
            (day / 3600) as u32,
            (day / 60 % 60) as u32,
            (day % 60) as u32,
        )
    }
}

/// `format` (strftime's conversions, as bpftrace's `time()` takes them)
/// applied to the local time now; the format as written if it does not
/// fit 256 bytes or holds a NUL.
pub(crate) fn strftime_now(format: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    strftime_at(format, now)
}

/// The wall-clock time of the boot, in nanoseconds since the epoch
/// (CLOCK_REALTIME less CLOCK_BOOTTIME, as bpftrace takes it once at its
/// start for `strftime()`).
pub(crate) fn boot_realtime_ns() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let Ok(since_boot) = clock_ns(libc::CLOCK_BOOTTIME) else {
        return 0;
    };
    now.saturating_sub(since_boot)
}

/// The time of clock `clockid` (`CLOCK_MONOTONIC`, ...) in nanoseconds;
/// an error for a clock the kernel does not have.
pub(crate) fn clock_ns(clockid: libc::clockid_t) -> std::io::Result<u64> {
    read_clock(clockid, false)
}

/// The resolution of clock `clockid` in nanoseconds (perf's
/// `clockid_res_ns`); an error for a clock the kernel does not have.
pub(crate) fn clock_res_ns(clockid: libc::clockid_t) -> std::io::Result<u64> {
    read_clock(clockid, true)
}

/// `clock_getres` (`res`) or `clock_gettime` of `clockid`, in nanoseconds.
fn read_clock(clockid: libc::clockid_t, res: bool) -> std::io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter for the call's duration.
    let rc = unsafe {
        if res {
            libc::clock_getres(clockid, &mut ts)
        } else {
            libc::clock_gettime(clockid, &mut ts)
        }
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64)
}

/// `format` applied to the local time of `secs` since the epoch; the
/// format as written if it does not fit 256 bytes or holds a NUL.
pub(crate) fn strftime_at(format: &str, secs: u64) -> String {
    let Ok(c_format) = std::ffi::CString::new(format) else {
        return format.to_string();
    };
    let t = secs as libc::time_t;
    // SAFETY: a zeroed tm is a valid out-parameter; localtime_r writes it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to valid locals for the call's duration.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return format.to_string();
    }
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length, the format is
    // NUL-terminated, `tm` was filled by localtime_r.
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), c_format.as_ptr(), &tm) };
    if n == 0 && !format.is_empty() {
        return format.to_string();
    }
    String::from_utf8_lossy(&buf[..n]).into_owned()
}
