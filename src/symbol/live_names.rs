//! Names of code addresses in running processes, looked up when asked
//! (the process's maps and mapped files as they are then, through
//! blazesym): for the tools that report an address a live process handed
//! the kernel (threadsnoop's start functions). A process that has exited
//! since has nothing left to read: that address has no name (`None`), an
//! expected miss, not an error.

use blazesym::Pid;
use blazesym::symbolize::source::{Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

use super::names::strip_version;

/// The symbolizer, kept so each binary's symbols are parsed once.
pub(crate) struct LiveNames {
    symbolizer: Symbolizer,
}

impl std::fmt::Debug for LiveNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveNames").finish()
    }
}

impl Default for LiveNames {
    fn default() -> Self {
        LiveNames::new()
    }
}

impl LiveNames {
    pub(crate) fn new() -> LiveNames {
        LiveNames {
            symbolizer: Symbolizer::new(),
        }
    }

    /// The function at `abs_addr` in process `pid`, if it is still there
    /// and a symbol covers the address.
    pub(crate) fn function(&self, pid: u32, abs_addr: u64) -> Option<String> {
        let mut process = Process::new(Pid::from(pid));
        process.debug_syms = false;
        process.perf_map = false;
        let src = Source::Process(process);
        match self
            .symbolizer
            .symbolize_single(&src, Input::AbsAddr(abs_addr))
            .ok()?
        {
            Symbolized::Sym(sym) => Some(strip_version(&sym.name).to_string()),
            Symbolized::Unknown(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn scry_live_names_probe() -> u32 {
        std::hint::black_box(7)
    }

    #[test]
    fn names_a_function_of_this_process() {
        let addr = scry_live_names_probe as *const () as u64;
        let name = LiveNames::new().function(std::process::id(), addr);
        // A Rust name, demangled (its path, maybe a hash after it).
        assert!(
            name.as_deref()
                .is_some_and(|n| n.contains("scry_live_names_probe")),
            "{name:?}"
        );
        assert_eq!(LiveNames::new().function(4_194_304, addr), None);
    }
}
