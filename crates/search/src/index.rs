//! [`ToolIndex`]: the BM25 ranking of one snapshot of a registry's tools.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use bm25::{Embedder, EmbedderBuilder, Scorer};
use toolhost_core::tools::ToolEntry;

use crate::query::{MAX_QUERY_TERMS, Query};
use crate::text::{ToolTokenizer, document};

/// One tool found by a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The tool's name in the registry.
    pub name: String,
    /// Its BM25 score for the query (higher is better); a tool the query names exactly
    /// comes first whatever its score.
    pub score: f32,
}

/// The ranking of a snapshot of tools (see the crate docs). Immutable once built; build
/// a new one when the tools change ([`crate::LiveIndex`] does).
pub struct ToolIndex {
    /// The tools' entries by document id, sorted by name.
    entries: Vec<Arc<ToolEntry>>,
    /// Document id by lower-cased name, for exact-name queries.
    by_name: HashMap<String, usize>,
    embedder: Embedder<u32, ToolTokenizer>,
    scorer: Scorer<usize, u32>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// Indexes `entries` (any order: they are sorted by name first, so the index, and
    /// every ranking, is the same whatever order they come in).
    pub fn build(entries: impl IntoIterator<Item = Arc<ToolEntry>>) -> Self {
        let mut entries: Vec<Arc<ToolEntry>> = entries.into_iter().collect();
        entries.sort_by(|a, b| a.name().cmp(b.name()));
        entries.dedup_by(|a, b| a.name() == b.name());
        let docs: Vec<String> = entries.iter().map(|e| document(e)).collect();
        let corpus: Vec<&str> = docs.iter().map(String::as_str).collect();
        let embedder = EmbedderBuilder::<u32, ToolTokenizer>::with_tokenizer_and_fit_to_corpus(
            ToolTokenizer::new(),
            &corpus,
        )
        .build();
        let mut scorer = Scorer::<usize, u32>::new();
        for (id, doc) in docs.iter().enumerate() {
            scorer.upsert(&id, embedder.embed(doc));
        }
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(id, e)| (e.name().to_lowercase(), id))
            .collect();
        Self {
            entries,
            by_name,
            embedder,
            scorer,
        }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The indexed entry of the tool named `name`, if any.
    pub fn entry(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        let id = self.by_name.get(&name.to_lowercase())?;
        self.entries.get(*id).filter(|e| e.name() == name)
    }

    /// The tools that match `query` among those `visible` says the asker may see, best
    /// first, at most `query.limit()` of them. No match is an empty list.
    pub fn search(&self, query: &Query, visible: impl Fn(&str) -> bool) -> Vec<Hit> {
        let mut embedding = self.embedder.embed(query.text());
        // A term repeated is ranked once per occurrence; terms past the cap are dropped.
        embedding.0.truncate(MAX_QUERY_TERMS);
        let exact = self.by_name.get(&query.text().to_lowercase()).copied();
        let mut scored: Vec<(usize, f32)> = self
            .scorer
            .matches(&embedding)
            .into_iter()
            .map(|d| (d.id, d.score))
            .collect();
        if let Some(id) = exact
            && !scored.iter().any(|(d, _)| *d == id)
        {
            scored.push((id, 0.0));
        }
        let name = |id: usize| self.entries.get(id).map_or("", |e| e.name());
        scored.sort_by(|a, b| {
            let first = (Some(b.0) == exact).cmp(&(Some(a.0) == exact));
            first
                .then_with(|| b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal))
                .then_with(|| name(a.0).cmp(name(b.0)))
        });
        scored
            .into_iter()
            .filter(|(id, _)| visible(name(*id)))
            .take(query.limit())
            .filter_map(|(id, score)| {
                self.entries.get(id).map(|e| Hit {
                    name: e.name().to_string(),
                    score,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolhost_core::tools::{DynamicTool, ToolRegistry};

    /// A registry of tools as a mixed host holds them: files, web, time, maths, a
    /// wrapped server's camelCase tools, one with a description in another script.
    fn corpus() -> ToolRegistry {
        let r = ToolRegistry::new();
        let tools = [
            (
                "read_file",
                "Read a UTF-8 text file and return its contents.",
                json!({"type":"object","properties":{"path":{"type":"string","description":"Path of the file to read"}}}),
            ),
            (
                "write_file",
                "Write text to a file, replacing what it held.",
                json!({"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string","description":"The text to write"}}}),
            ),
            (
                "list_directory",
                "List the entries of a folder.",
                json!({"type":"object","properties":{"path":{"type":"string"}}}),
            ),
            (
                "get-time",
                "The current time in a time zone.",
                json!({"type":"object","properties":{"timezone":{"type":"string","description":"IANA zone such as Europe/Paris"}}}),
            ),
            (
                "http_get",
                "Fetch a URL over HTTPS and return the body.",
                json!({"type":"object","properties":{"url":{"type":"string"}}}),
            ),
            (
                "mean",
                "Arithmetic mean of a list of numbers.",
                json!({"type":"object","properties":{"values":{"type":"array","items":{"type":"number"}}}}),
            ),
            (
                "median",
                "Median of a list of numbers.",
                json!({"type":"object","properties":{"values":{"type":"array"}}}),
            ),
            (
                "getWeatherForecast",
                "Weather forecast for a city for the next days.",
                json!({"type":"object","properties":{"city":{"type":"string","description":"City name"},"days":{"type":"integer"}}}),
            ),
            (
                "sendEmail",
                "Send an e-mail message to a recipient.",
                json!({"type":"object","properties":{"to":{"type":"string","description":"Recipient address"},"subject":{"type":"string"},"body":{"type":"string"}}}),
            ),
            (
                "kv_put",
                "Store a value under a key in the memory store.",
                json!({"type":"object","properties":{"key":{"type":"string"},"value":{"type":"string"}}}),
            ),
            (
                "kv_get",
                "Look up the value stored under a key.",
                json!({"type":"object","properties":{"key":{"type":"string"}}}),
            ),
            (
                "translate",
                "翻訳: テキストを別の言語に翻訳します。",
                json!({"type":"object","properties":{"text":{"type":"string"}}}),
            ),
        ];
        for (name, desc, params) in tools {
            r.register(
                DynamicTool::builder(name)
                    .description(desc)
                    .parameters(params)
                    .build_dyn(),
            )
            .unwrap();
        }
        r
    }

    fn names(index: &ToolIndex, q: &str, limit: u64) -> Vec<String> {
        let q = Query::new(q, Some(limit)).unwrap();
        index
            .search(&q, |_| true)
            .into_iter()
            .map(|h| h.name)
            .collect()
    }

    #[test]
    fn relevant_tools_rank_first() {
        let index = ToolIndex::build(corpus().entries());
        let top = |q: &str| names(&index, q, 3).first().cloned().unwrap_or_default();
        assert_eq!(top("read the contents of a file"), "read_file");
        assert_eq!(top("save text into a file"), "write_file");
        assert_eq!(top("what time is it in Paris"), "get-time");
        assert_eq!(top("weather forecast for tomorrow"), "getWeatherForecast");
        // Lexical: "average" would not find `mean` (no word in common); synonyms are what
        // the optional embedding ranking is for.
        assert_eq!(top("arithmetic mean of some numbers"), "mean");
        assert_eq!(top("email someone"), "sendEmail");
        assert_eq!(top("download a web page url"), "http_get");
        assert_eq!(top("folder entries"), "list_directory");
        // A parameter's description is searched too.
        assert_eq!(top("recipient"), "sendEmail");
        // The exact name comes first, in any case.
        assert_eq!(top("kv_get"), "kv_get");
        assert_eq!(top("KV_PUT"), "kv_put");
        // Both files tools match "file"; the limit holds.
        let files = names(&index, "file", 2);
        assert_eq!(files.len(), 2);
        assert!(
            files.contains(&"read_file".to_string()) && files.contains(&"write_file".to_string())
        );
    }

    #[test]
    fn queries_without_a_match_find_nothing_and_other_scripts_do_not_break() {
        let index = ToolIndex::build(corpus().entries());
        assert!(names(&index, "quantum chromodynamics", 5).is_empty());
        // Only stop words: nothing to rank.
        assert!(names(&index, "the of and", 5).is_empty());
        // Another script: transliterated by the tokenizer, ranked like any text, and
        // an answer comes (empty or not), never a panic.
        let _ = names(&index, "ファイルを読む", 5);
        let _ = names(&index, "📁🔥 \u{202e}", 5);
        assert_eq!(names(&index, "translate", 1), ["translate"]);
    }

    #[test]
    fn the_order_is_the_same_whatever_order_the_tools_came_in() {
        let r = corpus();
        let mut reversed = r.entries();
        reversed.reverse();
        let a = ToolIndex::build(r.entries());
        let b = ToolIndex::build(reversed);
        for q in ["file", "value key", "numbers list", "time"] {
            let qa = Query::new(q, Some(10)).unwrap();
            assert_eq!(a.search(&qa, |_| true), b.search(&qa, |_| true), "{q}");
        }
        // Ties (the two kv tools match "key" alike in part) are by name.
        let hits = a.search(&Query::new("value", Some(10)).unwrap(), |_| true);
        for w in hits.windows(2) {
            assert!(w[0].score > w[1].score || (w[0].score == w[1].score && w[0].name < w[1].name));
        }
    }

    #[test]
    fn a_client_finds_only_what_it_may_see_and_the_limit_counts_those() {
        let index = ToolIndex::build(corpus().entries());
        let q = Query::new("file folder", Some(2)).unwrap();
        let hidden = |n: &str| n != "read_file" && n != "write_file";
        let hits = index.search(&q, hidden);
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].name, "list_directory");
        // Its exact name does not reveal a hidden tool either.
        let q = Query::new("read_file", Some(5)).unwrap();
        assert!(
            index
                .search(&q, hidden)
                .iter()
                .all(|h| h.name != "read_file")
        );
    }

    #[test]
    fn a_long_query_is_ranked_on_its_first_terms_only() {
        let index = ToolIndex::build(corpus().entries());
        let many = "zzz ".repeat(crate::MAX_QUERY_BYTES / 4 - 10) + "file";
        // "file" is past the term cap: nothing is found, quickly.
        assert!(names(&index, &many, 5).is_empty());
    }

    #[tokio::test]
    async fn the_live_index_follows_the_registry() {
        let r = corpus();
        let live = crate::LiveIndex::new(r.clone());
        let q = Query::new("convert currency", Some(3)).unwrap();
        assert!(live.current().search(&q, |_| true).is_empty());
        let first = live.current();
        assert!(
            Arc::ptr_eq(&first, &live.current()),
            "no rebuild without a change"
        );
        r.register(
            DynamicTool::builder("convert_currency")
                .description("Convert an amount between currencies.")
                .build_dyn(),
        )
        .unwrap();
        let hits = live.current().search(&q, |_| true);
        assert_eq!(
            hits.first().map(|h| h.name.as_str()),
            Some("convert_currency")
        );
        r.unregister("convert_currency");
        assert!(live.current().search(&q, |_| true).is_empty());
    }
}
