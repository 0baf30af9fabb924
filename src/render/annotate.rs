//! Annotated disassembly in `perf annotate --stdio`'s layout: per function
//! a header (binary, event, samples), then each instruction with its share
//! of the function's samples, the source line before the instructions it
//! starts (its text when the file is readable, else `file:line`).
//!
//! Decoding is iced-x86's, printed in AT&T syntax as objdump (and so perf)
//! prints it, with addresses as the ELF states them (kernel: virtual
//! addresses). A sample whose offset falls inside an instruction (it
//! cannot, unless the binary changed) counts for that instruction. A
//! function whose code could not be read gets its header and the reason.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction};

use crate::analysis::annotate::FunctionHits;
use crate::symbol::code::{FunctionCode, Unavailable};
use crate::symbol::dso_short_name;

/// Source files read so far (`None`: unreadable), by path.
#[derive(Debug, Default)]
pub(crate) struct SourceCache {
    files: HashMap<String, Option<Vec<String>>>,
}

/// Source files larger than this are not read (16 MiB).
const MAX_SOURCE_BYTES: u64 = 16 << 20;

impl SourceCache {
    fn line(&mut self, file: &str, line: u64) -> Option<&str> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            let meta = std::fs::metadata(file).ok()?;
            if meta.len() > MAX_SOURCE_BYTES {
                return None;
            }
            let text = std::fs::read(file).ok()?;
            Some(
                String::from_utf8_lossy(&text)
                    .lines()
                    .map(str::to_string)
                    .collect(),
            )
        });
        let index = usize::try_from(line.checked_sub(1)?).ok()?;
        lines.as_ref()?.get(index).map(String::as_str)
    }
}

/// One decoded instruction: its address, length and text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Disassembled {
    pub(crate) svma: u64,
    pub(crate) len: u64,
    pub(crate) text: String,
}

/// Decodes `code` as x86-64, objdump's AT&T syntax (mnemonic padded to 7).
pub(crate) fn disassemble(code: &FunctionCode) -> Vec<Disassembled> {
    let mut decoder = Decoder::with_ip(64, &code.bytes, code.svma, DecoderOptions::NONE);
    let mut formatter = GasFormatter::new();
    let options = formatter.options_mut();
    options.set_first_operand_char_index(7);
    options.set_space_after_operand_separator(false);
    options.set_rip_relative_addresses(true);
    options.set_show_branch_size(false);
    options.set_uppercase_hex(false);
    options.set_small_hex_numbers_in_decimal(false);
    options.set_branch_leading_zeros(false);
    let mut out = Vec::new();
    let mut instruction = Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        let mut text = String::new();
        formatter.format(&instruction, &mut text);
        out.push(Disassembled {
            svma: instruction.ip(),
            len: instruction.len() as u64,
            text,
        });
    }
    out
}

/// Each instruction's samples: a hit at an offset counts for the
/// instruction holding it.
pub(crate) fn samples_per_instruction(hits: &FunctionHits, code: &[Disassembled]) -> Vec<u64> {
    let Some(first) = code.first() else {
        return Vec::new();
    };
    let mut counts = vec![0u64; code.len()];
    for (&offset, &n) in &hits.hits {
        let addr = first.svma + offset;
        let i = code.partition_point(|d| d.svma <= addr);
        if let Some(c) = i.checked_sub(1).and_then(|i| counts.get_mut(i)) {
            *c += n;
        }
    }
    counts
}

/// What `write_function` prints one function with.
pub(crate) struct FunctionListing<'a> {
    pub(crate) hits: &'a FunctionHits,
    /// The function's code, or why it could not be read.
    pub(crate) code: Result<&'a FunctionCode, &'a Unavailable>,
    /// The event's name (`cpu-clock:ppp`).
    pub(crate) event: &'a str,
}

fn header(w: &mut dyn Write, listing: &FunctionListing) -> io::Result<()> {
    let dso = dso_short_name(&listing.hits.frame.dso);
    let title = format!(
        " Percent |\tSource code & Disassembly of {dso} for {} ({} samples, percent: local period)",
        listing.event, listing.hits.samples
    );
    writeln!(w, "{title}")?;
    writeln!(w, "{}", "-".repeat(title.len().max(20) + 6))
}

/// Prints one function.
pub(crate) fn write_function(
    w: &mut dyn Write,
    listing: &FunctionListing,
    sources: &mut SourceCache,
) -> io::Result<()> {
    header(w, listing)?;
    let name = listing.hits.frame.sym.as_deref().unwrap_or("[unknown]");
    let code = match &listing.code {
        Ok(code) => *code,
        Err(reason) => {
            writeln!(w, "         : {name}: {reason}")?;
            return writeln!(w);
        }
    };
    writeln!(w, "         :")?;
    writeln!(w, "         : {:016x} <{name}>:", code.svma)?;
    let instructions = disassemble(code);
    let counts = samples_per_instruction(listing.hits, &instructions);
    let total = listing.hits.samples.max(1) as f64;
    let lines: BTreeMap<u64, (&str, u64)> = code
        .lines
        .iter()
        .map(|(a, f, l)| (*a, (f.as_str(), *l)))
        .collect();
    let mut last_line = None;
    for (ins, n) in instructions.iter().zip(&counts) {
        if let Some(&(file, line)) = lines.get(&ins.svma)
            && last_line != Some((file, line))
        {
            last_line = Some((file, line));
            match sources.line(file, line) {
                Some(text) => writeln!(w, "         : {line:<4} {text}")?,
                None => writeln!(w, "         : {file}:{line}")?,
            }
        }
        let pct = *n as f64 * 100.0 / total;
        writeln!(w, "{pct:>8.2} :   {:x}:   {}", ins.svma, ins.text)?;
    }
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::{Frame, FrameKind};

    fn code() -> FunctionCode {
        // mov $0x0,%edx; div %rsi; add $0x1,%rcx; ret
        FunctionCode {
            symbol: "div_hot".into(),
            svma: 0x135f,
            bytes: vec![
                0xba, 0, 0, 0, 0, 0x48, 0xf7, 0xf6, 0x48, 0x83, 0xc1, 0x01, 0xc3,
            ],
            lines: vec![
                (0x135f, "/nonexistent/d.c".into(), 22),
                (0x1367, "/nonexistent/d.c".into(), 21),
            ],
        }
    }

    #[test]
    fn instructions_get_their_share_in_perf_layout() {
        let hits = FunctionHits {
            frame: Frame {
                sym: Some("div_hot".into()),
                dso: "/tmp/divloop".into(),
                kind: FrameKind::User,
                inlined: false,
                srcline: None,
            },
            start: 0x135f,
            samples: 4,
            // The add after the div, and once mid-instruction (the div).
            hits: BTreeMap::from([(8, 3), (6, 1)]),
            jitdump: None,
        };
        let code = code();
        let listing = FunctionListing {
            hits: &hits,
            code: Ok(&code),
            event: "cpu-clock",
        };
        let mut out = Vec::new();
        write_function(&mut out, &listing, &mut SourceCache::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        let expected = [
            " Percent |\tSource code & Disassembly of divloop for cpu-clock (4 samples, percent: local period)",
        ];
        assert!(text.starts_with(expected[0]), "{text}");
        for line in [
            "         : 000000000000135f <div_hot>:",
            "         : /nonexistent/d.c:22",
            "    0.00 :   135f:   mov    $0x0,%edx",
            "   25.00 :   1364:   div    %rsi",
            "         : /nonexistent/d.c:21",
            "   75.00 :   1367:   add    $0x1,%rcx",
            "    0.00 :   136b:   ret",
        ] {
            assert!(text.lines().any(|l| l == line), "no '{line}' in\n{text}");
        }
        let missing = FunctionListing {
            hits: &hits,
            code: Err(&Unavailable::KcoreNeedsRoot),
            event: "cpu-clock",
        };
        let mut out = Vec::new();
        write_function(&mut out, &missing, &mut SourceCache::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(
            "         : div_hot: kernel code is read from /proc/kcore, which needs root"
        ));
    }
}
