"""YAML as tooleval reads it: safe, and a key given twice in one mapping is an error (PyYAML would keep
the last value silently, so a gate or an arm could change without anyone seeing it). Parsed by libyaml where
PyYAML was built with it (its C parser: the same values as the pure-Python one, in a fraction of the time)."""

from __future__ import annotations

from typing import Any

import yaml

from tasks.files.input_errors import InputError


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key '{key}' is given twice (lines {seen[key]} and {line}); keep one",
                key_node.start_mark)
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load_yaml(text: str | bytes, file: str) -> Any:
    """Parse YAML; a syntax error or a repeated key is an InputError naming the file, the line and the rule."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.constructor.ConstructorError as error:
        line = f"line {error.problem_mark.line + 1}" if error.problem_mark else ""
        raise InputError.one(file, line, "yaml-duplicate-key", error.problem or str(error)) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise InputError.one(file, f"line {mark.line + 1}" if mark else "", "yaml",
                             str(getattr(error, "problem", None) or error)) from None
