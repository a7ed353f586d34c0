"""The install stays reproducible and lean: the lock files (made by `make lock`) pin every package with hashes;
requirements.lock pins every dependency of pyproject.toml and of each extra, torch as the machine's CPU build
(the hash of the wheel file its --find-links line names) and no CUDA package; the runtime dependencies are what
the runtime code imports: test tools in the dev extra, Dask in its own."""

from __future__ import annotations

import ast
import hashlib
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

import pytest

from tests.factories import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LOCK = (ROOT / "requirements.lock").read_text()
MAKEFILE = (ROOT / "Makefile").read_text()
RUNTIME_DIRS = ("flows", "tasks", "schemas", "warehouse")
PROVIDED_BY_A_DECLARED_ONE = {
    "pydantic-core": "pydantic", "anyio": "mcp", "mcp-types": "mcp", "transformers": "sentence-transformers",
    "torch": "sentence-transformers",
    # the openai SDK's HTTP library: its Response is the type `client.post` returns as it came (openai_chat.py)
    "httpx2": "openai",
}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def req_name(requirement: str) -> str:
    return norm(re.match(r"[A-Za-z0-9._-]+", requirement).group(0))


def pins(lock: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (version, its sha256 hashes), from a lock's `name==version \\ --hash=sha256:...` entries."""
    entries = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock):
        if m := re.match(r"([A-Za-z0-9._-]+)==(\S+)", block):
            entries[norm(m.group(1))] = (m.group(2), re.findall(r"--hash=sha256:([0-9a-f]{64})", block))
    return entries


def locked() -> dict[str, list[str]]:
    """name -> its hashes, in requirements.lock."""
    return {name: hashes for name, (_, hashes) in pins(LOCK).items()}


def declared() -> dict[str, set[str]]:
    groups = {"runtime": set(map(req_name, PROJECT["dependencies"]))}
    groups |= {extra: set(map(req_name, reqs)) for extra, reqs in PROJECT["optional-dependencies"].items()}
    return groups


def test_the_lock_is_made_by_make_lock_and_pins_everything_declared_with_hashes():
    assert "make lock" in LOCK.splitlines()[1]
    entries = locked()
    for group, names in declared().items():
        assert names <= entries.keys(), f"{group}: not in requirements.lock (run make lock): {names - entries.keys()}"
    assert all(entries.values()), [name for name, hashes in entries.items() if not hashes]


def test_the_lock_leaves_cuda_packages_out():
    assert not [name for name in locked() if name.startswith(("nvidia-", "triton"))]


def test_the_lock_pins_torch_as_the_cpu_wheel_its_find_links_line_names():
    version, hashes = pins(LOCK)["torch"]
    pinned = re.search(r"^TORCH\s*:=\s*torch==(\S+)", MAKEFILE, re.M).group(1)
    assert version == pinned and version.endswith("+cpu") and len(hashes) == 1
    wheels = re.search(r"^--find-links (\S+)$", LOCK, re.M).group(1)
    wheel = ROOT / wheels / f"torch-{version}-cp311-cp311-manylinux_2_28_x86_64.whl"
    if not wheel.exists():
        pytest.skip(f"no {wheel.name} on this machine")
    digest = hashlib.sha256()
    with wheel.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    assert hashes == [digest.hexdigest()]


def test_make_install_takes_torch_from_the_lock():
    assert "$(TORCH)" not in MAKEFILE.split("\nlock:")[0]


def test_make_lock_locks_every_extra():
    extras = set(re.search(r"^LOCK_EXTRAS\s*:=(.*)$", MAKEFILE, re.M).group(1).split())
    assert extras == set(PROJECT["optional-dependencies"])


def test_test_tools_and_dask_are_not_runtime_dependencies():
    runtime = declared()["runtime"]
    assert not runtime & {"statsmodels", "pytest", "psutil", "prefect-dask", "dask", "distributed"}
    assert "prefect-dask" in declared()["dask"] and "statsmodels" in declared()["dev"]


def imported_modules() -> set[str]:
    names = set()
    for folder in RUNTIME_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names.add(node.module.split(".")[0])
    # experimental/: the checkout's own folder (not installed), imported only on `train --fine-tune`'s path
    return names - set(sys.stdlib_module_names) - set(RUNTIME_DIRS) - {"__future__", "experimental"}


def test_every_package_the_runtime_code_imports_is_declared():
    everything = set().union(*declared().values())
    distributions = packages_distributions()
    undeclared = {}
    for module in imported_modules():
        dists = {norm(d) for d in distributions.get(module, [])} or {norm(module)}
        if not dists & (everything | PROVIDED_BY_A_DECLARED_ONE.keys()):
            undeclared[module] = dists
    assert not undeclared, f"imported by runtime code but declared nowhere in pyproject.toml: {undeclared}"


def test_the_uv_that_installs_the_lock_is_pinned_with_hashes():
    version = re.search(r"^UV_VERSION\s*:=\s*(\S+)", MAKEFILE, re.M).group(1)
    uv_lock = (ROOT / "requirements-uv.lock").read_text()
    assert "make lock" in uv_lock.splitlines()[1]
    assert pins(uv_lock)["uv"][0] == version and pins(uv_lock)["uv"][1]


def test_the_phoenix_lock_is_made_by_make_lock_and_pins_phoenix_and_all_it_needs_with_hashes():
    phoenix_lock = (ROOT / "requirements-phoenix.lock").read_text()
    name, version = re.search(r"^PHOENIX\s*:=\s*(\S+)==(\S+)", MAKEFILE, re.M).groups()
    entries = pins(phoenix_lock)
    assert "make lock" in phoenix_lock.splitlines()[1]
    assert entries[norm(name)][0] == version and len(entries) > 100
    assert [n for n, (_, hashes) in entries.items() if not hashes] == []
