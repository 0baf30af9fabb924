//! What the streaming tools' loaders share (execsnoop, opensnoop): the
//! loaded object with its ring (`events`) and drop count (`drops`, both
//! from `src/bpf/ring.bpf.h`), read through the engine's ring reader
//! (`bpf_engine::ring_reader`) and decoded into the tool's event type.
//!
//! The object's skeleton type is erased behind [`EventStream`], so the
//! tools share one set of methods (hooks, reader, drops) instead of each
//! writing its own; a loader gives the two maps' accessor once.

use std::io;

use libbpf_rs::MapMut;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};

use super::bpf_engine::{self, Attach, GroupRules, Hook, Loaded, RingReader};

/// A loaded object, whatever its skeleton.
trait Streaming {
    fn hooks(&self) -> Vec<Hook>;
    /// Its `events` and `drops` maps.
    fn maps(&self) -> (&MapMut<'static>, &MapMut<'static>);
}

/// The maps of a skeleton `S`: `(&events, &drops)`.
pub(crate) type MapsOf<S> = for<'r> fn(&'r S) -> (&'r MapMut<'static>, &'r MapMut<'static>);

struct Source<S> {
    loaded: Loaded<S>,
    maps: MapsOf<S>,
}

impl<S: Skel<'static>> Streaming for Source<S> {
    fn hooks(&self) -> Vec<Hook> {
        self.loaded.hooks()
    }

    fn maps(&self) -> (&MapMut<'static>, &MapMut<'static>) {
        (self.maps)(&self.loaded.skel)
    }
}

/// A streaming tool's programs, loaded and attached, whose events are
/// decoded into `E`s.
pub(crate) struct EventStream<E> {
    source: Box<dyn Streaming>,
    decode: fn(&[u8]) -> Option<E>,
}

impl<E> std::fmt::Debug for EventStream<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream")
            .field("hooks", &self.source.hooks())
            .finish()
    }
}

impl<E> EventStream<E> {
    /// `loaded`'s events, decoded by `decode`; `maps` names its ring and
    /// drop count.
    pub(crate) fn new<S: Skel<'static> + 'static>(
        loaded: Loaded<S>,
        maps: MapsOf<S>,
        decode: fn(&[u8]) -> Option<E>,
    ) -> EventStream<E> {
        EventStream {
            source: Box::new(Source { loaded, maps }),
            decode,
        }
    }

    /// Loads `builder`'s object (`configure` sets its `.rodata`, `rules`
    /// its groups) and attaches it at once: [`bpf_engine::load`] then
    /// [`EventStream::new`], the whole loader of most streaming tools.
    pub(crate) fn load<B, C, S>(
        builder: impl Fn() -> B,
        configure: C,
        rules: GroupRules<'_>,
        maps: MapsOf<S>,
        decode: fn(&[u8]) -> Option<E>,
    ) -> io::Result<EventStream<E>>
    where
        B: SkelBuilder<'static>,
        B::Output: OpenSkel<'static, Output = S>,
        S: Skel<'static> + 'static,
        C: FnMut(&mut B::Output) -> io::Result<()>,
    {
        let loaded = bpf_engine::load(builder, configure, rules, Attach::Now)?;
        Ok(EventStream::new(loaded, maps, decode))
    }

    /// Which hooks are in use (for `-v`).
    pub(crate) fn hooks(&self) -> Vec<Hook> {
        self.source.hooks()
    }

    /// The ring's reader, calling `on_event` with each event decoded
    /// (records too short to decode are skipped).
    pub(crate) fn reader<'a>(
        &'a self,
        mut on_event: impl FnMut(E) + 'a,
    ) -> io::Result<RingReader<'a>> {
        let decode = self.decode;
        bpf_engine::ring_reader(self.source.maps().0, move |raw| {
            if let Some(event) = decode(raw) {
                on_event(event);
            }
        })
    }

    /// Events the ring had no room for.
    pub(crate) fn dropped(&self) -> io::Result<u64> {
        bpf_engine::dropped(self.source.maps().1)
    }
}

/// A NUL-terminated string at `offset` of a record, at most `len` bytes.
pub(crate) fn c_string_at(bytes: &[u8], offset: usize, len: usize) -> String {
    super::bpf_engine::comm_at(bytes, offset, len)
}

/// An i32 at `offset` of a record.
pub(crate) fn i32_at(bytes: &[u8], offset: usize) -> Option<i32> {
    let b = bytes.get(offset..offset + 4)?;
    Some(i32::from_ne_bytes(b.try_into().ok()?))
}

/// A u16 at `offset` of a record.
pub(crate) fn u16_at(bytes: &[u8], offset: usize) -> Option<u16> {
    let b = bytes.get(offset..offset + 2)?;
    Some(u16::from_ne_bytes(b.try_into().ok()?))
}
