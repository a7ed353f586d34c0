"""Embeddings kept on disk by content (issues 27 and 28): a second run, train or fit encodes nothing it
encoded before, and loads no model when nothing is new."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tasks.selectors.routers.embedding_store import EmbeddingStore, model_fingerprint
from tests.factories import ROOT


@pytest.fixture
def model_dir(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"dim": 4}')
    (folder / "model.safetensors").write_bytes(b"\0" * 2048)
    return folder


def test_vectors_come_back_as_kept_under_the_model_and_the_text(tmp_path, model_dir):
    vectors = {"refund my order": np.array([0.6, 0.8, 0, 0], dtype=np.float32),
               "where is my parcel": np.array([0, 0, 1, 0], dtype=np.float32)}
    with EmbeddingStore(str(model_dir), tmp_path / "cache") as store:
        assert store.get_many(vectors) == {}
        store.put_many(vectors)
    with EmbeddingStore(str(model_dir), tmp_path / "cache") as store:  # another opener, as another process
        found = store.get_many(["where is my parcel", "refund my order", "not kept"])
    assert set(found) == set(vectors)
    for text, vector in vectors.items():
        assert found[text].dtype == np.float32 and np.array_equal(found[text], vector)


def test_another_model_or_configuration_never_reads_these_vectors(tmp_path, model_dir):
    before = model_fingerprint(str(model_dir))
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text('{"dim": 5}')  # one byte of configuration differs
    (other / "model.safetensors").write_bytes(b"\0" * 2048)
    assert model_fingerprint(str(other)) != before
    with EmbeddingStore(str(model_dir), tmp_path / "cache") as store:
        store.put_many({"hello": np.ones(4, dtype=np.float32)})
    with EmbeddingStore(str(other), tmp_path / "cache") as store:
        assert store.get_many(["hello"]) == {}


def test_a_fine_tuned_copy_with_the_same_files_and_sizes_is_another_model(tmp_path):
    """Fine-tuning changes the weights' bytes, not their file's name or size: a sampled block must differ."""
    from tasks.selectors.routers.embedding_store import SMALL_FILE_BYTES

    weights = np.random.default_rng(0).bytes(3 * SMALL_FILE_BYTES)
    models = []
    for name, offset in (("base", None), ("tuned", 2 * SMALL_FILE_BYTES + 12_345), ("same", None)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text('{"dim": 4}')
        changed = bytearray(weights)
        if offset is not None:
            changed[offset: offset + 70_000] = bytes(70_000)  # one stretch of weights moved, as a few steps do
        (folder / "model.safetensors").write_bytes(bytes(changed))
        models.append(model_fingerprint(str(folder)))
    base, tuned, same = models
    assert tuned != base and same == base


def test_off_keeps_nothing_and_an_unwritable_cache_is_not_used(tmp_path, model_dir, monkeypatch):
    monkeypatch.setenv("TOOLEVAL_EMBEDDING_CACHE", "off")
    with EmbeddingStore(str(model_dir), tmp_path / "cache") as store:
        store.put_many({"hello": np.ones(4, dtype=np.float32)})
        assert store.get_many(["hello"]) == {}
    assert not (tmp_path / "cache").exists()
    monkeypatch.delenv("TOOLEVAL_EMBEDDING_CACHE")
    (tmp_path / "afile").write_text("x")
    with EmbeddingStore(str(model_dir), tmp_path / "afile" / "cache") as store:  # cannot be made: not used
        store.put_many({"hello": np.ones(4, dtype=np.float32)})
        assert store.get_many(["hello"]) == {}


ENCODE = textwrap.dedent("""
    import json, sys
    import tasks.selectors.routers.embedding as embedding
    from tasks.selectors.decision_models.base_scores import embed_texts
    texts = json.loads(sys.argv[1])
    vectors = embed_texts(texts)
    print(json.dumps({"encoded": embedding.ENCODED_TEXTS, "model_loaded": "sentence_transformers" in sys.modules,
                      "vectors": vectors.round(6).tolist()}))
""")


@pytest.mark.slow  # loads MiniLM once (the first process)
def test_a_second_process_encodes_nothing_the_first_encoded_and_loads_no_model(tmp_path):
    texts = ["my parcel arrived smashed, I want my money back", "where is my parcel?", "reset my password"]
    env = {"PYTHONPATH": str(ROOT), "TOOLEVAL_CACHE_DIR": str(tmp_path / "cache"), "HOME": str(tmp_path)}

    def encode(these):
        done = subprocess.run([sys.executable, "-c", ENCODE, json.dumps(these)], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first = encode(texts)
    assert first["encoded"] == 3 and first["model_loaded"]
    second = encode(texts[::-1])
    assert second["encoded"] == 0 and not second["model_loaded"]
    assert second["vectors"] == first["vectors"][::-1]
    third = encode([*texts, "cancel my subscription"])  # only the new text is encoded
    assert third["encoded"] == 1 and third["vectors"][:3] == first["vectors"]
