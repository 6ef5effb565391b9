//! [`LiveIndex`]: a [`ToolIndex`] kept current with a [`ToolRegistry`].

use std::sync::{Arc, Mutex};

use toolhost_core::tools::ToolRegistry;

use crate::index::ToolIndex;

/// The last index built and the registry generation it was built at.
type Built = Option<(u64, Arc<ToolIndex>)>;

/// A [`ToolIndex`] of a registry's tools, rebuilt on the first use after the registry
/// changed. Cheap to clone (shared). Concurrent askers after a change wait for one
/// rebuild rather than each making their own.
#[derive(Clone)]
pub struct LiveIndex {
    registry: ToolRegistry,
    built: Arc<Mutex<Built>>,
}

impl std::fmt::Debug for LiveIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveIndex").finish_non_exhaustive()
    }
}

impl LiveIndex {
    /// An index of `registry`'s tools (built on first use).
    pub fn new(registry: ToolRegistry) -> Self {
        Self {
            registry,
            built: Arc::default(),
        }
    }

    /// Whether this is an index of `registry` (the same shared registry, not an equal
    /// one).
    pub fn indexes(&self, registry: &ToolRegistry) -> bool {
        self.registry.same_as(registry)
    }

    /// The index of the registry's tools as they are now.
    pub fn current(&self) -> Arc<ToolIndex> {
        // A poisoned lock means a panic while building: the slot holds either the old
        // complete index or nothing, both consistent, so carry on.
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        // The generation is read before the entries: a change that lands in between is
        // in this index and also moves the generation, so the next use rebuilds again
        // rather than ever keeping an index older than its label.
        let generation = self.registry.generation();
        if let Some((at, index)) = built.as_ref()
            && *at == generation
        {
            return index.clone();
        }
        let index = Arc::new(ToolIndex::build(self.registry.entries()));
        *built = Some((generation, index.clone()));
        index
    }
}
