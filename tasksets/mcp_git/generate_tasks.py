"""Write the bundled Git tasks on mcp-server-git (t1.jsonl), their shared fixture and the manifest.

docs/surface/mcp-git.md describes the fixture repository (files, setup calls, fixed commit identity) and the
two slices, history and changes. Run it again to rewrite the files; a frozen version whose files would change
is refused (write t2).

    .venv/bin/python tasksets/mcp_git/generate_tasks.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tasks.surface import load_tasks  # noqa: E402

VERSION = "t1"
SLICES = ["history", "changes"]
REPO = "repo"
WRITES = ["git_add", "git_commit", "git_reset", "git_create_branch", "git_checkout"]
"""Tools a history task must not call: a question changes nothing."""

FILES = {
    "repo/.git/HEAD": "ref: refs/heads/main\n",
    "repo/.git/config": "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n",
    "repo/README.md": "# invoicer\n\nTurns time sheets into invoices for the office.\n\n"
                      "Run `python -m invoicer` to bill last month.\n",
    "repo/invoicer/__init__.py": "\"\"\"Invoices from time sheets.\"\"\"\n",
    "repo/invoicer/rates.py": "HOURLY_RATE_EUR = 95\nVAT = 0.21\n",
    "repo/invoicer/pdf.py": "def render(invoice):\n    return f\"Invoice {invoice['number']}\"\n",
    "repo/CHANGELOG.md": "# Changelog\n\n## 0.2.0\n- PDF rendering\n\n## 0.1.0\n- first release\n",
}
HISTORY = [
    ("git_add", {"files": ["README.md", "invoicer/__init__.py"]}), ("git_commit", {"message": "Start the invoicer"}),
    ("git_add", {"files": ["invoicer/rates.py"]}), ("git_commit", {"message": "Hourly rate and VAT"}),
    ("git_create_branch", {"branch_name": "pdf-export"}),
    ("git_add", {"files": ["invoicer/pdf.py", "CHANGELOG.md"]}), ("git_commit", {"message": "Render invoices as PDF"}),
]
UNTRACKED = {"TODO.txt": "- send the November invoices\n- ask Globex for a purchase order number\n",
             "NOTES.md": "# Notes\n\nVAT moves to 0.22 in January.\n"}


def setup(*extra: tuple[str, dict]) -> list[dict]:
    return [{"tool": tool, "args": {"repo_path": REPO, **args}} for tool, args in [*HISTORY, *extra]]


def shared() -> dict:
    return {"files": FILES, "setup": setup()}


def task(id_: str, request: str, slice_: str, intent: str, assertion: dict, *, files: dict | None = None,
         staged: str | None = None, max_calls: int = 6) -> dict:
    fixtures: dict = {"include": ["repo"]}
    if files:
        fixtures["files"] = {f"{REPO}/{name}": UNTRACKED[name] for name in files}
    if staged:
        fixtures["setup"] = setup(("git_add", {"files": [staged]}))
    if slice_ == "history":
        assertion = {**assertion, "not_called": WRITES}
    return {"id": id_, "request": request, "slice": slice_, "intent": intent, "fixtures": fixtures,
            "assert": assertion, "budget": {"max_calls": max_calls}}


def probe(tool: str, matcher: dict, **args) -> dict:
    return {"probe": {"tool": tool, "args": {"repo_path": REPO, **args}}, **matcher}


QUESTIONS = [
    ("log-last", "git_log", {"reply": {"contains": "Render invoices as PDF"}},
     ["What was the most recent commit message in the invoicer repository?",
      "Show me the commit log: what did the last commit do?",
      "Which change was committed last, according to the log?"]),
    ("log-first", "git_log", {"reply": {"contains": "Start the invoicer"}},
     ["What was the very first commit in the history?", "Look at the commit logs: how did the project start?"]),
    ("log-author", "git_log", {"reply": {"contains": "Office Bot"}},
     ["Who authored the commits in this repository's log?", "Which author shows up in the commit logs?"]),
    ("branches", "git_branch", {"reply": {"contains": "pdf-export"}},
     ["Which branches does the repository have?", "List the local Git branches."]),
    ("status-clean", "git_status", {"reply": {"regex": "nothing to commit|working tree clean"}},
     ["Is the working tree clean, or is there anything to commit?", "What is the status of the working tree?"]),
]
"""History questions on the shared repository alone: (id prefix, intent, assertion, requests)."""
LATER_QUESTIONS = [
    ("show-head", "git_show", {"reply": {"contains": "invoicer/pdf.py"}},
     ["Show the contents of the latest commit (HEAD).", "What did commit HEAD change? Show it."]),
    ("diff-branch", "git_diff", {"reply": {"contains": "CHANGELOG.md"}},
     ["What are the differences between the branches main and pdf-export?",
      "Diff main against the pdf-export branch."]),
]


def questions(table: list) -> list[dict]:
    return [task(f"{prefix}-{n}", request, "history", intent, assertion)
            for prefix, intent, assertion, requests in table for n, request in enumerate(requests)]


def tasks() -> list[dict]:
    out = questions(QUESTIONS)
    for n, (request, name) in enumerate([("Are there untracked files in the working tree? Which?", "TODO.txt"),
                                         ("What does the working tree status say about new files?", "NOTES.md")]):
        out.append(task(f"status-untracked-{n}", request, "history", "git_status", {"reply": {"contains": name}},
                        files=[name]))
    for n, (request, name) in enumerate([("What changes are staged for commit right now?", "TODO.txt"),
                                         ("Show the staged changes that the next commit would record.", "NOTES.md")]):
        out.append(task(f"staged-{n}", request, "history", "git_diff_staged", {"reply": {"contains": name}},
                        files=[name], staged=name))
    out += questions(LATER_QUESTIONS)
    for n, (request, name) in enumerate([("Stage TODO.txt for the next commit.", "TODO.txt"),
                                         ("Add NOTES.md to the staging area.", "NOTES.md"),
                                         ("Please stage the new file TODO.txt so it goes into the next commit.",
                                          "TODO.txt")]):
        out.append(task(f"stage-{n}", request, "changes", "git_add",
                        {"calls": [{"tool": "git_add", "args": {"files": {"contains": name}}}],
                         "probes": [probe("git_diff_staged", {"contains": f"b/{name}"})],
                         "not_called": ["git_commit", "git_reset"]}, files=[name]))
    for n, (request, name) in enumerate([("Commit the staged changes with the message: Add the TODO list",
                                          "TODO.txt"),
                                         ("Record the staged NOTES.md in a commit; message: Add the notes",
                                          "NOTES.md")]):
        message = request.rsplit(": ", 1)[1]
        out.append(task(f"commit-{n}", request, "changes", "git_commit",
                        {"probes": [probe("git_log", {"contains": message}, max_count=1),
                                    probe("git_status", {"regex": "nothing to commit|working tree clean"})],
                         "not_called": ["git_reset"]}, files=[name], staged=name))
    for n, (request, name) in enumerate([("Stage TODO.txt and commit it with the message: Add the TODO list",
                                          "TODO.txt"),
                                         ("Add NOTES.md and record it in a commit; message: Add the notes",
                                          "NOTES.md")]):
        message = request.rsplit(": ", 1)[1]
        out.append(task(f"add-commit-{n}", request, "changes", "git_add",
                        {"probes": [probe("git_log", {"contains": message}, max_count=1)],
                         "not_called": ["git_reset"]}, files=[name]))
    for n, (request, branch) in enumerate([("Create a new branch called vat-2027.", "vat-2027"),
                                           ("Make a branch named hotfix for the rounding bug.", "hotfix")]):
        out.append(task(f"branch-{n}", request, "changes", "git_create_branch",
                        {"probes": [probe("git_branch", {"contains": branch}, branch_type="local")],
                         "not_called": ["git_reset", "git_commit"]}))
    return out


def build() -> dict[str, str]:
    """The files of the version, by path relative to this folder: the same text on every run."""
    return {
        "fixtures/repo.json": json.dumps(shared(), indent=1, ensure_ascii=False) + "\n",
        f"{VERSION}.jsonl": "".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) + "\n" for t in tasks()),
    }


def main() -> int:
    files = build()
    manifest = load_tasks.write_version(HERE, VERSION, files, ["repo"], SLICES, notes=(
        f"generate_tasks.py: {len(files[f'{VERSION}.jsonl'].splitlines())} tasks on mcp-server-git 2026.10.19, "
        "each in a fresh repository built from the shared fixture repo"))
    print(f"{VERSION}: {manifest.n_tasks} tasks {manifest.counts_by_slice}, hash {manifest.content_hash[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
