"""What a rewrite keeps: every value of a line it must rewrite, and the file's owner, xattrs and ACL.

A line the repair rewrites is serialised again from its parsed value. Numbers
a parse would change (integers beyond 64 bits, floats out of range or rounded),
repeated keys and the byte-order mark must come back as they were, or the line
is refused as unfixable (exit 2) and nothing is written. An in-place fix gives
the replacement the original's owner, group, extended attributes and ACL, or
refuses (``--force`` writes without them and says so).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from apx_doctor import files, jsonl

from ._support import run_cli
from .test_crash_safe_writes import CALL, USER

# A datasets row with an interrupted call inside it: its repair rewrites the row.
ROW = (
    b'{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":'
    b'[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},'
    b'{"role":"user","content":"and?"}],"n":NUM}\n'
)
HARD = {
    "5000-digit integer": b"1" * 5000,
    "1e400": b"1e400",
    "-1e400": b"-1e400",
    "2^64": str(2**64).encode(),
    "1e-400": b"1e-400",
    "more digits than a double": b"0.1000000000000000000001",
}


def _fix(tmp_path: Path, data: bytes):
    source, out = tmp_path / "rows.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(data)
    result = run_cli("fix", "--output", str(out), str(source))
    return result, (out.read_bytes() if out.exists() else None)


@pytest.mark.parametrize("number", list(HARD.values()), ids=list(HARD))
def test_a_number_a_rewrite_would_change_is_refused_and_nothing_written(tmp_path: Path, number: bytes) -> None:
    result, out = _fix(tmp_path, ROW.replace(b"NUM", number))
    assert result.exit_code == 2
    assert "line 1" in result.output and "unfixable" in result.output and "nothing was written" in result.output
    assert out is None
    assert b"Infinity" not in result.output.encode()


@pytest.mark.parametrize(
    "number", [b"12345678901234567890", b"-9223372036854775808", b"1.5", b"0.1", b"-0.0", b"1e-300", b"2.5E+10"]
)
def test_a_number_that_round_trips_comes_back_with_its_value(tmp_path: Path, number: bytes) -> None:
    result, out = _fix(tmp_path, ROW.replace(b"NUM", number))
    assert result.exit_code == 1, result.output
    import json
    from decimal import Decimal

    written = json.loads(out, parse_float=Decimal, parse_int=Decimal)["n"]
    assert written == Decimal(number.decode())


def test_a_repeated_key_is_never_dropped_by_a_rewrite(tmp_path: Path) -> None:
    result, out = _fix(tmp_path, ROW.replace(b'"n":NUM', b'"n":1,"n":2'))
    assert result.exit_code == 2 and "repeated" in result.output and out is None


def test_a_rewritten_first_line_keeps_its_byte_order_mark(tmp_path: Path) -> None:
    result, out = _fix(tmp_path, jsonl.BOM + ROW.replace(b"NUM", b"7"))
    assert result.exit_code == 1
    assert out.startswith(jsonl.BOM + b'{"messages":')
    assert out.count(jsonl.BOM) == 1


def test_the_self_check_rejects_infinity_nan_and_changed_values() -> None:
    assert not jsonl.reads_back(b'{"n":Infinity}', {"n": float("inf")})
    assert not jsonl.reads_back(b'{"n":NaN}', {"n": float("nan")})
    assert not jsonl.reads_back(b'{"n":null}', {"n": float("inf")})
    assert not jsonl.reads_back(b'{"n":1.8446744073709552e19}', {"n": 2**64})
    assert jsonl.reads_back(b'{"n":18446744073709551615}', {"n": 2**64 - 1})
    assert jsonl.inexact(b'{"n":1e400}\n') and jsonl.inexact(b'{"a":1,"a":1}\n')
    assert jsonl.inexact(b'{"n":1.25,"s":"1e400"}\n') is None


# --- attributes ----------------------------------------------------------------

BROKEN = USER + CALL + USER


def _has_user_xattrs(folder: Path) -> bool:
    probe = folder / "probe"
    probe.write_bytes(b"")
    try:
        os.setxattr(probe, "user.apx-probe", b"1")
        return True
    except OSError:
        return False
    finally:
        probe.unlink()


def test_owner_xattrs_and_an_acl_survive_an_in_place_fix(tmp_path: Path) -> None:
    if not _has_user_xattrs(tmp_path):
        pytest.skip("this file system takes no user.* extended attributes")
    path = tmp_path / "s.jsonl"
    path.write_bytes(BROKEN)
    path.chmod(0o640)
    os.setxattr(path, "user.origin", b"recorded by the runtime")
    setfacl = shutil.which("setfacl")
    if setfacl:
        subprocess.run([setfacl, "-m", "u:12345:r", str(path)], check=True)
    else:
        # The access ACL is this attribute: version 2, then (tag, perm, id) entries.
        import struct

        entries = [(0x01, 6, 0xFFFFFFFF), (0x02, 4, 12345), (0x04, 4, 0xFFFFFFFF), (0x10, 4, 0xFFFFFFFF), (0x20, 0, 0xFFFFFFFF)]
        value = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
        try:
            os.setxattr(path, "system.posix_acl_access", value)
        except OSError as exc:
            pytest.skip(f"no POSIX ACLs here: {exc}")
    acl = os.getxattr(path, "system.posix_acl_access")
    owner = None
    if os.geteuid() == 0:
        owner = (4321, 4321)
        os.chown(path, *owner)
    before = os.stat(path)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 1, result.output
    after = os.stat(path)
    assert after.st_ino != before.st_ino, "the file was not replaced (nothing tested)"
    assert os.getxattr(path, "user.origin") == b"recorded by the runtime"
    assert os.getxattr(path, "system.posix_acl_access") == acl
    assert after.st_mode == before.st_mode
    if owner is not None:
        assert (after.st_uid, after.st_gid) == owner


def _refuse_xattrs(monkeypatch: pytest.MonkeyPatch) -> None:
    def setxattr(*args, **kwargs):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(files.os, "setxattr", setxattr)


def test_an_attribute_that_cannot_be_kept_refuses_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _has_user_xattrs(tmp_path):
        pytest.skip("this file system takes no user.* extended attributes")
    path = tmp_path / "s.jsonl"
    path.write_bytes(BROKEN)
    os.setxattr(path, "user.origin", b"x")
    _refuse_xattrs(monkeypatch)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2 and "user.origin" in result.output and "nothing was written" in result.output
    assert path.read_bytes() == BROKEN and os.getxattr(path, "user.origin") == b"x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_force_writes_without_an_attribute_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not _has_user_xattrs(tmp_path):
        pytest.skip("this file system takes no user.* extended attributes")
    path = tmp_path / "s.jsonl"
    path.write_bytes(BROKEN)
    os.setxattr(path, "user.origin", b"x")
    _refuse_xattrs(monkeypatch)
    result = run_cli("fix", "--in-place", "--force", str(path))
    assert result.exit_code == 1
    assert "warning" in result.output and "user.origin" in result.output
    assert path.read_bytes() != BROKEN


def test_an_owner_that_cannot_be_kept_refuses_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(BROKEN)
    real_fstat = os.fstat

    def fchown(*args):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    # The replacement looks as if another user made it: its owner differs and cannot be changed.
    info = os.stat(path)

    class Other:
        def __init__(self, real):
            self.real = real

        def __getattr__(self, name):
            if name == "st_uid":
                return info.st_uid + 1
            return getattr(self.real, name)

    def fstat(fd):
        got = real_fstat(fd)
        return Other(got) if got.st_ino != info.st_ino and files.stat.S_ISREG(got.st_mode) else got

    monkeypatch.setattr(files.os, "fchown", fchown)
    monkeypatch.setattr(files.os, "fstat", fstat)
    result = run_cli("fix", "--in-place", str(path))
    assert result.exit_code == 2 and "owner" in result.output and "nothing was written" in result.output
    assert path.read_bytes() == BROKEN
