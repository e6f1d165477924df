"""The benchmark behind `make bench`: every row of issue 5's table, measured.

    python bench/run.py            # full size: 1 GB transcripts (about 7 minutes on 2 cores)
    BENCH_SCALE=0.05 python bench/run.py   # a quick run on 1/20 of the data (its ratios
                                           # then weigh start-up, not throughput)
    BENCH_RUNS=7 python bench/run.py       # more runs a row (default 5)

Every measurement is one fresh child process (bench/measure.py), so its
RUSAGE_CHILDREN peak memory is that command's alone. Each row runs the doctor
and its baseline alternately, in the same run, and prints both medians and
their ratio. Wall time is what a user waits; CPU time (user + system) is less
disturbed by other work on the machine, so both are shown and the ratio is
given for each.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

PYTHON = sys.executable
DOCTOR = [PYTHON, "-m", "apx_doctor"]
SCALE = float(os.environ.get("BENCH_SCALE", "1"))
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
DATA = Path(os.environ.get("BENCH_DATA", HERE / "data"))
JOBS = os.cpu_count() or 1


@dataclass
class Sample:
    wall: float
    cpu: float
    maxrss_mb: float
    rc: int


def measure(cmd: list[str]) -> Sample:
    # Dirty pages an earlier run left (a 1 GB repaired file) are written back
    # now, untimed: otherwise the next command pays for them in system time.
    os.sync()
    out = subprocess.run([PYTHON, str(HERE / "measure.py"), *cmd], capture_output=True, text=True, check=True)
    return Sample(**json.loads(out.stdout))


def alternate(a: list[str], b: list[str], runs: int = RUNS) -> tuple[list[Sample], list[Sample]]:
    """Runs of ``a`` and ``b`` interleaved, so both see the same machine."""
    first, second = [], []
    for _ in range(runs):
        first.append(measure(a))
        second.append(measure(b))
    return first, second


def med(samples: list[Sample], key: str) -> float:
    return statistics.median(getattr(s, key) for s in samples)


class Table:
    def __init__(self) -> None:
        self.rows: list[str] = []

    def header(self) -> None:
        self.add("| what | doctor (median) | baseline (median) | ratio | target | holds |")
        self.add("|---|---|---|---|---|---|")

    def add(self, line: str) -> None:
        print(line, flush=True)
        self.rows.append(line)

    def timed(
        self,
        what: str,
        ours: list[Sample],
        base: list[Sample],
        base_name: str,
        target: float,
        faster: bool = False,
        keys=("wall", "cpu"),
    ) -> None:
        """A time row: ratio ours/base (or base/ours when the target is a speed-up)."""
        cells = []
        holds = []
        for key in keys:
            o, b = med(ours, key), med(base, key)
            ratio = b / o if faster else o / b
            ok = ratio >= target if faster else ratio <= target
            holds.append(ok)
            cells.append((key, o, b, ratio))
        doctor = " / ".join(f"{o:.2f} s {k}" for k, o, _, _ in cells)
        baseline = " / ".join(f"{b:.2f} s {k}" for k, _, b, _ in cells)
        ratio = " / ".join(f"{r:.2f}{'× faster' if faster else '×'} {k}" for k, _, _, r in cells)
        sign = "≥" if faster else "≤"
        verdict = (
            "yes" if all(holds) else "NO" if not any(holds) else " and ".join(k for k, ok in zip(keys, holds) if ok) + " only"
        )
        self.add(f"| {what} | {doctor} | {base_name}: {baseline} | {ratio} | {sign} {target} | {verdict} |")


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(row for row in Path("/proc/meminfo").read_text().splitlines() if row.startswith("MemTotal"))
        mem_gb = int(mem.split()[1]) / (1 << 20)
    except (OSError, StopIteration):
        mem_gb = 0
    import orjson

    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} cores ({cpu}), {mem_gb:.0f} GB RAM, "
        f"Python {platform.python_version()}, orjson {orjson.__version__}, BENCH_SCALE={SCALE}, {RUNS} runs a row"
    )


def ensure_data() -> dict[str, generate.Made]:
    """Generate what is missing; a stamp records the scale and the generator's version."""
    DATA.mkdir(parents=True, exist_ok=True)
    stamp = DATA / "stamp.json"
    want = {"scale": SCALE, "version": generate.VERSION}
    made: dict[str, generate.Made] = {}
    old = json.loads(stamp.read_text()) if stamp.exists() else {}
    if old.get("want") == want:
        for name, info in old.get("made", {}).items():
            if Path(info["path"]).exists():
                made[name] = generate.Made(
                    Path(info["path"]), info["bytes"], info["lines"], info["calls"], info["dangling"], info["orphans"]
                )
    target = int(generate.GB * SCALE)
    from apx_doctor.formats import format_names

    formats = [f for f in generate.WRITERS if f in format_names()]
    for fmt in formats:
        if fmt not in made:
            start = time.perf_counter()
            made[fmt] = generate.write_transcript(DATA / f"{fmt}.jsonl", fmt, target)
            print(f"  generated {fmt}: {made[fmt].bytes / 1e6:,.0f} MB in {time.perf_counter() - start:.0f} s", flush=True)
    if "quarter" not in made:
        made["quarter"] = generate.write_transcript(DATA / "chat-quarter.jsonl", "chat", target // 4)
    if "sessions" not in made:
        made["sessions"] = generate.write_folder(DATA / "sessions", max(20, int(5000 * SCALE)))
    # Issue 15: short lines (API logs, chat exports) in every format, and line
    # lengths as in real Claude Code sessions (bench/generate.py PROFILES).
    # Half a gigabyte or more: on an eighth (as until 2026-12-04) start-up
    # alone was a fifth of the orjson loop's time, which has a row of its own.
    for fmt in formats:
        key = f"{fmt}-short"
        if key not in made:
            size = target if fmt == "chat" else target // 2
            made[key] = generate.write_transcript(DATA / f"{fmt}-short.jsonl", fmt, size, profile="short")
    if "claude-code" in formats:
        # Real Claude Code line lengths, in a session file and in a sub-agent's own file.
        for key, writer in (("claude-code-real", "claude-code"), ("claude-code-agent-real", "claude-code-agent")):
            if key not in made:
                made[key] = generate.write_transcript(DATA / f"{key}.jsonl", writer, target // 2, profile="real")
    one = DATA / "one-line.jsonl"
    one.write_bytes(b'{"role":"user","content":"hello"}\n')
    stamp.write_text(json.dumps({"want": want, "made": {k: {**vars(v), "path": str(v.path)} for k, v in made.items()}}))
    return made


def sanity(path: Path, fmt: str, made: generate.Made) -> str:
    """What the doctor finds on a file, beside what the generator planted."""
    out = subprocess.run(
        [*DOCTOR, "check", "-q", "--isolated", "--output-format", "json", str(path)], capture_output=True, text=True, check=False
    )
    try:
        report = json.loads(out.stdout)["files"][0]
    except (ValueError, KeyError, IndexError):
        return f"{fmt}: the doctor gave no report (exit {out.returncode}): {out.stderr.strip()[:200]}"
    found = sum(1 for f in report["findings"] if f["code"] == "APX001")
    return (
        f"{fmt}: {made.bytes / 1e6:,.0f} MB, {made.lines:,} lines, {made.calls:,} calls, {made.dangling:,} planted dangling "
        f"→ detected as {report['format']}, {found:,} APX001"
    )


def compile_bytecode() -> None:
    """Byte-compile the package, as ``pip install`` does: an editable install under
    PYTHONDONTWRITEBYTECODE would otherwise compile every changed module again in
    each measured run (0.15 s of start-up, a fifth of a 134 MB file's time)."""
    import compileall

    compileall.compile_dir(str(HERE.parent / "apx_doctor"), quiet=1)


def main() -> int:
    print(f"# apx-doctor benchmark\n\n{machine()}\n", flush=True)
    compile_bytecode()
    made = ensure_data()
    chat = str(made["chat"].path)
    loop = [PYTHON, str(HERE / "orjson_loop.py")]
    table = Table()
    table.add("Data:\n")
    for name, item in made.items():
        fmt = _format_of(name)
        if fmt in generate.WRITERS:
            table.add(f"- {sanity(item.path, fmt, item).replace(fmt + ':', name + ':', 1)}")
    table.add(f"- sessions: {made['sessions'].lines:,} lines in {max(20, int(5000 * SCALE)):,} files\n")
    table.header()

    check = [*DOCTOR, "check", "--isolated", chat]
    out_file = str(DATA / "repaired.jsonl")
    fix = [*DOCTOR, "fix", "--isolated", "--output", out_file, chat]
    runs_check, runs_loop = alternate(check, loop + [chat])
    runs_fix, runs_loop2 = alternate(fix, loop + [chat])
    # Context for the fix row: the same loop that also writes every line (and fsyncs).
    runs_fix2, runs_copy = alternate(fix, [PYTHON, str(HERE / "orjson_copy.py"), chat, out_file])
    os.unlink(out_file)
    size = f"{made['chat'].bytes / 1e9:.2f} GB"
    table.timed(f"`check` {size} chat", runs_check, runs_loop, "orjson loop", 1.3)
    table.timed(f"`fix --output` {size} chat", runs_fix, runs_loop2, "orjson loop", 1.6)
    table.timed(f"`fix --output` {size} chat (context)", runs_fix2, runs_copy, "orjson loop that writes each line", 1.6)
    stdlib = [PYTHON, str(HERE / "stdlib_pairing.py"), chat]
    runs_check2, runs_std = alternate(check, stdlib)
    table.timed(f"`check` {size} chat", runs_check2, runs_std, "stdlib json pairing script", 2.5, faster=True)

    quarter = measure([*DOCTOR, "check", "--isolated", str(made["quarter"].path)])
    peak_check = max(s.maxrss_mb for s in runs_check + runs_check2)
    peak_fix = max(s.maxrss_mb for s in runs_fix + runs_fix2)
    loop_peak = max(s.maxrss_mb for s in runs_loop)
    flat = abs(peak_check - quarter.maxrss_mb) <= 10
    table.add(
        f"| peak memory, `check` / `fix --output` {size} | {peak_check:.0f} MB / {peak_fix:.0f} MB "
        f"(`check` of a quarter of the file: {quarter.maxrss_mb:.0f} MB) | orjson loop: {loop_peak:.0f} MB | — | ≤ 100 MB, flat | "
        f"{'yes' if max(peak_check, peak_fix) <= 100 and flat else 'NO'} |"
    )

    show_rows(table, made)

    one = str(DATA / "one-line.jsonl")
    runs_start, runs_typer = alternate([*DOCTOR, "check", "--isolated", one], [PYTHON, "-c", "import typer"], runs=max(RUNS, 10))
    table.timed("`check` of a one-line file (start-up)", runs_start, runs_typer, '`python -c "import typer"`', 1.5)

    # The files one by one: bench/data is git-ignored, and a folder argument lists only what git would.
    folder = [str(p) for p in sorted(made["sessions"].path.glob("*.jsonl"))]
    # json output: the rendering is the same serial work for both; the row is about the checking.
    serial = [*DOCTOR, "check", "--isolated", "-q", "--output-format", "json", "--jobs", "1", *folder]
    parallel = [*DOCTOR, "check", "--isolated", "-q", "--output-format", "json", "--jobs", str(JOBS), *folder]
    runs_par, runs_ser = alternate(parallel, serial)
    # Wall time only: the CPU time of a parallel run is the sum over its workers.
    table.timed(
        f"`check` of {len(folder):,} files, `--jobs {JOBS}`",
        runs_par,
        runs_ser,
        "`--jobs 1`",
        JOBS * 0.75,
        faster=True,
        keys=("wall",),
    )
    # What the machine itself allows now: other work on it takes cores too.
    burn_par, burn_ser = alternate([PYTHON, str(HERE / "burn.py"), str(JOBS)], [PYTHON, str(HERE / "burn.py"), "1"])
    table.timed(
        f"(context) pure CPU work on {JOBS} processes", burn_par, burn_ser, "1 process", JOBS * 0.75, faster=True, keys=("wall",)
    )

    peaks = {}
    for fmt, item in made.items():
        if fmt in ("chat", "quarter", "sessions") or fmt not in generate.WRITERS:
            continue
        path = str(item.path)
        ours, base = alternate([*DOCTOR, "check", "--isolated", "--input-format", fmt, path], loop + [path])
        table.timed(f"`check` {item.bytes / 1e9:.2f} GB {fmt}", ours, base, "orjson loop", 1.5)
        peaks[fmt] = max(s.maxrss_mb for s in ours)
    # Issue 15: peak memory of any file, not only chat's.
    listed = ", ".join(f"{fmt} {mb:.0f} MB" for fmt, mb in peaks.items())
    table.add(
        f"| peak memory, `check` of each format's file above | {listed} | chat: {peak_check:.0f} MB | — | ≤ 100 MB | "
        f"{'yes' if max(peaks.values(), default=0) <= 100 else 'NO'} |"
    )

    short_rows(table, made, loop)
    library_row(table)
    (DATA / "last-run.md").write_text("\n".join(table.rows) + "\n")
    return 0


def show_rows(table: Table, made: dict[str, generate.Made]) -> None:
    """Issue 15's `show` rows: its default view against `check` of the same file, and its peak memory, flat."""
    chat, quarter = made["chat"], made["quarter"]
    size = f"{chat.bytes / 1e9:.2f} GB"
    show = [*DOCTOR, "show", "--isolated", "--no-pager", str(chat.path)]
    runs_show, runs_check = alternate(show, [*DOCTOR, "check", "--isolated", str(chat.path)])
    table.timed(f"`show` {size} chat (default view)", runs_show, runs_check, "`check` of the same file", 2.0)
    small = measure([*DOCTOR, "show", "--isolated", "--no-pager", str(quarter.path)])
    peak = max(s.maxrss_mb for s in runs_show)
    flat = abs(peak - small.maxrss_mb) <= 10
    table.add(
        f"| peak memory, `show` {size} | {peak:.0f} MB (`show` of a quarter of the file: {small.maxrss_mb:.0f} MB) "
        f"| `check`: {max(s.maxrss_mb for s in runs_check):.0f} MB | — | ≤ 100 MB, flat | "
        f"{'yes' if peak <= 100 and flat else 'NO'} |"
    )


def short_rows(table: Table, made: dict[str, generate.Made], loop: list[str]) -> None:
    """Issue 15's rows: every shape of file against the bare orjson loop, at its targets."""
    table.add("")
    table.add("Issue 15: short lines (about 600 B a line) and real Claude Code line lengths:\n")
    table.header()
    short = made.get("chat-short")
    if short is not None:
        path = str(short.path)
        size = f"{short.bytes / 1e9:.2f} GB"
        runs_check, runs_loop = alternate([*DOCTOR, "check", "--isolated", "--output-format", "json", path], loop + [path])
        table.timed(f"`check` {size} chat, short lines", runs_check, runs_loop, "orjson loop", 1.0)
        out_file = str(DATA / "repaired-short.jsonl")
        runs_fix, runs_loop2 = alternate([*DOCTOR, "fix", "--isolated", "--output", out_file, path], loop + [path])
        os.unlink(out_file)
        table.timed(f"`fix --output` {size} chat, short lines", runs_fix, runs_loop2, "orjson loop", 1.3)
        runs_check2, runs_std = alternate([*DOCTOR, "check", "--isolated", path], [PYTHON, str(HERE / "stdlib_pairing.py"), path])
        table.timed(f"`check` {size} chat, short lines", runs_check2, runs_std, "stdlib json pairing script", 3.0, faster=True)
    chat = made["chat"]
    ours, base = alternate([*DOCTOR, "check", "--isolated", str(chat.path)], loop + [str(chat.path)])
    table.timed(f"`check` {chat.bytes / 1e9:.2f} GB chat, long lines (issue 15 target)", ours, base, "orjson loop", 1.0)
    for name, item in made.items():
        if not name.endswith(("-short", "-real")) or name == "chat-short":
            continue
        fmt = _format_of(name)
        path = str(item.path)
        ours, base = alternate([*DOCTOR, "check", "--isolated", "--input-format", fmt, path], loop + [path])
        shape = "short lines" if name.endswith("-short") else "real Claude Code line lengths"
        if "-agent-" in name:
            shape += ", a sub-agent's file"
        table.timed(f"`check` {item.bytes / 1e9:.2f} GB {fmt}, {shape}", ours, base, "orjson loop", 1.2)


def _format_of(name: str) -> str:
    """The format of a data file: ``claude-code-agent-real`` is a claude-code file."""
    fmt = name.rsplit("-", 1)[0] if name.endswith(("-short", "-real")) else name
    return "claude-code" if fmt == "claude-code-agent" else fmt


def library_row(table: Table) -> None:
    size = max(1000, int(300_000 * SCALE))
    # A run takes under a second a side, and this VM's memory-bound timings swing by 10% from run to run:
    # more runs give the median a steadier footing than the file rows' five.
    runs = max(RUNS, 11)
    out = subprocess.run([PYTHON, str(HERE / "library.py"), str(size), str(runs)], capture_output=True, text=True, check=False)
    try:
        lib = json.loads(out.stdout)
    except ValueError:
        table.add(f"| library: LangChain middleware | failed: {out.stderr.strip()[-300:]} | | | ≤ 1.0 | NO |")
        return
    what = (
        f"library: `InterruptedToolCallsMiddleware.before_agent`, {lib['messages']:,} LangChain messages "
        f"({lib['dangling']:,} dangling calls; `repair_messages` on them as dicts: {lib['plain']:.3f} s)"
    )
    if "peer" not in lib:
        table.add(f"| {what} | not measured: {lib['peer_missing']} | — | — | ≤ 1.0 | not measured |")
        return
    ratio = lib["ours"] / lib["peer"]
    table.add(
        f"| {what} | {lib['ours']:.3f} s wall | deepagents `PatchToolCallsMiddleware.before_agent`: {lib['peer']:.3f} s wall "
        f"| {ratio:.2f}× | ≤ 1.0 | {'yes' if ratio <= 1.0 else 'NO'} |"
    )


if __name__ == "__main__":
    sys.exit(main())
