"""Hypothesis strategies, one module a format: ``FORMAT`` and ``histories()``."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from types import ModuleType


@cache
def by_format() -> dict[str, ModuleType]:
    """Every strategy module here, keyed by the format it draws."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "FORMAT") and hasattr(module, "histories"):
            found[module.FORMAT] = module
    return found
