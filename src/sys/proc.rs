//! Readers of /proc and /sys: threads, comms, memory maps, CPUs, kernel
//! symbols' addresses. Plain parsing of text files; every function returns
//! `io::Result` and tolerates a process that vanished mid-read by returning
//! `NotFound`.

use std::io;
use std::path::PathBuf;

/// One line of /proc/PID/maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapEntry {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// `rwxp` / `r-xs` as the kernel prints it.
    pub(crate) perms: String,
    pub(crate) offset: u64,
    pub(crate) dev_major: u32,
    pub(crate) dev_minor: u32,
    pub(crate) inode: u64,
    /// The path, `[vdso]`, `[heap]`, or empty for anonymous memory.
    pub(crate) path: String,
}

impl MapEntry {
    pub(crate) fn is_executable(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}

/// Parse the text of /proc/PID/maps. Lines that do not parse are skipped.
pub(crate) fn parse_maps(text: &str) -> Vec<MapEntry> {
    text.lines().filter_map(parse_map_line).collect()
}

fn parse_map_line(line: &str) -> Option<MapEntry> {
    let mut fields = line.splitn(6, ' ');
    let range = fields.next()?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let dev = fields.next()?;
    let inode = fields.next()?;
    let path = fields.next().unwrap_or("").trim_start();
    let (start, end) = range.split_once('-')?;
    let (major, minor) = dev.split_once(':')?;
    Some(MapEntry {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        perms: perms.to_string(),
        offset: u64::from_str_radix(offset, 16).ok()?,
        dev_major: u32::from_str_radix(major, 16).ok()?,
        dev_minor: u32::from_str_radix(minor, 16).ok()?,
        inode: inode.parse().ok()?,
        path: path.to_string(),
    })
}

pub(crate) fn maps(pid: i32) -> io::Result<Vec<MapEntry>> {
    Ok(parse_maps(&std::fs::read_to_string(format!(
        "/proc/{pid}/maps"
    ))?))
}

/// The command name (`comm`) of a thread.
/// The largest vDSO image read (they are a few pages; anything bigger is
/// not a vDSO).
const VDSO_MAX: u64 = 1 << 24;

/// The image of the vDSO the kernel maps into every process, read once from
/// this process's own mapping (`/proc/self/maps` + `/proc/self/mem`), for
/// its build id and its symbols. `None` when there is none, it cannot be
/// read, or it is over 16 MiB.
pub(crate) fn vdso_image() -> Option<&'static [u8]> {
    static IMAGE: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    IMAGE.get_or_init(read_vdso_image).as_deref()
}

fn read_vdso_image() -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let vdso = parse_maps(&maps).into_iter().find(|m| m.path == "[vdso]")?;
    let len = vdso
        .end
        .checked_sub(vdso.start)
        .filter(|&l| l <= VDSO_MAX)?;
    let mut mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(vdso.start)).ok()?;
    let mut image = vec![0; usize::try_from(len).ok()?];
    mem.read_exact(&mut image).ok()?;
    Some(image)
}

pub(crate) fn comm(pid: i32, tid: i32) -> io::Result<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))?;
    Ok(text.trim_end_matches('\n').to_string())
}

/// Thread ids of a process, sorted.
pub(crate) fn threads(pid: i32) -> io::Result<Vec<i32>> {
    let mut tids = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        if let Some(tid) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) {
            tids.push(tid);
        }
    }
    tids.sort_unstable();
    Ok(tids)
}

/// Every process id in /proc, sorted.
pub(crate) fn pids() -> io::Result<Vec<i32>> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        if let Some(pid) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    Ok(pids)
}

/// The thread group (process) id of a thread, from /proc/TID/status.
pub(crate) fn tgid(tid: i32) -> io::Result<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("/proc/{tid}/status has no Tgid"),
            )
        })
}

pub(crate) fn exists(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Parse a CPU list as the kernel prints it (`0-3,5,7-8`).
pub(crate) fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 65536 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// The CPUs that are online now.
pub fn online_cpus() -> io::Result<Vec<u32>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("/sys/devices/system/cpu/online: cannot parse {text:?}"),
        )
    })
}

/// The addresses of several kernel symbols in one pass over /proc/kallsyms
/// (generating it costs the kernel ~90 ms), stopping once all are found.
pub(crate) fn kallsyms_addresses(symbols: &[&str]) -> io::Result<Vec<Option<u64>>> {
    use std::io::BufRead;
    let mut found: Vec<Option<u64>> = vec![None; symbols.len()];
    let mut missing = symbols.len();
    let reader = io::BufReader::with_capacity(1 << 16, std::fs::File::open("/proc/kallsyms")?);
    for line in reader.lines() {
        let line = line?;
        let mut it = line.split_whitespace();
        let (Some(addr), Some(_kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if let Some(i) = symbols.iter().position(|s| *s == name)
            && found[i].is_none()
        {
            found[i] = u64::from_str_radix(addr, 16).ok().filter(|&a| a != 0);
            missing -= 1;
            if missing == 0 {
                break;
            }
        }
    }
    Ok(found)
}

/// A loaded kernel module from /proc/modules: name, load address, size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Module {
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) size: u64,
}

pub(crate) fn modules() -> io::Result<Vec<Module>> {
    let text = match std::fs::read_to_string("/proc/modules") {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let name = f.first()?;
            let size = f.get(1)?.parse().ok()?;
            let start = u64::from_str_radix(f.get(5)?.trim_start_matches("0x"), 16).ok()?;
            Some(Module {
                name: name.to_string(),
                start,
                size,
            })
        })
        .collect())
}

/// Where a module's file lives, from modules.dep of the running kernel.
pub(crate) fn module_path(name: &str) -> Option<PathBuf> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    let dir = PathBuf::from("/lib/modules").join(release.trim());
    let deps = std::fs::read_to_string(dir.join("modules.dep")).ok()?;
    let wanted = name.replace('-', "_");
    deps.lines().find_map(|line| {
        let path = line.split(':').next()?;
        let file = path.rsplit('/').next()?;
        let stem = file.split(".ko").next()?;
        (stem.replace('-', "_") == wanted).then(|| dir.join(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_maps_lines() {
        let text = "55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1234   /usr/bin/cat\n\
                    7ffd1000-7ffd3000 r-xp 00000000 00:00 0                  [vdso]\n\
                    7f00-8f00 rw-p 00000000 00:00 0 \n\
                    garbage\n";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 3);
        assert_eq!(maps[0].start, 0x55d0c0a00000);
        assert_eq!(maps[0].offset, 0x2000);
        assert_eq!(maps[0].dev_major, 0xfd);
        assert_eq!(maps[0].inode, 1234);
        assert_eq!(maps[0].path, "/usr/bin/cat");
        assert!(maps[0].is_executable());
        assert_eq!(maps[1].path, "[vdso]");
        assert_eq!(maps[2].path, "");
        assert!(!maps[2].is_executable());
    }

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,5,7-8\n"),
            Some(vec![0, 1, 2, 3, 5, 7, 8])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }
}
