"""Where a run sends its traces (``TraceTarget``, tasks/core_records.py), read from ``--trace otlp://HOST:PORT``
or an experiment's ``tracing:`` block.

Plain Python (no OpenTelemetry import): a run that does not trace pays nothing for it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from tasks.core_records import DEFAULT_PROJECT, TraceTarget
from tasks.files.input_errors import InputError


def parse_trace_target(text: str, project: str | None = None, where: str = "--trace") -> TraceTarget:
    """``otlp://host:port`` (or ``http://host:port``: the same OTLP/HTTP collector). No path, no credentials:
    a URL carrying a user or password is refused, so no secret can reach a span or a log."""
    parts = urlsplit(text.strip())
    if parts.username or parts.password:  # never echo a credential, not even in the error
        text = parts._replace(netloc=f"***@{parts.hostname or ''}" + (f":{parts.port}" if _port(parts) else "")).geturl()
    problem = None
    if parts.scheme not in ("otlp", "http"):
        problem = f"'{text}': expected otlp://HOST:PORT (OTLP over HTTP, e.g. Phoenix on otlp://127.0.0.1:6006)"
    elif parts.username or parts.password:
        problem = f"'{text}': credentials in the URL are refused (tracing never carries a key)"
    elif not parts.hostname:
        problem = f"'{text}': no host; expected otlp://HOST:PORT"
    elif parts.path not in ("", "/") or parts.query:
        problem = f"'{text}': give HOST:PORT only (spans go to /v1/traces on it)"
    else:
        port = _port(parts)
        if port is None:
            problem = f"'{text}': no valid port; expected otlp://HOST:PORT"
    if problem:
        raise InputError.one(where, "", "trace-target", problem)
    return TraceTarget(host=parts.hostname, port=port, project=project or DEFAULT_PROJECT)


TRACE_OFF = "off"
"""``--trace off``: no tracing, whatever the experiment's ``tracing:`` block says."""


def resolve_trace_target(cli_value: str | None, experiment) -> TraceTarget | None:
    """``--trace`` when given (``off`` turns tracing off), else the experiment's ``tracing:`` block, else
    None (no tracing)."""
    spec = experiment.spec.tracing
    project = spec.project if spec is not None else None
    if cli_value and cli_value.strip().lower() == TRACE_OFF:
        return None
    if cli_value:
        return parse_trace_target(cli_value, project, "--trace")
    if spec is not None:
        return parse_trace_target(spec.endpoint, project, f"{experiment.path}:tracing.endpoint")
    return None


def _port(parts) -> int | None:
    try:
        return parts.port
    except ValueError:
        return None
