"""The install stays reproducible and lean: requirements.lock (made by `make lock`) pins every dependency of
pyproject.toml and of each extra with hashes, keeps torch and CUDA packages out (torch comes from the machine's
CPU build), and the runtime dependencies are what the runtime code imports: test tools in the dev extra, Dask in
its own."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from tests.factories import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
LOCK = (ROOT / "requirements.lock").read_text()
RUNTIME_DIRS = ("flows", "tasks", "schemas", "warehouse")
PROVIDED_BY_A_DECLARED_ONE = {
    "pydantic-core": "pydantic", "anyio": "mcp", "mcp-types": "mcp", "transformers": "sentence-transformers",
    "torch": "the machine's CPU build (Makefile)",
    # the openai SDK's HTTP library: its Response is the type `client.post` returns as it came (openai_chat.py)
    "httpx2": "openai",
}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def req_name(requirement: str) -> str:
    return norm(re.match(r"[A-Za-z0-9._-]+", requirement).group(0))


def locked() -> dict[str, list[str]]:
    """name -> its hashes, from the lock's `name==version \\ --hash=...` entries."""
    entries = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", LOCK):
        if m := re.match(r"([A-Za-z0-9._-]+)==\S+", block):
            entries[norm(m.group(1))] = re.findall(r"--hash=sha256:[0-9a-f]{64}", block)
    return entries


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


def test_the_lock_leaves_torch_and_cuda_packages_out():
    assert not [name for name in locked() if name == "torch" or name.startswith(("nvidia-", "triton"))]


def test_make_lock_locks_every_extra():
    makefile = (ROOT / "Makefile").read_text()
    extras = set(re.search(r"^LOCK_EXTRAS\s*:=(.*)$", makefile, re.M).group(1).split())
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
    return names - set(sys.stdlib_module_names) - set(RUNTIME_DIRS) - {"__future__"}


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
    version = re.search(r"^UV_VERSION\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    uv_lock = (ROOT / "requirements-uv.lock").read_text()
    assert f"uv=={version} \\" in uv_lock and "--hash=sha256:" in uv_lock
