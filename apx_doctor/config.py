"""Project configuration: ``[tool.apx-doctor]`` in the nearest pyproject.toml, or an apx-doctor.toml.

As ruff finds its own: each file is checked with the configuration nearest to
it, walking up from its folder (``Finder``); in one folder an ``apx-doctor.toml``
(keys at the top level) wins over a ``pyproject.toml``, and a pyproject.toml
without the table is passed over. A file with no configuration above it gets
the one found from the working folder. ``--config`` names one file for every
input and ``--isolated`` ignores them all. Unknown keys are a usage error naming
the key, so a typo never silently turns a rule back on.

The command line goes on top: ``Flags`` is what it said, and ``build`` puts it
over a configuration into the one ``Options`` value a run reads (flags first,
then the configuration, then the defaults).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .errors import UsageError
from .rules import RULES

if TYPE_CHECKING:
    from .discover import Excluder

SECTION = ("tool", "apx-doctor")


@dataclass(frozen=True, slots=True)
class Config:
    # Where the settings came from (None: built-in defaults); per-file-ignores
    # globs are relative to its folder.
    source: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    # Codes reported even where ``ignore`` names them, and codes never reported (as ruff's).
    extend_select: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
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
    output_format: str | None = None
    # The provider the histories are sent to (profiles.TARGETS, or "auto"), the
    # lowest severity that fails a run, and whether fix drops empty text blocks.
    target: str | None = None
    fail_on: str | None = None
    drop_empty_blocks: bool | None = None

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

    def excluder(self) -> Excluder:
        from .discover import Excluder

        # The patterns are gathered only once a file is matched against them.
        return Excluder(lambda: self.exclusions, self.root.absolute())

    def enabled(self, code: str, path: str | None = None) -> bool:
        """Whether findings of ``code`` on ``path`` are reported."""
        extended = _matches_any(code, self.extend_select)
        if self.select is not None and not _matches_any(code, self.select) and not extended:
            return False
        if _matches_any(code, self.extend_ignore):
            return False
        if _matches_any(code, self.ignore) and not extended:
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
    if pattern.startswith("/"):
        # A command-line pattern, made absolute from the working folder.
        absolute = candidate.resolve().as_posix()
        return PurePosixPath(absolute).match(pattern) or fnmatch.fnmatchcase(absolute, pattern)
    try:
        relative = candidate.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        relative = candidate.as_posix()
    if PurePosixPath(relative).match(pattern) or fnmatch.fnmatchcase(relative, pattern):
        return True
    # A pattern without a folder matches the file name anywhere, as in .gitignore.
    return "/" not in pattern and fnmatch.fnmatchcase(candidate.name, pattern)


OWN_FILE = "apx-doctor.toml"


def find_pyproject(start: Path) -> Path | None:
    """The nearest apx-doctor.toml, or pyproject.toml with a [tool.apx-doctor] table, as ruff looks for [tool.ruff]."""
    found = _find(start)
    return None if found is None else found[0]


def _find(start: Path) -> tuple[Path, dict[str, Any] | None] | None:
    """The nearest configuration file, and its parsed data when ``load`` can take it as is."""
    for folder in (start.resolve(), *start.resolve().parents):
        found = _in_folder(folder)
        if found is not None:
            return found
    return None


def _in_folder(folder: Path) -> tuple[Path, dict[str, Any] | None] | None:
    """The configuration file of ``folder`` itself: its apx-doctor.toml, else a pyproject.toml with our table."""
    own = folder / OWN_FILE
    if own.is_file():
        return own, None
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
    except RecursionError:
        # Nested too deeply to read: ``load`` reads it again and says so.
        return "apx-doctor" in text, None
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
        except RecursionError:
            raise UsageError(f"{source}: cannot read the configuration: a value is nested too deeply") from None
    return _from_data(data, source)


def _from_data(data: dict[str, Any], source: Path) -> Config:
    tool = data.get("tool")
    if source.name != "pyproject.toml" and not (isinstance(tool, dict) and "apx-doctor" in tool):
        # apx-doctor.toml (or another file given with --config): the keys at the top level.
        return parse(data, source, top_level=True)
    table: Any = data
    for key in SECTION:
        table = table.get(key, {}) if isinstance(table, dict) else {}
    if not isinstance(table, dict):
        raise UsageError(f"{source}: [tool.apx-doctor] must be a table")
    return parse(table, source)


_KEYS = {
    "extend-select",
    "extend-ignore",
    "output-format",
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
    "target",
    "fail-on",
    "drop-empty-blocks",
}

FAIL_ON = ("error", "warning", "info")


OUTPUT_FORMATS = ("text", "concise", "json", "json-lines", "github", "sarif")


def parse(table: dict[str, Any], source: Path | None = None, *, top_level: bool = False) -> Config:
    where = f"{source}" if top_level and source else f"{source}: [tool.apx-doctor]" if source else "[tool.apx-doctor]"
    for key in table:
        if key not in _KEYS:
            raise UsageError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
    return Config(
        source=source,
        select=_codes(table, "select", where) if "select" in table else None,
        ignore=_codes(table, "ignore", where),
        extend_select=_codes(table, "extend-select", where),
        extend_ignore=_codes(table, "extend-ignore", where),
        per_file_ignores=_per_file(table.get("per-file-ignores", {}), where),
        marker=_string(table, "marker", where),
        drop_orphans=_bool(table, "drop-orphans", where),
        read_only_tools=_strings(table, "read-only-tools", where),
        side_effect_tools=_strings(table, "side-effect-tools", where),
        exclude=_patterns(table, "exclude", where) if "exclude" in table else None,
        extend_exclude=_patterns(table, "extend-exclude", where),
        force_exclude=_bool(table, "force-exclude", where),
        output_format=_choice(table, "output-format", OUTPUT_FORMATS, where),
        target=_choice(table, "target", _target_choices(), where),
        fail_on=_choice(table, "fail-on", FAIL_ON, where),
        drop_empty_blocks=_bool(table, "drop-empty-blocks", where),
    )


def _target_choices() -> tuple[str, ...]:
    from .profiles import AUTO, TARGETS

    return (AUTO, *TARGETS)


def _choice(table: dict[str, Any], key: str, choices: tuple[str, ...], where: str) -> str | None:
    value = table.get(key)
    if value is not None and value not in choices:
        raise UsageError(f"{where}: {key} must be one of {', '.join(choices)}")
    return value


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


class Finder:
    """The configuration of each file: the nearest one above it, as ruff finds its own.

    Each folder is looked at once and each file parsed once, however many
    inputs share them. A file with no configuration above it gets ``base``, the
    one found from the working folder; with ``--config`` or ``--isolated``
    every file gets ``base``.
    """

    def __init__(self, path: str | None = None, *, isolated: bool = False, cwd: Path | None = None) -> None:
        self.fixed = isolated or path is not None
        self.base = load(path, isolated=isolated, cwd=cwd)
        self._folders: dict[Path, Path | None] = {}
        self._parsed: dict[Path, Config] = {}
        # Files already read while looking (a pyproject.toml is parsed to see whether it has our table).
        self._data: dict[Path, dict[str, Any]] = {}
        if self.base.source is not None:
            source = self.base.source.resolve()
            self._parsed[source] = self.base
            if not self.fixed:
                self._folders[source.parent] = source

    def for_path(self, path: str, *, folder: bool = False) -> Config:
        """The configuration for ``path`` (a file, or with ``folder`` a folder to walk)."""
        if self.fixed or path == "-":
            return self.base
        start = Path(path) if folder else Path(path).parent
        source = self._nearest(start.resolve())
        if source is None:
            return self.base
        config = self._parsed.get(source)
        if config is None:
            data = self._data.pop(source, None)
            config = self._parsed[source] = load(str(source)) if data is None else _from_data(data, source)
        return config

    def _nearest(self, folder: Path) -> Path | None:
        walked = []
        found: Path | None = None
        for candidate in (folder, *folder.parents):
            if candidate in self._folders:
                found = self._folders[candidate]
                break
            walked.append(candidate)
            own = _in_folder(candidate)
            if own is not None:
                found = own[0].resolve()
                if own[1] is not None:
                    self._data[found] = own[1]
                self._folders[candidate] = found
                break
        for candidate in walked:
            self._folders[candidate] = found
        return found


# --- the command line over the configuration ---------------------------------


@dataclass(frozen=True, slots=True)
class Flags:
    """What the command line said, as parsed: None (or empty) where an option was not given."""

    command: str = "check"
    paths: tuple[str, ...] = ()
    input_format: str = "auto"
    output_format: str | None = None
    marker: str | None = None
    drop_orphans: bool | None = None
    color: str = "auto"
    verbose: bool = False
    quiet: bool = False
    config: str | None = None
    isolated: bool = False
    select: str | None = None
    ignore: str | None = None
    extend_select: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[str, ...] | None = None
    keep_open_tail: bool = False
    jobs: int | None = None  # None: all cores
    show_all: bool = False
    call_id: str | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool | None = None
    exit_zero: bool = False
    statistics: bool = False
    report_file: str | None = None
    stdin_filename: str | None = None
    # fix only
    in_place: bool = False
    output: str | None = None
    salvage: bool = False
    force: bool = False
    backup: bool = False
    diff: bool = False
    # --target, --fail-on (check and fix), --drop-empty-blocks (fix)
    target: str | None = None
    fail_on: str | None = None
    drop_empty_blocks: bool | None = None


@dataclass(frozen=True, slots=True)
class Options:
    """What a run does: the command line put over the configuration (``build`` makes it).

    ``settings`` is the configuration with every flag that was given put over
    it; the rest are the run's choices, each the flag's if given, else the
    configuration's, else the default.
    """

    flags: Flags
    settings: Config
    output_format: str
    marker: str
    drop_orphans: bool
    # The provider profile (None: the format's own rules), the lowest severity
    # that makes the exit code 1, and fix --drop-empty-blocks.
    target: str | None = None
    fail_on: str = "error"
    drop_empty_blocks: bool = False

    @property
    def command(self) -> str:
        return self.flags.command

    def for_config(self, config: Config) -> Options:
        """The same command line over another configuration (a file's own).

        The output format is the run's: one report has one format.
        """
        return replace(build(self.flags, config), output_format=self.output_format)


def build(flags: Flags, config: Config, environ: Any = None) -> Options:
    """The one place the command line meets the configuration: a flag given wins, then the file, then the default."""
    import os

    from .formats.base import DEFAULT_MARKER

    environ = os.environ if environ is None else environ

    def codes(value: str | tuple[str, ...] | None, name: str) -> tuple[str, ...] | None:
        if value is None:
            return None
        values = (value,) if isinstance(value, str) else value
        return check_codes([c for v in values for c in v.split(",")], name)

    if flags.target is not None:
        from .profiles import check_target

        try:
            check_target(flags.target)
        except ValueError as exc:
            raise UsageError(f"--target: {exc}") from None
    if flags.fail_on is not None and flags.fail_on not in FAIL_ON:
        raise UsageError(f"--fail-on must be one of {', '.join(FAIL_ON)}, not {flags.fail_on!r}")
    select, ignore = codes(flags.select, "--select"), codes(flags.ignore, "--ignore")
    if select is not None and ignore is None:
        # A rule selected on the command line is reported even if the file ignores it.
        ignore = ()
    exclude = None if flags.exclude is None else patterns(flags.exclude, "--exclude")
    extend = None
    if flags.extend_exclude:
        extend = config.extend_exclude + patterns(flags.extend_exclude, "--extend-exclude")
    extend_select = config.extend_select + (codes(flags.extend_select, "--extend-select") or ())
    extend_ignore = config.extend_ignore + (codes(flags.extend_ignore, "--extend-ignore") or ())
    per_file = None if flags.per_file_ignores is None else per_file_ignores(flags.per_file_ignores, "--per-file-ignores")
    settings = merged(
        config,
        marker=flags.marker,
        drop_orphans=flags.drop_orphans,
        select=select,
        ignore=ignore,
        extend_select=extend_select,
        extend_ignore=extend_ignore,
        per_file_ignores=per_file,
        exclude=exclude,
        extend_exclude=extend,
        force_exclude=flags.force_exclude,
        output_format=flags.output_format,
        target=flags.target,
        fail_on=flags.fail_on,
        drop_empty_blocks=flags.drop_empty_blocks,
    )
    if settings.output_format is not None:
        output_format = settings.output_format
    else:
        output_format = "github" if environ.get("GITHUB_ACTIONS") == "true" else "text"
    return Options(
        flags=flags,
        settings=settings,
        output_format=output_format,
        marker=settings.marker or DEFAULT_MARKER,
        drop_orphans=bool(settings.drop_orphans),
        target=settings.target,
        fail_on=settings.fail_on or "error",
        drop_empty_blocks=bool(settings.drop_empty_blocks),
    )


def patterns(values: tuple[str, ...] | list[str], option: str) -> tuple[str, ...]:
    """Glob patterns given comma-separated, or by repeating the option."""
    out = tuple(p.strip() for value in values for p in value.split(",") if p.strip())
    if not out and any(v.strip() for v in values):
        raise UsageError(f"{option}: no pattern given")
    return out


def per_file_ignores(values: tuple[str, ...] | list[str], option: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``PATTERN:CODES`` pairs as ruff spells them: ``fixtures/*:APX001,APX002`` or ``a/*:APX001,b/*:APX002``.

    A pattern with a slash is made absolute from the working folder, as the user typed it there.
    """
    import os

    out: dict[str, list[str]] = {}
    for value in values:
        pattern = None
        for item in (i.strip() for i in value.split(",")):
            if not item:
                continue
            head, colon, code = item.rpartition(":")
            if colon:
                pattern = head.strip()
                if not pattern:
                    raise UsageError(f"{option} {value!r}: a PATTERN is needed before the colon")
            elif pattern is None:
                raise UsageError(f"{option} {value!r}: give PATTERN:CODES, e.g. 'fixtures/*:APX001'")
            out.setdefault(pattern, []).append(code)
    pairs = []
    for pattern, codes in out.items():
        key = pattern if "/" not in pattern or pattern.startswith("/") else os.path.join(os.getcwd(), pattern)
        pairs.append((Path(key).as_posix() if "/" in pattern else key, check_codes(codes, option)))
    return tuple(pairs)


__all__ = ["Config", "Finder", "Flags", "Options", "build", "check_codes", "find_pyproject", "load", "merged", "parse"]
