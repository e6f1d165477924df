"""apx-doctor: every assistant tool call gets a result.

Checks recorded agent sessions for tool calls that never got a result, and
closes each with one explicit record: ``not run: the turn was interrupted``.
"""

from __future__ import annotations

# Ctrl-C while the package and typer are still being imported (the first tens
# of milliseconds): exit 130 without a traceback. The CLI installs its own
# handling later; a program that imports the library keeps its own handler.
import sys as _sys

if _sys.argv and _sys.argv[0].endswith(("apx-doctor", "__main__.py", "-m")):
    import signal as _signal

    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, lambda *_: _sys.exit(130))

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MARKER",
    "Edit",
    "Finding",
    "Format",
    "Inserted",
    "RepairResult",
    "Target",
    "UnrecognisedHistoryError",
    "__version__",
    "check_messages",
    "repair_messages",
]

if TYPE_CHECKING:  # pragma: no cover
    from .api import Format, Inserted, RepairResult, Target, UnrecognisedHistoryError, check_messages, repair_messages
    from .formats.base import DEFAULT_MARKER
    from .model import Edit, Finding

_LAZY = {
    "check_messages": "api",
    "repair_messages": "api",
    "Format": "api",
    "Inserted": "api",
    "RepairResult": "api",
    "Target": "api",
    "UnrecognisedHistoryError": "api",
    "Finding": "model",
    "Edit": "model",
    "DEFAULT_MARKER": "formats.base",
}


def __getattr__(name: str) -> Any:
    # Imported on first use, so `apx-doctor --version` and the CLI start fast.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'apx_doctor' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
