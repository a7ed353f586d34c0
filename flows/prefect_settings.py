"""Quiet, offline defaults for Prefect and the embedding model, each set only when the environment has none."""

from __future__ import annotations

import logging
import os

DEFAULTS = {
    "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_SERVER_LOGGING_LEVEL": "ERROR", "DO_NOT_TRACK": "1",
    "PREFECT_LOGGING_TO_API_ENABLED": "false", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_VERBOSITY": "error",
}


def apply_prefect_defaults() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)


def no_traceback(record: logging.LogRecord) -> bool:
    """A logging filter: Prefect's records keep their one-line message, never a traceback (flows/crash.py
    writes that); the engine's record of the exception a flow raised is not printed (the command's line says it)."""
    if record.name.startswith("prefect"):
        if str(record.msg).startswith("Encountered exception during execution"):
            return False
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.msg, record.args = record.getMessage().split("Traceback (most recent call last)")[0].rstrip(), None
    return True


def quiet_prefect_tracebacks() -> None:
    """Add the filter to every handler that prints Prefect's records (once Prefect is imported)."""
    for logger in [logging.getLogger()] + [logger for name, logger in logging.Logger.manager.loggerDict.items()
                                           if name.startswith("prefect") and isinstance(logger, logging.Logger)]:
        for handler in logger.handlers:
            handler.addFilter(no_traceback)  # once: a filter already there is not added again
