//! `scry list` output: perf list's two columns (`  name OR alias` padded
//! to 50, then `[Group label]`), with ` <not supported>` after events this
//! machine cannot count; or `--json`, one array of objects.
//!
//! Decision: unlike perf, unsupported hardware events are shown (marked),
//! so a user learns *why* `-e cycles` will not count here.

use std::io::{self, Write};

use crate::event::listing::ListedEvent;

/// The two-column text.
pub(crate) fn write_text(out: &mut impl Write, events: &[ListedEvent]) -> io::Result<()> {
    for e in events {
        let mut name = e.name.clone();
        for alias in &e.aliases {
            name.push_str(" OR ");
            name.push_str(alias);
        }
        write!(out, "  {name:<50} [{}]", e.group.label())?;
        if e.unsupported.is_some() {
            write!(out, " <not supported>")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct JsonEvent<'a> {
    name: &'a str,
    aliases: &'a [String],
    group: &'static str,
    supported: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
}

/// One JSON array: `[{"name", "aliases", "group", "supported", "reason"?, "detail"?}]`.
pub(crate) fn write_json(out: &mut impl Write, events: &[ListedEvent]) -> io::Result<()> {
    let list: Vec<JsonEvent> = events
        .iter()
        .map(|e| JsonEvent {
            name: &e.name,
            aliases: &e.aliases,
            group: e.group.label(),
            supported: e.unsupported.is_none(),
            reason: e.unsupported.as_deref(),
            detail: e.detail.as_deref(),
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &list).map_err(io::Error::from)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::listing::Group;

    fn events() -> Vec<ListedEvent> {
        vec![
            ListedEvent {
                name: "cpu-cycles".into(),
                aliases: vec!["cycles".into()],
                group: Group::Hardware,
                unsupported: Some("No such file or directory".into()),
                detail: None,
            },
            ListedEvent {
                name: "alignment-faults".into(),
                aliases: vec![],
                group: Group::Software,
                unsupported: None,
                detail: None,
            },
        ]
    }

    #[test]
    fn text_columns_like_perf_list() {
        let mut out = Vec::new();
        write_text(&mut out, &events()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "  cpu-cycles OR cycles                               [Hardware event] <not supported>\n  alignment-faults                                   [Software event]\n"
        );
    }

    #[test]
    fn golden_files() {
        use crate::render::golden::check_golden;
        let mut events = events();
        events.push(ListedEvent {
            name: "sched:sched_switch".into(),
            aliases: vec![],
            group: Group::Tracepoint,
            unsupported: None,
            detail: None,
        });
        events.push(ListedEvent {
            name: "uprobes:p_calls_main".into(),
            aliases: vec![],
            group: Group::DynamicProbe,
            unsupported: None,
            detail: Some("uprobe /tmp/calls:0x1139".into()),
        });
        let mut text = Vec::new();
        write_text(&mut text, &events).unwrap();
        check_golden("list.txt", &String::from_utf8(text).unwrap());
        let mut json = Vec::new();
        write_json(&mut json, &events).unwrap();
        check_golden("list.json", &String::from_utf8(json).unwrap());
    }

    #[test]
    fn json_parses() {
        let mut out = Vec::new();
        write_json(&mut out, &events()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[0]["supported"], false);
        assert_eq!(v[0]["aliases"][0], "cycles");
        assert_eq!(v[1]["group"], "Software event");
    }
}
