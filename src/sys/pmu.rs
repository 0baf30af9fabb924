//! What sysfs says about one PMU (`/sys/bus/event_source/devices/NAME`):
//! its `type`, its `format/*` files (which bits of `config`, `config1` or
//! `config2` a term sets) and its named events (`events/*`, with their
//! `.unit` and `.scale`), as plain text for `event::pmu` to interpret.
//!
//! Every file is small; each is read with a bound so that a bogus sysfs
//! (or a test's directory) cannot make us allocate without limit.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where the kernel lists its PMUs.
pub(crate) const DEVICES: &str = "/sys/bus/event_source/devices";

/// No format or event file of a real PMU comes close to this.
const MAX_FILE: u64 = 64 * 1024;
/// Nor does any PMU have this many formats or events (x86 `cpu` has ~200).
const MAX_ENTRIES: usize = 10_000;
/// Files beside a named event that describe it rather than name one.
const METADATA: &[&str] = &[".unit", ".scale", ".per-pkg", ".snapshot"];

/// One named event of a PMU (`events/tsc` holds `event=0x00`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PmuAlias {
    pub(crate) name: String,
    /// The terms, as the file holds them.
    pub(crate) terms: String,
    /// `events/NAME.unit`, if present.
    pub(crate) unit: Option<String>,
    /// `events/NAME.scale`, if present and a number.
    pub(crate) scale: Option<f64>,
}

/// A PMU as sysfs describes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PmuInfo {
    pub(crate) name: String,
    pub(crate) type_: u32,
    /// `(term, spec)`: `("event", "config:0-7")`, sorted by term.
    pub(crate) formats: Vec<(String, String)>,
    /// Named events, sorted by name.
    pub(crate) events: Vec<PmuAlias>,
}

fn read_small(path: &Path) -> io::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_FILE)
        .read_to_string(&mut text)?;
    Ok(text)
}

/// File names in `dir` (none if it does not exist), sorted.
fn names_in(dir: &Path) -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names = Vec::new();
    for entry in entries.take(MAX_ENTRIES) {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Reads PMU `name` under `devices` (normally [`DEVICES`]). NotFound when
/// there is no such PMU.
pub(crate) fn read_pmu_in(devices: &Path, name: &str) -> io::Result<PmuInfo> {
    if name.is_empty() || name.contains(['/', '\0']) || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no such PMU"));
    }
    let dir = devices.join(name);
    let type_text = read_small(&dir.join("type"))?;
    let type_ = type_text.trim().parse().map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}/type: not a number: {:?}",
                dir.display(),
                type_text.trim()
            ),
        )
    })?;
    let mut formats = Vec::new();
    for term in names_in(&dir.join("format"))? {
        let spec = read_small(&dir.join("format").join(&term))?;
        formats.push((term, spec.trim().to_string()));
    }
    let events_dir: PathBuf = dir.join("events");
    let mut events = Vec::new();
    for file in names_in(&events_dir)? {
        // An event's metadata sits beside it: NAME.unit, NAME.scale, ...
        if METADATA.iter().any(|suffix| file.ends_with(suffix)) {
            continue;
        }
        let terms = read_small(&events_dir.join(&file))?.trim().to_string();
        let unit = read_small(&events_dir.join(format!("{file}.unit")))
            .ok()
            .map(|u| u.trim().to_string());
        let scale = read_small(&events_dir.join(format!("{file}.scale")))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        events.push(PmuAlias {
            name: file,
            terms,
            unit,
            scale,
        });
    }
    Ok(PmuInfo {
        name: name.to_string(),
        type_,
        formats,
        events,
    })
}

/// Reads PMU `name` from this machine's sysfs.
pub(crate) fn read_pmu(name: &str) -> io::Result<PmuInfo> {
    read_pmu_in(Path::new(DEVICES), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_pmu_directory() {
        let root = std::env::temp_dir().join(format!("scry-pmu-{}", std::process::id()));
        let dir = root.join("fake");
        std::fs::create_dir_all(dir.join("format")).unwrap();
        std::fs::create_dir_all(dir.join("events")).unwrap();
        std::fs::write(dir.join("type"), "42\n").unwrap();
        std::fs::write(dir.join("format/event"), "config:0-7\n").unwrap();
        std::fs::write(dir.join("format/umask"), "config:8-15\n").unwrap();
        std::fs::write(dir.join("events/energy"), "event=0x02\n").unwrap();
        std::fs::write(dir.join("events/energy.unit"), "Joules\n").unwrap();
        std::fs::write(
            dir.join("events/energy.scale"),
            "2.3283064365386962890625e-10\n",
        )
        .unwrap();
        std::fs::write(dir.join("events/energy.snapshot"), "1\n").unwrap();
        let pmu = read_pmu_in(&root, "fake").unwrap();
        assert_eq!(pmu.type_, 42);
        assert_eq!(
            pmu.formats,
            vec![
                ("event".to_string(), "config:0-7".to_string()),
                ("umask".to_string(), "config:8-15".to_string())
            ]
        );
        assert_eq!(pmu.events.len(), 1);
        assert_eq!(pmu.events[0].terms, "event=0x02");
        assert_eq!(pmu.events[0].unit.as_deref(), Some("Joules"));
        assert!(pmu.events[0].scale.is_some_and(|s| s > 0.0 && s < 1e-9));
        assert_eq!(
            read_pmu_in(&root, "nosuch").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert!(read_pmu_in(&root, "../fake").is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
