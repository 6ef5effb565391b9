//! A search query as it arrives from a client or a model, checked once: not empty, not
//! longer than [`MAX_QUERY_BYTES`], asking for 1 to [`MAX_LIMIT`] tools. A query that
//! fails a check is a [`SearchError`] whose text says what to send instead.

/// The longest query accepted, in bytes of UTF-8. A description of what a task needs
/// fits in a few hundred; a longer one is most likely a pasted document or an attack on
/// the ranking's cost.
pub const MAX_QUERY_BYTES: usize = 2048;

/// The most terms of a query that are ranked (after stop words are dropped); further
/// terms are ignored. Ranking costs a lookup per term.
pub const MAX_QUERY_TERMS: usize = 64;

/// The most tools one search returns.
pub const MAX_LIMIT: usize = 50;

/// How many tools a search returns when the asker does not say.
pub const DEFAULT_LIMIT: usize = 8;

/// Why a query was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The query is empty or only whitespace.
    #[error("the search query is empty: describe the task or name the tool you need")]
    EmptyQuery,
    /// The query is longer than [`MAX_QUERY_BYTES`].
    #[error(
        "the search query is {bytes} bytes, more than the {max} accepted: describe the task in a few words"
    )]
    QueryTooLong {
        /// Its length in bytes.
        bytes: usize,
        /// [`MAX_QUERY_BYTES`].
        max: usize,
    },
    /// The limit is 0 or more than [`MAX_LIMIT`].
    #[error("`limit` must be from 1 to {max}, not {limit}")]
    LimitOutOfRange {
        /// The limit asked for.
        limit: u64,
        /// [`MAX_LIMIT`].
        max: usize,
    },
}

/// A checked query: its text and how many tools to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    text: String,
    limit: usize,
}

impl Query {
    /// Checks `text` (trimmed) and `limit` ([`DEFAULT_LIMIT`] when `None`).
    pub fn new(text: &str, limit: Option<u64>) -> Result<Self, SearchError> {
        if text.len() > MAX_QUERY_BYTES {
            return Err(SearchError::QueryTooLong {
                bytes: text.len(),
                max: MAX_QUERY_BYTES,
            });
        }
        let text = text.trim();
        if text.is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(n) if (1..=MAX_LIMIT as u64).contains(&n) => n as usize,
            Some(n) => {
                return Err(SearchError::LimitOutOfRange {
                    limit: n,
                    max: MAX_LIMIT,
                });
            }
        };
        Ok(Self {
            text: text.to_string(),
            limit,
        })
    }

    /// The query's text, trimmed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many tools to return at most.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_queries_are_refused_with_what_to_send() {
        assert_eq!(Query::new("  \n\t", None), Err(SearchError::EmptyQuery));
        let long = "a".repeat(MAX_QUERY_BYTES + 1);
        let e = Query::new(&long, None).unwrap_err();
        assert!(
            matches!(e, SearchError::QueryTooLong { bytes, .. } if bytes == MAX_QUERY_BYTES + 1)
        );
        assert!(e.to_string().contains("few words"), "{e}");
        assert!(matches!(
            Query::new("x", Some(0)),
            Err(SearchError::LimitOutOfRange { limit: 0, .. })
        ));
        assert!(Query::new("x", Some(MAX_LIMIT as u64 + 1)).is_err());
        let q = Query::new("  read a file ", Some(3)).unwrap();
        assert_eq!((q.text(), q.limit()), ("read a file", 3));
        assert_eq!(Query::new("x", None).unwrap().limit(), DEFAULT_LIMIT);
    }
}
