"""Files read whole (apx_doctor.documents): one JSON document a file, repaired only in its own layout.

The layouts are the runtimes': ``JSON.stringify(x, null, 2)`` (Gemini CLI, which
is ``json.dumps(x, indent=2, ensure_ascii=False)``), compact ``JSON.stringify(x)``
(Cline, Roo Code), with or without a final line ending, and Python's own. A
document in any other layout is checked, but ``fix`` refuses to rewrite it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from apx_doctor import documents
from apx_doctor.cli import app

MARKER = "not run: the turn was interrupted"
USE = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}}
HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "Read a.txt — «now»"}], "ts": 1},
    {"role": "assistant", "content": [USE], "ts": 2},
    {"role": "user", "content": [{"type": "text", "text": "well?"}], "ts": 3},
]
NOT_RUN = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": MARKER}]}
REPAIRED = [*HISTORY[:2], NOT_RUN, HISTORY[2]]


def _invoke(*args: str, input: bytes | None = None):
    return CliRunner().invoke(app, list(args), input=input)


def _report(path: Path) -> dict:
    result = _invoke("check", "--isolated", "--output-format", "json", str(path))
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["files"][0]


def _js(value, indent=None) -> bytes:
    """``JSON.stringify(value, null, indent)``, byte for byte (the golden cases' documents were
    written by Node itself): a lone surrogate comes out as a lower-case escape."""
    separators = (",", ":") if indent is None else (",", ": ")
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text).encode()


LAYOUTS = {
    "JSON.stringify(x, null, 2)": lambda v: _js(v, 2),
    "JSON.stringify(x, null, 2) and a line ending": lambda v: _js(v, 2) + b"\n",
    "JSON.stringify(x)": lambda v: _js(v),
    "JSON.stringify(x) and a line ending": lambda v: _js(v) + b"\n",
    "JSON.stringify(x, null, '\\t')": lambda v: _js(v, "\t"),
    "json.dumps(x)": lambda v: json.dumps(v).encode(),
    "python -m json.tool": lambda v: json.dumps(v, indent=4).encode() + b"\n",
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_fix_writes_the_repair_in_the_documents_own_layout(layout: str, tmp_path: Path) -> None:
    write = LAYOUTS[layout]
    path = tmp_path / "api_conversation_history.json"
    path.write_bytes(write(HISTORY))
    result = _invoke("fix", "--in-place", str(path))
    assert result.exit_code == 1, result.output
    assert path.read_bytes() == write(REPAIRED)
    # A second run finds nothing to do and leaves the file alone.
    before = path.stat().st_mtime_ns
    assert _invoke("fix", "--in-place", str(path)).exit_code == 0
    assert path.stat().st_mtime_ns == before


REFORMATTED = {
    "CRLF line endings": lambda v: _js(v, 2).replace(b"\n", b"\r\n"),
    "escaped slashes": lambda v: _js(v).replace(b"a.txt", b"a\\/b.txt"),
    "a space before each colon": lambda v: _js(v, 2).replace(b'": ', b'" : '),
    "trailing spaces": lambda v: _js(v, 2).replace(b"\n", b" \n"),
    "two final line endings": lambda v: _js(v) + b"\n\n",
    "a repeated key": lambda v: _js(v).replace(b'"ts":2', b'"ts":1,"ts":2'),
    "upper-case unicode escapes": lambda v: json.dumps(v).encode().replace(b"\\u00ab", b"\\u00AB"),
    "a number no runtime writes so": lambda v: _js(v).replace(b'"ts":3', b'"ts":3E0'),
}


@pytest.mark.parametrize("how", REFORMATTED, ids=list(REFORMATTED))
def test_a_layout_that_cannot_be_written_back_is_refused_and_left_alone(how: str, tmp_path: Path) -> None:
    path = tmp_path / "api_conversation_history.json"
    data = REFORMATTED[how](HISTORY)
    path.write_bytes(data)
    result = _invoke("fix", "--in-place", str(path))
    assert result.exit_code == 2, result.output
    assert f"{path}: line " in result.stderr and "would reformat it; nothing was written" in result.stderr
    assert "Traceback" not in result.output
    assert path.read_bytes() == data
    assert os.listdir(tmp_path) == [path.name]  # no temporary file left
    # The dry run refuses too; check still reports the call.
    assert _invoke("fix", str(path)).exit_code == 2
    (finding,) = _report(path)["findings"]
    assert (finding["code"], finding["index"], finding["call_id"]) == ("APX001", 1, "toolu_1")


def test_a_sound_document_in_any_layout_is_never_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    data = REFORMATTED["CRLF line endings"](REPAIRED)
    path.write_bytes(data)
    before = path.stat().st_mtime_ns
    assert _invoke("fix", "--in-place", str(path)).exit_code == 0
    assert path.read_bytes() == data and path.stat().st_mtime_ns == before
    out = tmp_path / "copy.json"
    assert _invoke("fix", "--output", str(out), str(path)).exit_code == 0
    assert out.read_bytes() == data


def test_findings_name_the_line_where_the_message_starts_and_its_index(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(_js(HISTORY, 2))
    text = path.read_text().splitlines()
    (finding,) = _report(path)["findings"]
    # The second message of the array opens with the line "  {" after the first one closes.
    assert finding["index"] == 1
    assert text[finding["line"] - 1] == "  {" and text[finding["line"] - 2] == "  },"
    assert '"role": "assistant"' in text[finding["line"]]


def test_a_byte_order_mark_is_reported_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(b"\xef\xbb\xbf" + _js(HISTORY))
    codes = [(f["code"], f["line"]) for f in _report(path)["findings"]]
    assert ("APX103", 1) in codes and ("APX001", 1) in codes
    assert _invoke("fix", "--in-place", str(path)).exit_code == 1
    assert path.read_bytes() == b"\xef\xbb\xbf" + _js(REPAIRED)


@pytest.mark.parametrize(
    "data, where",
    [
        (_js(HISTORY, 2)[:-40], "the JSON document is cut off"),
        (_js(HISTORY, 2).replace(b'"ts": 2', b'"ts": 2,,'), "not valid JSON"),
        (_js(HISTORY, 2).replace("«".encode(), b"\xff"), "not UTF-8"),
        (b"[\n" + b"[" * 5000 + b"]" * 5000 + b"\n]", "nested too deeply"),
    ],
    ids=["cut-off", "invalid", "not-utf8", "deep"],
)
def test_a_broken_document_is_refused_naming_the_file_and_line(data: bytes, where: str, tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(data)
    for command in (["check"], ["fix", "--in-place"]):
        result = _invoke(*command, str(path))
        assert result.exit_code == 2, result.output
        assert f"{path}: line " in result.stderr and where in result.stderr
        assert "Traceback" not in result.output
    assert path.read_bytes() == data


def test_a_document_no_format_reads_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "package.json"
    path.write_bytes(_js({"name": "x", "version": "1.0.0", "dependencies": {}}, 2))
    result = _invoke("check", str(path))
    assert result.exit_code == 2
    assert "one JSON document, but not one any format reads" in result.stderr and str(path) in result.stderr


def test_a_document_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "MAX_BYTES", 100)
    path = tmp_path / "h.json"
    path.write_bytes(_js(HISTORY, 2))
    result = _invoke("check", str(path))
    assert result.exit_code == 2
    assert f"{path}: the file is larger than" in result.stderr and "nothing was checked" in result.stderr


def test_standard_input_in_and_out(tmp_path: Path) -> None:
    result = _invoke("fix", "--output", "-", "-", input=_js(HISTORY))
    assert result.exit_code == 1, result.output
    assert result.stdout_bytes == _js(REPAIRED)


def test_show_draws_a_document_with_its_interruption(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_bytes(_js(HISTORY, 2))
    result = _invoke("show", "--color", "never", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.count("✂ interrupted:") == 1
    assert "read_file (line 12, id=toolu_1) got no result" in " ".join(result.stdout.split())


def test_the_library_repairs_a_parsed_document() -> None:
    original = json.loads(json.dumps(HISTORY))
    result = documents.repair_document(original)
    assert result.value == REPAIRED and result.changed
    assert [(f.code, f.index) for f in result.findings] == [("APX001", 1)]
    assert original == HISTORY  # the input is not changed
    with pytest.raises(ValueError, match="fits no format"):
        documents.repair_document({"name": "x"})


# --- any document, any text ---------------------------------------------------

# Text that trips a careless scanner: brackets, braces, quotes, escapes, line breaks.
_TEXT = st.text(alphabet=st.sampled_from(list('[]{}",:\\\n \t/aé😀\u2028') + ["\x00", "\ud800"]), max_size=12)


@st.composite
def _histories(draw) -> tuple[list, int]:
    messages: list = []
    cut = None
    for turn in range(draw(st.integers(1, 5))):
        messages.append({"role": "user", "content": [{"type": "text", "text": draw(_TEXT)}]})
        call = {"type": "tool_use", "id": f"toolu_{turn}", "name": draw(_TEXT), "input": {draw(_TEXT): draw(_TEXT)}}
        messages.append({"role": "assistant", "content": [{"type": "text", "text": draw(_TEXT)}, call], "ts": turn})
        if cut is None and draw(st.booleans()):
            cut = len(messages) - 1
            continue
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": draw(_TEXT)}]})
    return messages, cut


def _element_starts(text: str) -> list[int]:
    """Where each element of a top-level array starts, found by decoding them one by one."""
    decoder, starts = json.JSONDecoder(), []
    position = text.index("[") + 1
    while True:
        while text[position] in " \t\r\n,":
            position += 1
        if text[position] == "]":
            return starts
        starts.append(position)
        _, position = decoder.raw_decode(text, position)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(drawn=_histories(), layout=st.sampled_from(list(LAYOUTS)))
def test_any_history_in_any_runtime_layout(drawn, layout: str, tmp_path: Path) -> None:
    messages, cut = drawn
    write = LAYOUTS[layout]
    path = tmp_path / "h.json"
    data = write(messages)
    path.write_bytes(data)
    report = _report(path)
    text = data.decode("utf-8")
    lines = [text.count("\n", 0, start) + 1 for start in _element_starts(text)]
    interrupted = [(f["index"], f["line"]) for f in report["findings"] if f["code"] == "APX001"]
    assert interrupted == ([] if cut is None else [(cut, lines[cut])])
    out = tmp_path / "out.json"
    result = _invoke("fix", "--output", str(out), str(path))
    if cut is None:
        assert result.exit_code == 0 and out.read_bytes() == data
        return
    assert result.exit_code == 1, result.output
    call_id = messages[cut]["content"][1]["id"]
    record = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": MARKER}]}
    # Exactly one record, right where the next non-tool message begins; every other byte as written.
    assert out.read_bytes() == write([*messages[: cut + 1], record, *messages[cut + 1 :]])
    assert _invoke("fix", "--output", str(tmp_path / "again.json"), str(out)).exit_code == 0
