from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not beside the project ({CORPUS} is missing)")
    return CORPUS


# Folders of the corpus whose samples another format's adapter reads.
_READ_AS = {"openclaw": "pi"}
# Folders of JSONL that is no transcript at all.
_NOT_TRANSCRIPTS = frozenset({"not-transcripts"})


def corpus_samples() -> list[Path]:
    """Every sample of the corpus (none where it is not beside the project)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.glob("*/*") if p.is_file() and p.name != "README.md")


def expected_format(sample: Path) -> str | None:
    """The format a sample must be read as, or None: it must exit 2, never be read as another.

    A folder names its runtime; until an adapter of that name exists, its
    samples are files the doctor cannot read (the corpus README).
    """
    from apx_doctor.formats import format_names

    folder = sample.parent.name
    if folder in _NOT_TRANSCRIPTS:
        return None
    name = _READ_AS.get(folder, folder)
    return name if name in format_names() else None
