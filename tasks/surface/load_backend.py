"""Import a task set's backend: the ``backend/`` package of the task-set folder, loaded under a private name.
Its source is hashed into the surface's hash, so a change of backend is a change of surface."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
from pathlib import Path

from tasks.files.content_hash import parts_sha256, sha256_hex
from tasks.files.input_errors import InputError
from tasks.surface.toolkit import Toolkit

BACKEND_PACKAGE = "backend"
_LOCK = threading.Lock()


def backend_dir(taskset_dir: Path) -> Path:
    return Path(taskset_dir) / BACKEND_PACKAGE


def backend_hash(taskset_dir: Path) -> str:
    """sha256 over every .py file of the backend package (paths and bytes, sorted)."""
    root = backend_dir(taskset_dir)
    return parts_sha256((str(path.relative_to(root)), path.read_bytes())
                        for path in sorted(root.rglob("*.py")) if "__pycache__" not in path.parts)


def _package_name(taskset_dir: Path, source_hash: str) -> str:
    where = sha256_hex(str(Path(taskset_dir).resolve()))[:10]
    return f"_tooleval_backend_{where}_{source_hash[:10]}"


def _import_package(taskset_dir: Path, name: str) -> None:
    root = backend_dir(taskset_dir)
    init = root / "__init__.py"
    if init.is_file():
        spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(root)])
    else:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(root)]
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    if spec.loader is not None:
        spec.loader.exec_module(module)


def load_toolkit(taskset_dir: Path, reference: str, file: str) -> type[Toolkit]:
    """The Toolkit class named 'module:Class' in the task set's backend package; InputError naming
    ``file`` (the surface file) and the rule when it cannot be imported or is not a Toolkit."""
    taskset_dir = Path(taskset_dir).resolve()
    if ":" not in reference:
        raise InputError.one(file, "toolkit", "toolkit-reference", f"'{reference}' is not 'module:Class'")
    module_name, class_name = reference.split(":", 1)
    root = backend_dir(taskset_dir)
    if not (root / f"{module_name}.py").is_file():
        raise InputError.one(file, "toolkit", "toolkit-exists", f"{root / (module_name + '.py')} not found")
    package = _package_name(taskset_dir, backend_hash(taskset_dir))
    try:
        with _LOCK:
            if package not in sys.modules:
                _import_package(taskset_dir, package)
            module = importlib.import_module(f"{package}.{module_name}")
    except Exception as error:  # a broken backend is bad input, reported before any call
        sys.modules.pop(package, None)
        raise InputError.one(str(root / f"{module_name}.py"), "", "toolkit-import",
                             f"{type(error).__name__}: {error}") from None
    toolkit = getattr(module, class_name, None)
    if not (isinstance(toolkit, type) and issubclass(toolkit, Toolkit)):
        raise InputError.one(file, "toolkit", "toolkit-class",
                             f"{module_name}.py has no Toolkit subclass named {class_name}")
    if not isinstance(getattr(toolkit, "state_model", None), type):
        raise InputError.one(file, "toolkit", "toolkit-state", f"{class_name} declares no state_model")
    try:
        tools = toolkit.tools()
    except Exception as error:
        raise InputError.one(str(root / f"{module_name}.py"), class_name, "toolkit-tools",
                             f"{type(error).__name__}: {error}") from None
    if not tools:
        raise InputError.one(file, "toolkit", "toolkit-tools", f"{class_name} has no @tool methods")
    return toolkit
