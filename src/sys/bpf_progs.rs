//! The BPF programs loaded now, as a recorder must describe them: each
//! program's id and tag, and each of its JIT'd functions' address, length
//! and name (`bpf_prog_<tag>_<name>`), read with `bpf_prog_get_next_id` and
//! `BPF_OBJ_GET_INFO_BY_FD` (through libbpf-rs, which holds the unsafe).
//!
//! Names follow perf's `synthesize_bpf_prog_name`, not the kernel's kallsyms
//! spelling, so a file scry writes names a program as perf's does: the
//! function's BTF name when the program has BTF function info; else the
//! program's name when it is one function; else `F`. A program the caller
//! may not read (no `CAP_SYS_ADMIN`), or one unloaded meanwhile, is left out:
//! this is a best effort, as perf's is.

use libbpf_rs::btf::{Btf, BtfType, TypeId};
use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions, ProgramInfo};

/// One JIT'd function of a program: where its code is, and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BpfFunc {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    pub(crate) name: String,
}

/// One loaded program: `bpf_prog_info`'s id and tag, its functions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BpfProg {
    pub(crate) id: u32,
    pub(crate) tag: [u8; 8],
    pub(crate) funcs: Vec<BpfFunc>,
}

/// Every JIT'd program loaded now (see the module doc); empty when BPF is
/// not readable here.
pub(crate) fn loaded_programs() -> Vec<BpfProg> {
    let opts = ProgInfoQueryOptions::default()
        .include_jited_ksyms(true)
        .include_jited_func_lens(true)
        .include_prog_tags(true)
        .include_func_info(true);
    ProgInfoIter::with_query_opts(opts)
        .filter_map(|info| program(&info))
        .collect()
}

fn program(info: &ProgramInfo) -> Option<BpfProg> {
    if info.jited_ksyms.is_empty() {
        return None;
    }
    let count = info.jited_ksyms.len();
    let btf = (info.btf_id != 0 && info.func_info.len() >= count)
        .then(|| Btf::from_prog_id(info.id).ok())
        .flatten();
    let funcs = info
        .jited_ksyms
        .iter()
        .enumerate()
        .map(|(i, &addr)| {
            let tag = info.prog_tags.get(i).map_or(info.tag.0, |t| t.0);
            let short = match &btf {
                Some(btf) => info.func_info.get(i).and_then(|f| {
                    let ty: BtfType<'_> = btf.type_by_id(TypeId::from(f.type_id))?;
                    Some(ty.name()?.to_string_lossy().into_owned())
                }),
                None if count == 1 => {
                    Some(info.name.to_string_lossy().into_owned()).filter(|n| !n.is_empty())
                }
                None => Some("F".to_owned()),
            };
            BpfFunc {
                addr: addr as u64,
                len: info.jited_func_lens.get(i).copied().unwrap_or(0),
                name: prog_name(&tag, short.as_deref()),
            }
        })
        .collect();
    Some(BpfProg {
        id: info.id,
        tag: info.tag.0,
        funcs,
    })
}

/// `bpf_prog_<tag in hex>[_<short>]`.
pub(crate) fn prog_name(tag: &[u8; 8], short: Option<&str>) -> String {
    let mut name = String::from("bpf_prog_");
    for b in tag {
        name.push_str(&format!("{b:02x}"));
    }
    if let Some(short) = short {
        name.push('_');
        name.push_str(short);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_perfs() {
        let tag = [0xee, 0x1d, 0xb1, 0xa1, 0xf4, 0xf2, 0x7c, 0xa8];
        assert_eq!(
            prog_name(&tag, Some("sys_enter")),
            "bpf_prog_ee1db1a1f4f27ca8_sys_enter"
        );
        assert_eq!(prog_name(&[0; 8], None), "bpf_prog_0000000000000000");
    }
}
