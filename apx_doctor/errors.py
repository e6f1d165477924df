"""The few things that stop a run. Everything expected is a finding instead."""

from __future__ import annotations


class DoctorError(Exception):
    """A run on one input cannot go on; the CLI exits 2 with this message."""


class UsageError(DoctorError):
    """The options contradict each other."""


class InputError(DoctorError):
    """An input cannot be read, or its format cannot be told."""


class SelfCheckError(DoctorError):
    """The repaired transcript did not check clean; nothing was written."""


class WriteError(DoctorError):
    """The repaired transcript could not be written; the original is untouched."""


class NotATranscriptError(InputError):
    """The file fits no transcript format (a runtime's bookkeeping, a JSON document).

    Named on the command line it stops the run like any InputError; found by
    walking a folder, it is skipped and listed as such.
    """
