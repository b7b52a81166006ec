//! [`ToolSource`]: tools that change while agents run (an MCP server's list, plugins).

use std::sync::Arc;

use crate::tool::BoxedTool;

/// A live source of tools for an agent's toolkit (`agentscope::Toolkit::source`): an agent's calls
/// resolve its current tools at their start, so a running agent sees tools the source adds
/// or removes from its next call on (an MCP server's client is one).
///
/// [`generation`](Self::generation) must change whenever [`tools`](Self::tools) would
/// return a different list; the toolkit only asks for the tools (and compiles their
/// schemas) when it does.
///
/// ```
/// use std::sync::{Arc, RwLock};
/// use agentscope_core::{BoxedTool, ToolSource};
///
/// /// Tools an application swaps at run time.
/// #[derive(Default)]
/// struct Swappable(RwLock<(u64, Vec<BoxedTool>)>);
///
/// impl Swappable {
///     fn set(&self, tools: Vec<BoxedTool>) {
///         let mut slot = self.0.write().unwrap();
///         *slot = (slot.0 + 1, tools);
///     }
/// }
///
/// impl ToolSource for Swappable {
///     fn name(&self) -> &str {
///         "swappable"
///     }
///     fn generation(&self) -> u64 {
///         self.0.read().map_or(0, |slot| slot.0)
///     }
///     fn tools(&self) -> Vec<BoxedTool> {
///         self.0.read().map(|slot| slot.1.clone()).unwrap_or_default()
///     }
/// }
///
/// let source = Arc::new(Swappable::default());
/// assert_eq!(source.generation(), 0);
/// source.set(Vec::new());
/// assert_eq!(source.generation(), 1);
/// ```
pub trait ToolSource: Send + Sync + 'static {
    /// The source's name, for error messages.
    fn name(&self) -> &str;

    /// A number that changes whenever the tool list changes (read at the start of every
    /// call: keep it cheap).
    fn generation(&self) -> u64;

    /// The current tools, in the order the model should see them.
    fn tools(&self) -> Vec<BoxedTool>;
}

/// A shared source is a source: keep an `Arc` to change it while agents use it.
impl<S: ToolSource + ?Sized> ToolSource for Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn generation(&self) -> u64 {
        (**self).generation()
    }

    fn tools(&self) -> Vec<BoxedTool> {
        (**self).tools()
    }
}
