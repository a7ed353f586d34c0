"""A file of expected arguments for a task set's labelled requests, and the version that carries them.

The file (``--expected-arguments FILE`` of ``tooleval import mcp``) is JSON Lines, one request a line::

    {"id": "sup-e-002", "expected_arguments": {"order_id": "NW-1234567", "reason": {"one_of": ["missing_item"]}}}

``expected_arguments`` is written as on a request line (schemas/expected_arguments.py: a literal means
equality; matchers equals, one_of, contains, regex, absent; options may_be_omitted, tolerance, text).

Every line is checked before anything is written, and each bad line is a Problem naming the file, the line
(and id) and the rule:

- ``json-lines``: not a JSON object; ``argument-line``: fields other than ``id`` and ``expected_arguments``,
  or either missing;
- ``request-id``: no request of the base version has that id; ``id-once``: the id is on two lines;
- ``argument-tool``: the request expects 'none' (no call to compare with), or its expected tool is not among
  the tools the arguments are checked against;
- ``argument-parameter``: a parameter that tool's schema does not have (the label checks' rule);
- ``matcher``: a matcher or option the schema of expected arguments refuses.

The new version is the base version's requests, adjudications and slices, each request named in the file
with these expected arguments (replacing any it had), the others as they were; its parent is the base.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from schemas.catalogue import NONE_LABEL, Catalogue
from schemas.expected_arguments import ExpectedArgument
from schemas.taskset import LabelledRequest
from tasks.files.input_errors import InputError, Problem
from tasks.files.json_lines import read_json_objects
from tasks.taskset.label_checks import check_labels
from tasks.taskset.load_taskset import TaskSetVersion, load_version, validation_message
from tasks.traffic.publish_version import VersionDraft, all_catalogues, manifests, publish

ExpectedByRequest = dict[str, dict[str, ExpectedArgument]]
"""Request id -> its expected arguments."""

LINE_FIELDS = {"id", "expected_arguments"}


def tool_schemas(catalogues: Iterable[Catalogue]) -> dict[str, dict]:
    """Label -> the parameter schema of the tool it names, across the catalogues (the first one offering it)."""
    schemas: dict[str, dict] = {}
    for catalogue in catalogues:
        for label in catalogue.label_names:
            name = catalogue.offered_as.get(label, label)
            schemas.setdefault(label, catalogue.tool(name).parameters)
    return schemas


def _schema_of(request: LabelledRequest, schemas: Mapping[str, dict]) -> dict | None:
    if request.tools is not None:
        return next((tool.parameters for tool in request.tools if tool.name == request.expected), None)
    return schemas.get(request.expected)


def _checked_line(record: dict, requests: Mapping[str, LabelledRequest], schemas: Mapping[str, dict],
                  version: str) -> tuple[str, str] | dict[str, ExpectedArgument]:
    """(rule, message) of the line's first fault, or its expected arguments."""
    if set(record) != LINE_FIELDS or not isinstance(record["id"], str) \
            or not isinstance(record["expected_arguments"], dict):
        return "argument-line", ('each line is {"id": REQUEST_ID, "expected_arguments": {PARAMETER: MATCHER, ...}}'
                                 + (f"; not: {', '.join(sorted(set(record) - LINE_FIELDS))}"
                                    if set(record) - LINE_FIELDS else ""))
    request = requests.get(record["id"])
    if request is None:
        return "request-id", f"no request of {version} has id {record['id']!r}"
    if request.expected == NONE_LABEL:
        return "argument-tool", "the request expects 'none': no call to compare expected arguments with"
    schema = _schema_of(request, schemas)
    if schema is None:
        return "argument-tool", f"its expected tool {request.expected} is not among the tools checked against"
    properties = schema.get("properties") or {}
    unknown = [name for name in record["expected_arguments"] if name not in properties]
    if unknown:
        return "argument-parameter", (f"{', '.join(unknown)}: not parameters of {request.expected} "
                                      f"(it has: {', '.join(properties) or 'none'})")
    arguments = {}
    for name, written in record["expected_arguments"].items():
        try:
            arguments[name] = ExpectedArgument.model_validate(written)
        except ValidationError as error:
            return "matcher", f"{name}: {validation_message(error)}"
    return arguments


def read_argument_file(path: Path, base: TaskSetVersion, catalogues: Iterable[Catalogue]) -> ExpectedByRequest:
    """The file's expected arguments by request id, checked against the base version's requests and the tools
    of ``catalogues`` (a request offering its own tools: those); InputError listing every bad line."""
    path = Path(path)
    requests = {request.id: request for request in base.requests}
    schemas = tool_schemas(catalogues)
    problems: list[Problem] = []
    found: ExpectedByRequest = {}
    first_line: dict[str, int] = {}
    for line, record in read_json_objects(path, problems, "expected-arguments file"):
        where = f"line {line}" + (f" (id {record['id']})" if isinstance(record.get("id"), str) else "")
        if isinstance(record.get("id"), str):
            if record["id"] in first_line:
                problems.append(Problem(str(path), where, "id-once",
                                        f"id {record['id']} is on line {first_line[record['id']]} already"))
                continue
            first_line[record["id"]] = line
        result = _checked_line(record, requests, schemas, f"{base.taskset} {base.version}")
        if isinstance(result, tuple):
            problems.append(Problem(str(path), where, *result))
        else:
            found[record["id"]] = result
    if problems:
        raise InputError(problems)
    if not found:
        raise InputError.one(str(path), "", "not-empty", "the expected-arguments file names no request")
    return found


def draft_with_arguments(base: TaskSetVersion, arguments: ExpectedByRequest, notes: str) -> VersionDraft:
    """The base version with these expected arguments (see the module docstring), as a draft to publish."""
    requests = tuple(request.model_copy(update={"expected_arguments": arguments[request.id]})
                     if request.id in arguments else request for request in base.requests)
    return VersionDraft(taskset_dir=base.directory, requests=requests, adjudications=base.adjudications,
                        slices=list(base.manifest.slices), parent=base.version, window=None, sampling_seed=None,
                        notes=notes)


@dataclass(frozen=True)
class ArgumentVersion:
    """A version with expected arguments, checked and ready to publish (nothing written yet)."""

    base: TaskSetVersion
    draft: VersionDraft
    n_named: int
    """Requests the file gives expected arguments."""

    @property
    def unchanged(self) -> bool:
        """The file adds nothing the base version does not hold: nothing to write."""
        return self.draft.content_hash == self.base.manifest.content_hash

    def publish(self) -> tuple[str, bool]:
        """(the version holding the arguments, whether it was written now): the base when unchanged, else
        the next free version, frozen (an identical version with the same parent is reused)."""
        if self.unchanged:
            return self.base.version, False
        manifest, reused = publish(self.draft)
        return manifest.version, not reused

    def line(self, version: str, written: bool) -> str:
        n = sum(1 for request in self.draft.requests if request.expected_arguments is not None)
        if not written:
            return (f"expected arguments: {version} holds them already ({n} of {len(self.draft.requests)} "
                    "requests carry some); nothing written")
        return (f"expected arguments: wrote {version} (parent {self.base.version}): {self.n_named} "
                f"request{'s' if self.n_named != 1 else ''} given them, {n} of {len(self.draft.requests)} carry some")


def latest_version(taskset_dir: Path, file: Path) -> TaskSetVersion:
    """The task set's newest frozen version of requests (the base a file of expected arguments goes on)."""
    found = manifests(Path(taskset_dir))
    if not found:
        raise InputError.one(str(file), "", "requests-version",
                             f"{taskset_dir} holds no frozen version of requests (v1.jsonl with its manifest) to "
                             "give expected arguments")
    return load_version(Path(taskset_dir), list(found)[-1])


def argument_version(taskset_dir: Path, file: Path, catalogues: Iterable[Catalogue], notes: str) -> ArgumentVersion:
    """The newest version of the task set with the file's expected arguments, checked against ``catalogues``
    (the file's rules, then every label check against the set's catalogues and these): InputError, with
    nothing written, on bad input."""
    catalogues = list(catalogues)
    base = latest_version(taskset_dir, file)
    arguments = read_argument_file(file, base, catalogues)
    draft = draft_with_arguments(base, arguments, notes)
    known = {catalogue.name for catalogue in catalogues}
    check_labels(draft.as_loaded(), [c for c in all_catalogues(base.directory) if c.name not in known] + catalogues)
    return ArgumentVersion(base, draft, len(arguments))


def import_arguments(file: Path, taskset_dir: Path, catalogue_names: Iterable[str] = (),
                     notes: str | None = None) -> list[str]:
    """``tooleval import arguments``: the file's expected arguments, checked against the named catalogues of
    the set (default: every one), on the set's newest version of requests, written as its next version (or
    nothing when that version holds them already); the lines to print. InputError, nothing written, on bad
    input."""
    from tasks.taskset.load_taskset import load_catalogue

    taskset_dir = Path(taskset_dir)
    if not taskset_dir.is_dir():
        raise InputError.one(str(taskset_dir), "", "taskset-exists", "no such task-set folder")
    names = list(catalogue_names) or sorted(p.stem for p in (taskset_dir / "catalogues").glob("*.json"))
    catalogues = [load_catalogue(taskset_dir, name) for name in names]
    prepared = argument_version(taskset_dir, Path(file), catalogues, notes or (
        f"Expected arguments from {Path(file).name}, checked against catalogue{'s' if len(names) > 1 else ''} "
        f"{', '.join(names) or '(per-request tools)'}."))
    version, written = prepared.publish()
    return [prepared.line(version, written), f"next: `version: {version}` in an experiment of {taskset_dir}"]
