"""The format registry: every module in this package that defines ``ADAPTER``."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from functools import cache
from typing import Any

from .base import DEFAULT_MARKER, Detection, FormatAdapter

__all__ = [
    "DEFAULT_MARKER",
    "FormatAdapter",
    "adapter_class",
    "adapters",
    "contradicted_by",
    "detect_format",
    "format_names",
]


class UnknownFormatError(ValueError):
    pass


class AmbiguousFormatError(ValueError):
    pass


@cache
def adapters() -> tuple[type[FormatAdapter], ...]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        adapter = getattr(module, "ADAPTER", None)
        if adapter is not None:
            found.append(adapter)
    found.sort(key=lambda a: (a.priority, a.name))
    return tuple(found)


def format_names() -> list[str]:
    return [a.name for a in adapters()]


def adapter_class(name: str) -> type[FormatAdapter]:
    for adapter in adapters():
        if adapter.name == name:
            return adapter
    raise UnknownFormatError(f"unknown format {name!r} (choose from: {', '.join(format_names())})")


def _detect(adapter: type[FormatAdapter], samples: Sequence[Any]) -> int:
    # Lines of another format, or damaged ones, may hold any type anywhere: a
    # detector that trips on one has not recognised the file, nothing more.
    try:
        return adapter.detect(samples)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError):
        return Detection.NO


def detect_format(samples: Sequence[Any], candidates: Sequence[type[FormatAdapter]] | None = None) -> type[FormatAdapter] | None:
    """The format of a file from its first parsed lines, among ``candidates`` (default: all).

    Returns None when there is nothing to tell by (no JSON object at all).
    Raises AmbiguousFormatError or UnknownFormatError when it cannot tell.
    """
    if not any(isinstance(s, dict) for s in samples):
        return None
    levels = [(a, _detect(a, samples)) for a in (adapters() if candidates is None else candidates)]
    certain = [a for a, level in levels if level >= Detection.CERTAIN]
    if len(certain) == 1:
        return certain[0]
    if len(certain) > 1:
        names = ", ".join(a.name for a in certain)
        raise AmbiguousFormatError(f"the lines fit several formats ({names})")
    compatible = [a for a, level in levels if level >= Detection.COMPATIBLE]
    if compatible:
        return compatible[0]
    raise UnknownFormatError("the lines fit no known format")


def contradicted_by(chosen: type[FormatAdapter], samples: Sequence[Any]) -> type[FormatAdapter] | None:
    """The format the sample lines are surely in, where ``chosen`` (named by the user) finds none of its own.

    A format told to read another's lines sees no entry of its own in them,
    and would pass the file as clean: ``--input-format claude-code`` on a
    Codex rollout, chat on Anthropic messages. None where ``chosen`` fits, or
    where no other format is sure either (then the user knows best).
    """
    if _detect(chosen, samples) != Detection.NO:
        return None
    for adapter in adapters():
        if adapter is not chosen and _detect(adapter, samples) >= Detection.CERTAIN:
            return adapter
    return None
