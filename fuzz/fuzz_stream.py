"""Fuzz target: the line reader, the streaming pass and the engine, for every format.

Run by ``make fuzz`` (through fuzz/run.py) under atheris, or by the fallback
loop there when atheris is not available. One input is: a format choice, option
bits, then raw transcript bytes. What counts as a crash:

- any exception but an ``InputError`` (the format cannot be told) or the
  documented refusal to rewrite a line with a number too long to keep exact;
- a repaired output that loses, reorders or alters a line no edit lists;
- a repaired output that a second pass would still change.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

try:
    import atheris
except ImportError:  # the fallback loop in run.py drives ``one_input`` itself
    atheris = None

# Coverage feedback comes from instrumenting the doctor's own modules.
with atheris.instrument_imports(include=["apx_doctor"]) if atheris else contextlib.nullcontext():
    from apx_doctor import api, jsonl, stream
    from apx_doctor.doctor import RepairOptions
    from apx_doctor.errors import InputError, SelfCheckError
    from apx_doctor.formats import format_names

    _NAMES = format_names()  # imports every adapter, inside the instrumentation

FORMATS = ["auto", *_NAMES]


def split_lines(data: bytes) -> list[bytes]:
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def check_nothing_lost(lines: list[bytes], output: bytes, result: stream.StreamResult, sink: stream.MemorySink) -> None:
    touched = {e.line for e in result.edits if e.action in ("remove", "replace", "salvage")}
    out = split_lines(output)
    pos = 0
    for number, raw in enumerate(lines, 1):
        if number in touched:
            continue
        last = number == len(lines)
        while pos < len(out) and not (
            out[pos] == raw or (last and not raw.endswith(b"\n") and out[pos] in (raw + b"\n", raw + b"\r\n"))
        ):
            pos += 1
        if pos == len(out):
            raise AssertionError(f"input line {number} lost or reordered")
        pos += 1
    salvaged = [lines[e.line - 1] for e in result.edits if e.action == "salvage"]
    if sink.rejected != salvaged:
        raise AssertionError("the salvaged lines are not the rejected ones")


def one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    fmt = FORMATS[data[0] % len(FORMATS)]
    bits = data[1]
    raw = data[2:]
    options = RepairOptions(drop_orphans=bool(bits & 1), keep_open_tail=bool(bits & 2))
    config = stream.StreamConfig(input_format=fmt, repair=options, salvage=bool(bits & 4))
    lines = split_lines(raw)
    sink = stream.MemorySink()
    try:
        result = stream.run(lines, config, sink)
    except InputError:
        return
    except SelfCheckError as exc:
        if "too long to rewrite exactly" in str(exc):
            return
        raise
    if not result.unparsed:
        output = b"".join(sink.parts)
        check_nothing_lost(lines, output, result, sink)
        # The repaired output needs nothing more (same options, same format).
        again = stream.run(split_lines(output), stream.StreamConfig(input_format=result.format or "chat", repair=options))
        if again.edits:
            raise AssertionError("a second repair would change the output")
    # The library on the same lines, as parsed values.
    values = [jsonl.parse(line) for line in lines]
    if all(type(v) is not jsonl.Unparsed for v in values) and fmt != "auto":
        api.repair_messages(values, format=fmt, drop_orphans=options.drop_orphans, keep_open_tail=options.keep_open_tail)
        api.check_messages(values, format=fmt)


def main() -> None:
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
