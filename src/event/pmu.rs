//! perf's `PMU/term=value,.../` event syntax: `cpu/event=0x3c,umask=0x00/`,
//! `software/config=1,name=foo/u`, `msr/tsc/`. Splitting the text is
//! [`split`]; [`encode`] turns the terms into `config`, `config1`,
//! `config2` with what sysfs says of the PMU (`sys::pmu::PmuInfo`: its
//! `format/*` bit ranges and its named events), handed in, so this stage
//! reads no file.
//!
//! As in perf: a format term without a value is 1; a named event (an
//! alias: `tsc`) brings its own terms, unit and scale; `config=`,
//! `config1=`, `config2=` set the whole field; `name=` names the event,
//! `period=` is the sampling period; `percore` and `metric-id` are taken
//! and have no effect here. Any other term is an error that lists the
//! terms the PMU knows, in perf's order (formats first).

use crate::sys::pmu::PmuInfo;

/// The built-in terms every PMU takes, in the order perf lists them.
const BUILTIN_TERMS: &[&str] = &[
    "config",
    "config1",
    "config2",
    "name",
    "period",
    "percore",
    "metric-id",
];

/// `msr/tsc,name=t/k` split: `("msr", "tsc,name=t", "k")`. None when the
/// text is not in PMU syntax (no `NAME/` before the first slash).
pub(crate) fn split(text: &str) -> Option<(&str, &str, &str)> {
    let (pmu, rest) = text.split_once('/')?;
    let pmu_ok = !pmu.is_empty()
        && pmu
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    if !pmu_ok {
        return None;
    }
    let (terms, modifiers) = rest.rsplit_once('/')?;
    Some((pmu, terms, modifiers))
}

/// What a PMU event's terms came to.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PmuConfig {
    pub(crate) config: u64,
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    /// `name=`.
    pub(crate) name: Option<String>,
    /// `period=`.
    pub(crate) period: Option<u64>,
    /// From a named event's `.unit` / `.scale` files.
    pub(crate) unit: Option<String>,
    pub(crate) scale: Option<f64>,
}

/// Why terms could not be encoded; `name::EventError` words it for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TermError {
    /// `term` is neither a built-in, a format nor a named event of the PMU;
    /// `valid` lists what is.
    Unknown { term: String, valid: String },
    /// A bad value or spec, in words.
    Bad(String),
}

fn parse_number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Sets the bits of `spec` (`config:0-7,32-35`) in `out` from `value`,
/// lowest bits first, as perf's `pmu_format_value` does.
fn apply_format(spec: &str, value: u64, out: &mut PmuConfig) -> Result<(), TermError> {
    let (field, ranges) = spec
        .split_once(':')
        .ok_or_else(|| TermError::Bad(format!("format '{spec}' has no field")))?;
    let target = match field.trim() {
        "config" => &mut out.config,
        "config1" => &mut out.config1,
        "config2" => &mut out.config2,
        other => {
            return Err(TermError::Bad(format!(
                "format field '{other}' is not config, config1 or config2"
            )));
        }
    };
    let mut used = 0u32;
    for range in ranges.split(',') {
        let (lo, hi) = match range.split_once('-') {
            Some((lo, hi)) => (lo.trim().parse::<u32>(), hi.trim().parse::<u32>()),
            None => (range.trim().parse::<u32>(), range.trim().parse::<u32>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else {
            return Err(TermError::Bad(format!(
                "format '{spec}': bad bit range '{range}'"
            )));
        };
        if lo > hi || hi > 63 {
            return Err(TermError::Bad(format!(
                "format '{spec}': bad bit range '{range}'"
            )));
        }
        for bit in lo..=hi {
            if used < 64 && value >> used & 1 == 1 {
                *target |= 1 << bit;
            } else if used < 64 {
                *target &= !(1 << bit);
            }
            used += 1;
        }
    }
    if used < 64 && value >> used != 0 {
        return Err(TermError::Bad(format!(
            "value {value:#x} is too big for format '{spec}' ({used} bits)"
        )));
    }
    Ok(())
}

fn valid_terms(pmu: &PmuInfo) -> String {
    pmu.formats
        .iter()
        .map(|(name, _)| name.as_str())
        .chain(BUILTIN_TERMS.iter().copied())
        .collect::<Vec<_>>()
        .join(",")
}

/// Encodes `terms` (`event=0x3c,umask=0,name=foo`) for `pmu`.
pub(crate) fn encode(pmu: &PmuInfo, terms: &str) -> Result<PmuConfig, TermError> {
    let mut out = PmuConfig::default();
    encode_into(pmu, terms, &mut out, true)?;
    Ok(out)
}

fn encode_into(
    pmu: &PmuInfo,
    terms: &str,
    out: &mut PmuConfig,
    aliases_allowed: bool,
) -> Result<(), TermError> {
    for term in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (key, value) = match term.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (term, None),
        };
        let number = |what: &str| -> Result<u64, TermError> {
            match value {
                None => Ok(1),
                Some(v) => parse_number(v)
                    .ok_or_else(|| TermError::Bad(format!("{what}: '{v}' is not a number"))),
            }
        };
        match key {
            "config" => out.config = number(key)?,
            "config1" => out.config1 = number(key)?,
            "config2" => out.config2 = number(key)?,
            "period" => out.period = Some(number(key)?),
            "name" => match value {
                Some(v) if !v.is_empty() => out.name = Some(v.trim_matches('"').to_string()),
                _ => return Err(TermError::Bad("name= needs a value".into())),
            },
            "percore" | "metric-id" => {}
            _ => {
                if let Some((_, spec)) = pmu.formats.iter().find(|(f, _)| f == key) {
                    let value = number(key)?;
                    apply_format(spec, value, out)?;
                } else if let Some(alias) =
                    pmu.events.iter().find(|a| aliases_allowed && a.name == key)
                {
                    encode_into(pmu, &alias.terms, out, false)?;
                    out.unit.clone_from(&alias.unit);
                    out.scale = alias.scale;
                } else {
                    return Err(TermError::Unknown {
                        term: key.to_string(),
                        valid: valid_terms(pmu),
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::pmu::PmuAlias;

    fn cpu() -> PmuInfo {
        PmuInfo {
            name: "cpu".into(),
            type_: 4,
            formats: vec![
                ("cmask".into(), "config:24-31".into()),
                ("event".into(), "config:0-7,32-35".into()),
                ("umask".into(), "config:8-15".into()),
            ],
            events: vec![PmuAlias {
                name: "cycles-t".into(),
                terms: "event=0x3c,in_tx=1".into(),
                unit: None,
                scale: None,
            }],
        }
    }

    #[test]
    fn splits_pmu_syntax() {
        assert_eq!(
            split("cpu/event=0x3c,umask=0x00/"),
            Some(("cpu", "event=0x3c,umask=0x00", ""))
        );
        assert_eq!(split("msr/tsc,name=t/k"), Some(("msr", "tsc,name=t", "k")));
        assert_eq!(split("sched:sched_switch"), None);
        assert_eq!(split("/usr/bin/ls"), None);
        assert_eq!(split("cpu/event=1"), None);
    }

    #[test]
    fn encodes_formats_builtins_and_split_ranges() {
        let c = encode(&cpu(), "event=0x3c,umask=0x01,cmask=2").unwrap();
        assert_eq!(c.config, 0x3c | 0x01 << 8 | 2 << 24);
        // Bits 8-11 of the value go to bits 32-35.
        let c = encode(&cpu(), "event=0x1a8").unwrap();
        assert_eq!(c.config, 0xa8 | 1 << 32);
        let c = encode(&cpu(), "config=5,config1=6,config2=0x7,name=foo,period=100").unwrap();
        assert_eq!((c.config, c.config1, c.config2), (5, 6, 7));
        assert_eq!(c.name.as_deref(), Some("foo"));
        assert_eq!(c.period, Some(100));
        // A format term without a value is 1.
        assert_eq!(encode(&cpu(), "umask").unwrap().config, 1 << 8);
    }

    #[test]
    fn rejects_unknown_terms_and_big_values() {
        let err = encode(&cpu(), "bogus=1").unwrap_err();
        assert_eq!(
            err,
            TermError::Unknown {
                term: "bogus".into(),
                valid: "cmask,event,umask,config,config1,config2,name,period,percore,metric-id"
                    .into()
            }
        );
        assert!(matches!(
            encode(&cpu(), "umask=0x100"),
            Err(TermError::Bad(_))
        ));
        assert!(matches!(encode(&cpu(), "event=zz"), Err(TermError::Bad(_))));
        // The alias names a term this PMU lacks (in_tx): an error, not a loop.
        assert!(encode(&cpu(), "cycles-t").is_err());
    }
}
