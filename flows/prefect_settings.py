"""Quiet, offline defaults for Prefect and the embedding model, each set only when the environment has none."""

from __future__ import annotations

import logging
import os

DEFAULTS = {
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_SERVER_LOGGING_LEVEL": "ERROR",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}


def apply_prefect_defaults() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)


class _NoTraceback(logging.Filter):
    """Prefect's records keep their one-line message, never a traceback (flows/crash.py writes that)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("prefect"):
            record.exc_info, record.exc_text, record.stack_info = None, None, None
            message = record.getMessage()
            if "Traceback (most recent call last)" in message:
                record.msg, record.args = message.split("Traceback (most recent call last)")[0].rstrip(), None
        return True


def quiet_prefect_tracebacks() -> None:
    """Add the filter to every handler that prints Prefect's records (once Prefect is imported)."""
    loggers = [logging.getLogger(), logging.getLogger("prefect"), logging.getLogger("prefect._internal")]
    loggers += [logger for name, logger in logging.Logger.manager.loggerDict.items()
                if name.startswith("prefect") and isinstance(logger, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, _NoTraceback) for f in handler.filters):
                handler.addFilter(_NoTraceback())
