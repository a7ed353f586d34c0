"""Writing files whole: atomic replace, create-only, no temporary left behind; one JSON Lines serialisation
and one content hash for task-set versions."""

from __future__ import annotations

import threading

import pytest

from schemas.taskset import LabelledRequest, Message
from tasks.files.atomic_write import TEMPORARY_PREFIX, write_atomic, write_exclusive
from tasks.files.content_hash import file_sha256, parts_sha256, sha256_hex
from tasks.files.json_lines import jsonl_bytes, write_jsonl
from tasks.taskset.load_taskset import content_hash, read_jsonl_models, version_hash


def test_write_atomic_creates_folders_and_replaces_whole(tmp_path):
    path = tmp_path / "a" / "b" / "report.md"
    assert write_atomic(path, "first") == path and path.read_text() == "first"
    write_atomic(path, b"second")
    write_atomic(path, lambda temporary: temporary.write_text("third"))
    assert path.read_text() == "third"
    assert [p.name for p in path.parent.iterdir()] == ["report.md"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "verdict.json"
    write_atomic(path, "kept")

    def crash(temporary):
        temporary.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_atomic(path, crash)
    assert path.read_text() == "kept"
    assert not list(tmp_path.glob(f"{TEMPORARY_PREFIX}*"))


def test_a_write_is_flushed_to_disk_before_it_takes_the_name_unless_not_durable(tmp_path, monkeypatch):
    from tasks.files import atomic_write

    flushed = []
    monkeypatch.setattr(atomic_write.os, "fsync", lambda fd: flushed.append(fd))
    write_atomic(tmp_path / "rows.parquet", b"rows")
    write_exclusive(tmp_path / "owner.json", "{}")
    assert len(flushed) == 2
    write_atomic(tmp_path / "report.json", "{}", durable=False)
    assert len(flushed) == 2 and (tmp_path / "report.json").read_text() == "{}"


def test_write_exclusive_never_replaces(tmp_path):
    path = tmp_path / "v2.jsonl"
    assert write_exclusive(path, "mine") is True
    assert write_exclusive(path, "theirs") is False
    assert path.read_text() == "mine" and [p.name for p in tmp_path.iterdir()] == ["v2.jsonl"]


def test_of_writers_racing_for_one_name_exactly_one_wins(tmp_path):
    path, start = tmp_path / "v3.jsonl", threading.Barrier(8, timeout=30)
    won: list[bool] = []

    def claim(i: int) -> None:
        start.wait()
        won.append(write_exclusive(path, f"writer {i}"))

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    [t.start() for t in threads]
    [t.join(timeout=60) for t in threads]
    assert sorted(won) == [False] * 7 + [True]
    assert path.read_text().startswith("writer ") and len(list(tmp_path.iterdir())) == 1


def test_json_lines_round_trip_and_the_version_hash_is_over_those_bytes(tmp_path):
    requests = [LabelledRequest(id="r1", messages=(Message(role="user", content="où est mon colis ?"),),
                                expected="track_shipment", slice="existing")]
    data = jsonl_bytes(requests)
    assert data.decode() == ('{"id": "r1", "messages": [{"role": "user", "content": "où est mon colis ?"}], '
                             '"expected": "track_shipment", "slice": "existing"}\n')  # defaults left out, UTF-8 kept
    write_jsonl(tmp_path / "v1.jsonl", requests)
    assert read_jsonl_models(tmp_path / "v1.jsonl", LabelledRequest) == requests
    assert content_hash(tmp_path, "v1") == version_hash(data, b"") == parts_sha256([("requests", data),
                                                                                    ("adjudications", b"")])
    assert file_sha256(tmp_path / "v1.jsonl") == sha256_hex(data)
