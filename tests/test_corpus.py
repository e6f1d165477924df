"""Every sample of the shared corpus is read as the format its folder names, or refused.

A folder whose runtime has no adapter yet holds files the doctor must not
read as another format: each exits 2 and names the file, so that no call in
them is passed over in silence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import corpus_samples, expected_format
from tests.integration._cli import run_cli

SAMPLES = corpus_samples()


@pytest.mark.skipif(not SAMPLES, reason="the shared corpus is not beside the project")
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_sample_is_read_as_its_folder_says_or_refused(sample: Path) -> None:
    expected = expected_format(sample)
    result = run_cli("check", "--isolated", "--output-format", "json", str(sample))
    if expected is None:
        assert result.exit_code == 2, result.stdout
        (checked,) = json.loads(result.stdout)["files"]
        assert checked["format"] is None and checked["findings"] == []
        assert checked["error"].startswith(f"{sample}: ")
    else:
        assert result.exit_code in (0, 1), result.stderr
        (checked,) = json.loads(result.stdout)["files"]
        assert checked["format"] == expected


@pytest.mark.skipif(not SAMPLES, reason="the shared corpus is not beside the project")
def test_the_corpus_has_samples_of_runtimes_with_and_without_adapters() -> None:
    # Guards the walk itself: a corpus read wholly as one kind would prove nothing.
    kinds = {expected_format(s) is None for s in SAMPLES}
    assert kinds == {True, False}
