//! Adding and removing tools: `register*`, and the [`Registration`] handle that removes
//! exactly the tool it registered (a later tool of the same name stays).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::entry::{StatsCell, ToolEntry, check_definition, check_output_schema};
use super::{Inner, ToolRegistry, write};
use crate::tools::base::{BaseTool, ToolMetadata};
use crate::tools::error::ToolError;
use crate::tools::permission::RiskLevel;
use serde_json::Value;

impl ToolRegistry {
    /// Registers a tool with the metadata it supplies. Fails on a duplicate name or a
    /// definition that fails the checks (name rule, description length, schema).
    ///
    /// Returns a [`Registration`] that can undo exactly this registration later.
    pub fn register(&self, tool: Arc<dyn BaseTool>) -> Result<Registration, ToolError> {
        let meta = tool.metadata();
        self.register_with(tool, meta)
    }

    /// Registers a tool with explicit metadata.
    pub fn register_with(
        &self,
        tool: Arc<dyn BaseTool>,
        metadata: ToolMetadata,
    ) -> Result<Registration, ToolError> {
        let entry = self.make_entry(tool, metadata)?;
        let name = entry.name.clone();
        let id = entry.id;
        let native = *entry.source() == crate::tools::base::ToolSource::Native;
        {
            let mut tools = write(&self.inner.tools);
            if tools.contains_key(&name) {
                return Err(ToolError::DuplicateTool(name));
            }
            tools.insert(name.clone(), Arc::new(entry));
        }
        tracing::debug!(tool = %name, "registered tool");
        self.bump();
        if native {
            self.native_changed(&name);
        }
        Ok(Registration {
            registry: Arc::downgrade(&self.inner),
            name,
            id,
        })
    }

    /// Registers a tool, replacing any tool of the same name in place (keeping its
    /// position). Used when a tool source refreshes its list.
    pub fn register_or_replace(&self, tool: Arc<dyn BaseTool>) -> Result<Registration, ToolError> {
        let meta = tool.metadata();
        let entry = self.make_entry(tool, meta)?;
        let name = entry.name.clone();
        let id = entry.id;
        write(&self.inner.tools).insert(name.clone(), Arc::new(entry));
        self.bump();
        Ok(Registration {
            registry: Arc::downgrade(&self.inner),
            name,
            id,
        })
    }

    /// Registers several tools; stops at the first error (tools registered before it stay).
    pub fn register_all(
        &self,
        tools: Vec<Arc<dyn BaseTool>>,
    ) -> Result<Vec<Registration>, ToolError> {
        tools.into_iter().map(|t| self.register(t)).collect()
    }

    fn make_entry(
        &self,
        tool: Arc<dyn BaseTool>,
        metadata: ToolMetadata,
    ) -> Result<ToolEntry, ToolError> {
        let name = tool.name().to_string();
        let description = tool.description().to_string();
        let parameters = tool.parameters();
        let validator = check_definition(&name, &description, &parameters)?;
        let output_validator = check_output_schema(&name, metadata.output_schema.as_ref())?;
        check_examples(&name, &validator, &metadata.input_examples)?;
        let permissions = tool.required_permissions();
        Ok(ToolEntry {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            risk: RiskLevel::of(&permissions).max(metadata.risk.unwrap_or(RiskLevel::ReadOnly)),
            tool,
            name,
            description,
            parameters,
            permissions,
            metadata,
            validator,
            output_validator,
            stats: StatsCell::default(),
        })
    }
}

/// The handle of one registration (a disposer). [`Registration::dispose`] removes
/// exactly the tool it registered: if the name was since re-registered by someone else,
/// that other tool stays. Dropping a `Registration` does nothing; use
/// [`Registration::into_guard`] for drop-to-unregister.
#[derive(Debug, Clone)]
pub struct Registration {
    registry: Weak<Inner>,
    name: String,
    id: u64,
}

impl Registration {
    /// The registered tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Unregisters the tool. Returns whether it was still registered.
    pub fn dispose(self) -> bool {
        self.dispose_ref()
    }

    fn dispose_ref(&self) -> bool {
        let Some(inner) = self.registry.upgrade() else {
            return false;
        };
        let removed = {
            let mut tools = write(&inner.tools);
            match tools.get(&self.name) {
                Some(e) if e.id == self.id => tools.shift_remove(&self.name).is_some(),
                _ => false,
            }
        };
        if removed {
            inner.changes.send_modify(|g| *g += 1);
        }
        removed
    }

    /// Turns the handle into a guard that unregisters the tool when dropped.
    pub fn into_guard(self) -> RegistrationGuard {
        RegistrationGuard(self)
    }
}

/// Unregisters its tool when dropped. See [`Registration::into_guard`].
#[derive(Debug)]
pub struct RegistrationGuard(Registration);

impl Drop for RegistrationGuard {
    fn drop(&mut self) {
        self.0.dispose_ref();
    }
}

/// The most input examples a tool may carry.
pub const MAX_INPUT_EXAMPLES: usize = 8;

/// The largest input example (as JSON), bytes.
const MAX_EXAMPLE_BYTES: usize = 4 << 10;

/// Every input example must meet the parameter schema (`validator`): a model shown a
/// wrong example learns the wrong shape. Bounded in number and size: they go into every
/// request.
fn check_examples(
    name: &str,
    validator: &jsonschema::Validator,
    examples: &[Value],
) -> Result<(), ToolError> {
    let bad = |m: String| ToolError::InvalidDefinition(name.to_string(), m);
    if examples.len() > MAX_INPUT_EXAMPLES {
        return Err(bad(format!(
            "{} input examples; at most {MAX_INPUT_EXAMPLES}",
            examples.len()
        )));
    }
    for (i, e) in examples.iter().enumerate() {
        if e.to_string().len() > MAX_EXAMPLE_BYTES {
            return Err(bad(format!(
                "input example {i} is over {MAX_EXAMPLE_BYTES} bytes"
            )));
        }
        if let Some(err) = validator.iter_errors(e).next() {
            return Err(bad(format!(
                "input example {i} does not meet the parameter schema: {err}"
            )));
        }
    }
    Ok(())
}
