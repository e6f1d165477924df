"""Project configuration: ``[tool.apx-doctor]`` in the nearest pyproject.toml.

The file is found by walking up from the working folder (or given with
``--config``; ``--isolated`` ignores it). Unknown keys are a usage error naming
the key, so a typo never silently turns a rule back on. Command-line flags are
applied on top by the CLI: they win.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import UsageError
from .rules import RULES

SECTION = ("tool", "apx-doctor")


@dataclass(frozen=True, slots=True)
class Config:
    # Where the settings came from (None: built-in defaults); per-file-ignores
    # globs are relative to its folder.
    source: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    marker: str | None = None
    drop_orphans: bool | None = None
    read_only_tools: tuple[str, ...] = ()
    side_effect_tools: tuple[str, ...] = ()
    # Glob patterns of files folder runs leave out; None: the defaults
    # (discover.default_exclude). extend-exclude adds to whichever applies.
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    # Apply the exclusions to files named on the command line too (pre-commit).
    force_exclude: bool | None = None

    @property
    def root(self) -> Path:
        return self.source.parent if self.source is not None else Path.cwd()

    @property
    def exclusions(self) -> tuple[str, ...]:
        """Every exclude pattern in force."""
        if self.exclude is None:
            from .discover import default_exclude

            return default_exclude() + self.extend_exclude
        return self.exclude + self.extend_exclude

    def excluder(self):
        from .discover import Excluder

        # The patterns are gathered only once a file is matched against them.
        return Excluder(lambda: self.exclusions, self.root.absolute())

    def enabled(self, code: str, path: str | None = None) -> bool:
        """Whether findings of ``code`` on ``path`` are reported."""
        if self.select is not None and not _matches_any(code, self.select):
            return False
        if _matches_any(code, self.ignore):
            return False
        if path is not None:
            for pattern, codes in self.per_file_ignores:
                if _glob_matches(self.root, path, pattern) and _matches_any(code, codes):
                    return False
        return True


def _matches_any(code: str, prefixes: tuple[str, ...]) -> bool:
    # Prefixes as in ruff: "APX" selects all, "APX00" the pairing rules.
    return any(code.startswith(p) for p in prefixes)


def _glob_matches(root: Path, path: str, pattern: str) -> bool:
    candidate = Path(path)
    try:
        relative = candidate.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        relative = candidate.as_posix()
    if PurePosixPath(relative).match(pattern) or fnmatch.fnmatchcase(relative, pattern):
        return True
    # A pattern without a folder matches the file name anywhere, as in .gitignore.
    return "/" not in pattern and fnmatch.fnmatchcase(candidate.name, pattern)


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.apx-doctor] table, as ruff looks for [tool.ruff]."""
    found = _find(start)
    return None if found is None else found[0]


def _find(start: Path) -> tuple[Path, dict[str, Any] | None] | None:
    """The nearest pyproject.toml with our table, and its parsed data when ``load`` can take it as is."""
    for folder in (start.resolve(), *start.resolve().parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            has, data = _section(candidate)
            if has:
                return candidate, data
    return None


def _section(path: Path) -> tuple[bool, dict[str, Any] | None]:
    """Whether ``path`` has a [tool.apx-doctor] table; the parsed file, if it decoded cleanly."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False, None
    if "apx-doctor" not in text and "\\u" not in text and "\\U" not in text:
        # No key can spell apx-doctor: TOML keys are written out, and only a
        # \u or \U escape in a quoted key makes letters or "-". Nothing to parse.
        return False, None
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        # A broken file that mentions us is reported by ``load``, not skipped.
        return "apx-doctor" in text, None
    tool = data.get("tool")
    # Replaced bytes would make ``load``'s strict reading fail: it reads again.
    return isinstance(tool, dict) and "apx-doctor" in tool, None if "\ufffd" in text else data


def load(path: str | None = None, *, isolated: bool = False, cwd: Path | None = None) -> Config:
    """The configuration for this run (defaults when there is none)."""
    if isolated:
        return Config()
    data = None
    if path is not None:
        source = Path(path)
        if not source.is_file():
            raise UsageError(f"--config {path}: no such file")
    else:
        found = _find(cwd or Path.cwd())
        if found is None:
            return Config()
        source, data = found
    if data is None:
        import tomllib

        try:
            data = tomllib.loads(source.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"{source}: cannot read the configuration: {exc}") from None
    table: Any = data
    for key in SECTION:
        table = table.get(key, {}) if isinstance(table, dict) else {}
    if not isinstance(table, dict):
        raise UsageError(f"{source}: [tool.apx-doctor] must be a table")
    return parse(table, source)


_KEYS = {
    "exclude",
    "extend-exclude",
    "force-exclude",
    "select",
    "ignore",
    "per-file-ignores",
    "marker",
    "drop-orphans",
    "read-only-tools",
    "side-effect-tools",
}


def parse(table: dict[str, Any], source: Path | None = None) -> Config:
    where = f"{source}: [tool.apx-doctor]" if source else "[tool.apx-doctor]"
    for key in table:
        if key not in _KEYS:
            raise UsageError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
    return Config(
        source=source,
        select=_codes(table, "select", where) if "select" in table else None,
        ignore=_codes(table, "ignore", where),
        per_file_ignores=_per_file(table.get("per-file-ignores", {}), where),
        marker=_string(table, "marker", where),
        drop_orphans=_bool(table, "drop-orphans", where),
        read_only_tools=_strings(table, "read-only-tools", where),
        side_effect_tools=_strings(table, "side-effect-tools", where),
        exclude=_patterns(table, "exclude", where) if "exclude" in table else None,
        extend_exclude=_patterns(table, "extend-exclude", where),
        force_exclude=_bool(table, "force-exclude", where),
    )


def _patterns(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    patterns = _strings(table, key, where)
    if any(not p.strip() for p in patterns):
        raise UsageError(f"{where}: {key} holds an empty pattern")
    return patterns


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def _codes(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    return check_codes(_strings(table, key, where), f"{where}: {key}")


def check_codes(codes: tuple[str, ...] | list[str], where: str) -> tuple[str, ...]:
    """Codes or code prefixes, upper-cased; one that selects no rule is an error."""
    out = tuple(c.strip().upper() for c in codes if c.strip())
    for code in out:
        if not any(known.startswith(code) for known in RULES):
            raise UsageError(f"{where}: {code!r} matches no rule code")
    return out


def _per_file(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise UsageError(f"{where}: per-file-ignores must be a table of glob = [codes]")
    out = []
    for pattern, codes in value.items():
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise UsageError(f"{where}: per-file-ignores.{pattern!r} must be a list of codes")
        out.append((pattern, check_codes(codes, f"{where}: per-file-ignores")))
    return tuple(out)


def _string(table: dict[str, Any], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise UsageError(f"{where}: {key} must be a non-empty string")
    return value


def _bool(table: dict[str, Any], key: str, where: str) -> bool | None:
    value = table.get(key)
    if value is not None and not isinstance(value, bool):
        raise UsageError(f"{where}: {key} must be true or false")
    return value


def merged(config: Config, **flags: Any) -> Config:
    """``config`` with every flag that was given (not None) put over it."""
    return replace(config, **{k: v for k, v in flags.items() if v is not None})


__all__ = ["Config", "check_codes", "find_pyproject", "load", "merged", "parse"]
