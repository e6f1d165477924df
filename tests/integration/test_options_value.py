"""One options value (config.Options), built in one place: the command line, then the configuration, then the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from apx_doctor.config import Config, Flags, build, parse
from apx_doctor.errors import UsageError
from apx_doctor.formats.base import DEFAULT_MARKER

from ._cli import BROKEN, run_cli

CONFIGURED = parse(
    {
        "marker": "from the file",
        "drop-orphans": True,
        "ignore": ["APX105"],
        "output-format": "json",
        "per-file-ignores": {"fixtures/*": ["APX001"]},
    }
)


def test_a_flag_given_beats_the_configuration() -> None:
    flags = Flags(
        marker="from the flag", drop_orphans=False, ignore="APX104", output_format="concise", per_file_ignores=("x/*:APX002",)
    )
    options = build(flags, CONFIGURED, environ={})
    assert options.marker == "from the flag"
    assert options.drop_orphans is False
    assert options.settings.ignore == ("APX104",)
    assert options.output_format == "concise"
    assert [codes for _, codes in options.settings.per_file_ignores] == [("APX002",)]


def test_the_configuration_fills_what_the_command_line_left_out() -> None:
    options = build(Flags(), CONFIGURED, environ={"GITHUB_ACTIONS": "true"})
    assert options.marker == "from the file"
    assert options.drop_orphans is True
    assert options.settings.ignore == ("APX105",)
    # The file's output-format wins over the GitHub Actions default.
    assert options.output_format == "json"
    assert options.settings.per_file_ignores == (("fixtures/*", ("APX001",)),)


def test_the_defaults_fill_what_neither_says() -> None:
    options = build(Flags(), Config(), environ={})
    assert (options.marker, options.drop_orphans, options.output_format) == (DEFAULT_MARKER, False, "text")
    assert build(Flags(), Config(), environ={"GITHUB_ACTIONS": "true"}).output_format == "github"


def test_select_on_the_command_line_clears_the_files_ignore() -> None:
    options = build(Flags(select="APX1"), CONFIGURED, environ={})
    assert options.settings.select == ("APX1",)
    assert options.settings.enabled("APX105")


def test_extend_select_and_extend_ignore_add_to_the_configuration() -> None:
    config = parse({"select": ["APX00"], "ignore": ["APX002"]})
    options = build(Flags(extend_select=("APX105",), extend_ignore=("APX003",)), config, environ={})
    settings = options.settings
    assert settings.enabled("APX001") and settings.enabled("APX105")
    assert not settings.enabled("APX003") and not settings.enabled("APX002") and not settings.enabled("APX104")
    # Selected on the command line, a code is reported even where the file ignores it.
    assert build(Flags(extend_select=("APX002",)), config, environ={}).settings.enabled("APX002")


def test_a_bad_flag_value_is_a_usage_error_naming_the_flag() -> None:
    with pytest.raises(UsageError, match="--extend-select"):
        build(Flags(extend_select=("NOPE",)), Config(), environ={})
    with pytest.raises(UsageError, match="--per-file-ignores"):
        build(Flags(per_file_ignores=("APX001",)), Config(), environ={})


def test_per_file_ignores_on_the_command_line_are_spelled_as_ruff_spells_them(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    options = build(Flags(per_file_ignores=("fixtures/*:APX001,APX002", "*.tmp.jsonl:APX105")), Config(), environ={})
    pairs = dict(options.settings.per_file_ignores)
    assert pairs[f"{tmp_path.resolve().as_posix()}/fixtures/*"] == ("APX001", "APX002")
    assert pairs["*.tmp.jsonl"] == ("APX105",)
    assert not options.settings.enabled("APX002", str(tmp_path / "fixtures" / "a.jsonl"))
    assert options.settings.enabled("APX002", str(tmp_path / "live.jsonl"))


def test_check_and_fix_take_the_same_shared_options() -> None:
    # One option list: every option check has, fix has too (fix adds its own).
    import typer.main

    from apx_doctor.cli import app

    group = typer.main.get_command(app)
    names = {cmd: {o for p in group.commands[cmd].params for o in p.opts} for cmd in ("check", "fix")}
    assert names["check"] <= names["fix"]
    assert {"--diff", "--in-place", "--output"} <= names["fix"] - names["check"]


def test_the_cli_reads_the_options_value(isolated_cwd: Path) -> None:
    (isolated_cwd / "a.jsonl").write_bytes(BROKEN)
    (isolated_cwd / "pyproject.toml").write_text('[tool.apx-doctor]\noutput-format = "concise"\nmarker = "stopped"\n')
    result = run_cli("check", "a.jsonl")
    assert result.stdout.startswith("a.jsonl:2:1: APX001 ")
    assert b'"content":"stopped"' in run_cli("fix", "--output", "-", "a.jsonl").stdout_bytes
    assert run_cli("check", "--output-format", "json", "a.jsonl").stdout.lstrip().startswith("{")
