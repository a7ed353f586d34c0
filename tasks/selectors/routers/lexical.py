"""Lexical router: BM25 (the ``bm25s`` package) of the request against each offered tool's words.

A tool's document is its name split into words (``snake_case``, ``camelCase``, dots and dashes) plus its
description. Request and documents go through the same tokenizer: lower case, English stopwords plus
request filler words ("please", "help", "today"...: a description full of them would otherwise attract
picks), and a Snowball stemmer (PyStemmer) when ``stem`` is on. Scores become probabilities as for the
embedding router (``router_scores.abstain_softmax``).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from schemas.catalogue import ToolSpec
from tasks.selectors.base import SelectionInput
from tasks.selectors.routers.router_scores import CAMEL_BOUNDARY, IdentityMemo, ScoreRouter, tool_name_words

# --------------------------------------------------------------------------------------------------
# Tokenizer
# --------------------------------------------------------------------------------------------------

REQUEST_FILLER_WORDS = frozenset(
    """
    please pls plz thanks thank hi hello hey help want wanted wants need needs like would could can
    may might must shall also let lets know tell today something anything everything someone
    anyone thing things way really just able go going get gets got give make use using used one
    """.split()
)
"""Words that carry no tool intent in requests ("can you help me ... today?") on top of NLTK's list."""


def _stopword_set(option: str | Sequence[str]) -> frozenset[str]:
    if not isinstance(option, str):
        return frozenset(word.lower() for word in option)
    from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_EN_PLUS

    lists: dict[str, frozenset[str]] = {
        "none": frozenset(),
        "english": frozenset(STOPWORDS_EN),
        "english_plus": frozenset(STOPWORDS_EN_PLUS),
        "english_plus_requests": frozenset(STOPWORDS_EN_PLUS) | REQUEST_FILLER_WORDS,
    }
    if option not in lists:
        raise ValueError(f"unknown stopwords option {option!r}: one of {sorted(lists)} or a list of words")
    return lists[option]


_WORD = re.compile(r"[^\W_]+")


class _Tokenizer:
    """Lower-cased word tokens, stopwords out, optionally Snowball-stemmed; caches per word and text."""

    def __init__(self, stopwords: frozenset[str], stem: bool) -> None:
        self._stopwords = stopwords | {word.replace("'", "") for word in stopwords}
        self._stemmer = None
        if stem:
            try:
                import Stemmer  # PyStemmer
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ImportError(
                    "LexicalSelector(stem=True) needs the 'pystemmer' package; install it or pass "
                    "options={'stem': False}"
                ) from exc
            self._stemmer = Stemmer.Stemmer("english")
        self._stem_cache: dict[str, str] = {}
        self._text_cache: dict[str, tuple[str, ...]] = {}

    def _stems(self, words: list[str]) -> list[str]:
        if self._stemmer is None:
            return words
        cache = self._stem_cache
        missing = [word for word in words if word not in cache]
        if missing:
            cache.update(zip(missing, self._stemmer.stemWords(missing)))
        return [cache[word] for word in words]

    def __call__(self, text: str) -> tuple[str, ...]:
        cached = self._text_cache.get(text)
        if cached is None:
            words = _WORD.findall(CAMEL_BOUNDARY.sub(" ", text).lower())
            words = [word for word in words if len(word) > 1 and word not in self._stopwords]
            cached = tuple(self._stems(words))
            if len(self._text_cache) >= _TEXT_CACHE_LIMIT:
                self._text_cache.clear()
            self._text_cache[text] = cached
        return cached


_TEXT_CACHE_LIMIT = 200_000
_INDEX_CACHE_LIMIT = 20_000


# --------------------------------------------------------------------------------------------------
# BM25 index of one set of tools
# --------------------------------------------------------------------------------------------------


@dataclass
class _Index:
    """BM25 weights of one set of tools (in a canonical order): CSC by token, as bm25s stores them."""

    vocab: dict[str, int]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    nonoccurrence: np.ndarray | None
    n_docs: int

    def score(self, queries: Sequence[tuple[str, ...]]) -> np.ndarray:
        """BM25 scores (queries x docs), every query at once: one gather and one bincount."""
        vocab = self.vocab
        rows: list[int] = []
        ids: list[int] = []
        for row, tokens in enumerate(queries):
            for token in tokens:
                token_id = vocab.get(token)
                if token_id is not None:
                    rows.append(row)
                    ids.append(token_id)
        n = len(queries)
        if not ids:
            return np.zeros((n, self.n_docs))
        token_ids = np.asarray(ids, dtype=np.int64)
        starts = self.indptr[token_ids]
        lengths = self.indptr[token_ids + 1] - starts
        total = int(lengths.sum())
        # positions in data/indices of every (query token, doc) posting, without a Python loop
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        postings = offsets + np.arange(total)
        query_rows = np.repeat(np.asarray(rows, dtype=np.int64), lengths)
        flat = query_rows * self.n_docs + self.indices[postings]
        scores = np.bincount(flat, weights=self.data[postings], minlength=n * self.n_docs)
        scores = scores.reshape(n, self.n_docs)
        if self.nonoccurrence is not None:  # BM25L / BM25+ add a per-token constant to every doc
            scores += np.bincount(rows, weights=self.nonoccurrence[token_ids], minlength=n)[:, None]
        return scores


@dataclass(frozen=True)
class _Placed:
    """An index plus where each offered tool (in one offered order) sits in it."""

    index: _Index
    columns: np.ndarray


class LexicalSelector(ScoreRouter):
    """BM25 over tool names and descriptions; a probability per offered tool and "none".

    Options (all optional):

    - ``temperature`` (default 0.75): softmax temperature over BM25 scores.
    - ``abstain_threshold`` (default 0.1, must be > 0): the score given to "none"; a request whose best
      tool scores below it picks "none". BM25 scores are >= 0 and exactly 0 when no request word occurs in
      any tool, so such requests (gibberish, off-topic) always pick "none"; 0.1 is about what one word
      shared by every tool of a 4-tool catalogue scores. ``never``: never abstain. In a run the cut-off is
      settled per arm (``router_setup.py``).
    - ``k1`` (1.5), ``b`` (0.75), ``method`` ("lucene"): bm25s's BM25 parameters ("robertson" gives
      words in more than half of the tools a zero or negative idf: useless on 2-4-tool catalogues).
    - ``stopwords`` ("english_plus_requests"): "none", "english" (bm25s, 33 words), "english_plus"
      (NLTK's 179), "english_plus_requests" (NLTK's + ``REQUEST_FILLER_WORDS``) or a list of words.
    - ``stem`` (True): Snowball English stemming (needs the ``pystemmer`` package).
    - ``name_weight`` (1): how many times the tool name's words count in its document.
    - ``parameters`` (True): add parameter names and descriptions to the document.
    - ``context_turns`` (2): turns of the conversation (the user's and the assistant's) read before the last
      user turn, one a line; 0 reads the last user turn alone (``routers/conversation.py``).

    ``latency_ms`` of each Selection is the batch's wall time divided evenly over its inputs.
    Indexes are cached per distinct set of tools (name + description [+ parameters]); one index serves
    every order of the same tools.
    """

    kind = "lexical"

    def __init__(self, model_id: str = "bm25-okapi", options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        self.model_id = model_id
        self.read_options(options, temperature=0.75, abstain_threshold=0.1)
        self.k1 = float(options.pop("k1", 1.5))
        self.b = float(options.pop("b", 0.75))
        self.method = str(options.pop("method", "lucene"))
        self.name_weight = int(options.pop("name_weight", 1))
        self.use_parameters = bool(options.pop("parameters", True))
        stopwords = options.pop("stopwords", "english_plus_requests")
        stem = bool(options.pop("stem", True))
        if options:
            raise ValueError(f"unknown LexicalSelector options: {sorted(options)}")
        if not self.abstain_threshold > 0 and self.abstain_threshold != float("-inf"):
            raise ValueError("abstain_threshold must be > 0 (a score of 0 means no request word matched) or 'never'")
        self._tokenize = _Tokenizer(_stopword_set(stopwords), stem)
        self._tool_key = IdentityMemo(self._key_of, _INDEX_CACHE_LIMIT)
        """(name, document) of a tool, memoised per ToolSpec object (permutations reuse the objects)."""
        self._indexes: dict[tuple, _Index] = {}
        self._placements: dict[tuple, _Placed] = {}
        self._placed = IdentityMemo(self._placed_by_content, _INDEX_CACHE_LIMIT)
        """The index and column order of an offered tool list, memoised per tuple object (one per arm and seed)."""

    # documents ------------------------------------------------------------------------------------

    def document(self, tool: ToolSpec) -> str:
        """The text BM25 indexes for one tool."""
        parts = [tool_name_words(tool.name)] * max(self.name_weight, 0) + [tool.description]
        if self.use_parameters:
            for name, schema in (tool.parameters.get("properties") or {}).items():
                parts.append(tool_name_words(name))
                if isinstance(schema, dict) and isinstance(schema.get("description"), str):
                    parts.append(schema["description"])
        return "\n".join(parts)

    def _key_of(self, tool: ToolSpec) -> tuple[str, str]:
        if self.use_parameters:
            return (tool.name, self.document(tool) + json.dumps(tool.parameters, sort_keys=True, default=str))
        return (tool.name, tool.description)

    def _build_index(self, tools: Sequence[ToolSpec]) -> _Index:
        import bm25s  # imported here: tooleval starts without it when no lexical arm runs

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # its per-index DEBUG lines drown the report

        corpus = [list(self._tokenize(self.document(tool))) for tool in tools]
        model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        model.index(corpus, show_progress=False)
        scores = model.scores
        nonoccurrence = getattr(model, "nonoccurrence_array", None)
        return _Index(
            vocab=model.vocab_dict,
            data=np.asarray(scores["data"], dtype=np.float64),
            indices=np.asarray(scores["indices"], dtype=np.int64),
            indptr=np.asarray(scores["indptr"], dtype=np.int64),
            nonoccurrence=None if nonoccurrence is None else np.asarray(nonoccurrence, dtype=np.float64),
            n_docs=int(scores["num_docs"]),
        )

    def _placed_by_content(self, tools: Sequence[ToolSpec]) -> _Placed:
        ordered_key = tuple(self._tool_key(tool) for tool in tools)
        placed = self._placements.get(ordered_key)
        if placed is None:
            canonical = sorted(range(len(tools)), key=lambda i: ordered_key[i])
            set_key = tuple(ordered_key[i] for i in canonical)
            index = self._indexes.get(set_key)
            if index is None:
                index = self._build_index([tools[i] for i in canonical])
                if len(self._indexes) >= _INDEX_CACHE_LIMIT:
                    self._indexes.clear()
                self._indexes[set_key] = index
            columns = np.empty(len(tools), dtype=np.int64)
            columns[canonical] = np.arange(len(tools))
            placed = _Placed(index=index, columns=columns)
            if len(self._placements) >= _INDEX_CACHE_LIMIT:
                self._placements.clear()
            self._placements[ordered_key] = placed
        return placed

    # selection ------------------------------------------------------------------------------------

    def scores(self, batch: Sequence[SelectionInput]) -> list[np.ndarray | None]:
        """BM25 score per offered tool (offered order) for each input; ``None`` for an empty request."""
        out: list[np.ndarray | None] = [None] * len(batch)
        texts = [self.request_text(item) for item in batch]
        groups: dict[int, tuple[_Index, list[int], list[np.ndarray]]] = {}
        for i, item in enumerate(batch):
            if not texts[i].strip():
                continue
            if not item.tools:
                out[i] = np.zeros(0)
                continue
            placed = self._placed(item.tools)
            group = groups.get(id(placed.index))
            if group is None:
                group = groups[id(placed.index)] = (placed.index, [], [])
            group[1].append(i)
            group[2].append(placed.columns)
        for index, members, columns in groups.values():
            matrix = index.score([self._tokenize(texts[i]) for i in members])
            # each input's own offered order of the same tools
            matrix = np.take_along_axis(matrix, np.stack(columns), axis=1)
            for row, i in enumerate(members):
                out[i] = matrix[row]
        return out
