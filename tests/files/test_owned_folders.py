"""Scratch folders named after their owning process (tasks/files/owned_folders.py): the next run removes those
whose owner is gone — a dead process, or a process id the system gave to another process since — and never
one whose owner still runs, its own, or a folder whose name names no owner."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from tasks.files.owned_folders import owned_folder, owned_temporary_folder, process_start, remove_orphaned_folders


def _folder(root, name: str, size: int = 0):
    folder = root / name
    (folder / "files").mkdir(parents=True)
    (folder / "files" / "memory.jsonl").write_bytes(b"x" * size)
    return folder


def test_only_folders_whose_owner_is_gone_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        dead_start = process_start(dead.pid)
        dead.wait()
        alive_start = process_start(alive.pid)
        assert alive_start and dead_start  # Linux: /proc says when a process started
        mine = owned_folder("mcp")
        assert mine.parent == tmp_path and mine.name.startswith(f"tooleval-mcp-{os.getpid()}-{process_start(os.getpid())}-")
        killed = _folder(tmp_path, f"tooleval-mcp-{dead.pid}-{dead_start}-a1b2c3d4", size=180_000)
        listing = _folder(tmp_path, f"tooleval-mcp-list-{dead.pid}-{dead_start}-e5f6g7h8", size=1_000)
        running = _folder(tmp_path, f"tooleval-mcp-{alive.pid}-{alive_start}-i9j0k1l2")
        reused = _folder(tmp_path, f"tooleval-mcp-{alive.pid}-{alive_start - 1}-m3n4o5p6")  # pid given to another
        unnamed = _folder(tmp_path, "tooleval-mcp-q7r8s9t0")  # an older tooleval's: no owner in its name
        other = _folder(tmp_path, f"other-mcp-{dead.pid}-{dead_start}-u1v2w3x4")
        removed = remove_orphaned_folders()
        assert sorted(removed.folders) == sorted([killed.name, listing.name, reused.name])
        assert removed.bytes >= 181_000  # the files' bytes, and the blocks of the folders holding them
        assert not killed.exists() and not listing.exists() and not reused.exists()
        assert mine.is_dir() and running.is_dir() and unnamed.is_dir() and other.is_dir()
        assert removed.lines() == [f"removed 3 scratch folder(s) of killed runs (mcp, mcp-list; "
                                   f"{removed.bytes / 1024:.0f} KB) from {tmp_path}"]
        assert remove_orphaned_folders().folders == ()  # nothing left to remove: says nothing
        assert remove_orphaned_folders().lines() == []
    finally:
        alive.kill()
        alive.wait()


def test_a_temporary_owned_folder_is_removed_when_its_block_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with owned_temporary_folder("mcp-import") as folder:
        (folder / "state.json").write_text("{}")
        assert folder.name.startswith(f"tooleval-mcp-import-{os.getpid()}-")
        assert remove_orphaned_folders().folders == ()  # its owner (this process) is alive
    assert not folder.exists()
