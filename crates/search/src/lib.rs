//! Tool search: a BM25 index over the tools of a [`ToolRegistry`], so a client or a
//! model can find the few tools a task needs among hundreds without being shown every
//! definition (docs/design.md, "Tool search").
//!
//! - [`ToolIndex`] ranks the tools of one snapshot of the registry against a [`Query`].
//!   Each tool is one document: its name (split into words: `read_file`, `get-time` and
//!   `getTime` all give their parts), title, description, tags, category, and the names
//!   and descriptions of its parameters. The ranking is BM25 with English stemming and
//!   stop words (the `bm25` crate), names and titles weighing more than the rest.
//! - A query equal to a tool's name ranks that tool first; the rest comes by score, ties
//!   by name: the order is the same on every run and every replica, whatever order the
//!   tools were loaded in.
//! - [`LiveIndex`] keeps a [`ToolIndex`] current with a registry: it is rebuilt on the
//!   first search after the registry changed (a plugin reloaded, a wrapped server's list
//!   changed), never on a search that finds it current.
//! - Each search takes the asker's visibility as a predicate on names: a client sees
//!   only the tools it may see, and the limit counts those alone.
//!
//! Everything here is bounded whatever the input: a query is at most
//! [`MAX_QUERY_BYTES`] and yields at most [`MAX_QUERY_TERMS`] terms, a result at most
//! [`MAX_LIMIT`] tools, and the text of a definition that is indexed is cut at
//! [`MAX_FIELD_BYTES`] per field and [`MAX_PARAMETERS`] parameters (definitions come from
//! plugin authors and MCP servers, neither trusted).

mod declare;
mod index;
mod live;
mod query;
mod text;

pub use declare::{
    MAX_DECLARATION_BYTES, MAX_DEPTH, MAX_DOC_CHARS, MAX_VARIANTS, declaration, declarations,
    declare,
};
pub use index::{Hit, ToolIndex};
pub use live::LiveIndex;
pub use query::{DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_BYTES, MAX_QUERY_TERMS, Query, SearchError};
pub use text::{MAX_FIELD_BYTES, MAX_PARAMETERS};

#[doc(no_inline)]
pub use toolhost_core::tools::ToolRegistry;
