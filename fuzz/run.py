"""``make fuzz``: run the fuzz target for a bounded time and print what it found.

Under atheris (coverage-guided libFuzzer) when it imports; otherwise a
hypothesis-driven loop over the same target with the same time budget. Seeds
are the golden case inputs and the shared corpus, under every format choice.
Prints the number of inputs tried and of crashes; exits 1 if any crash.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MAX_LEN = 1 << 16
CRASHES = HERE / "crashes"


def seeds() -> list[bytes]:
    sources = sorted((ROOT / "tests" / "cases").glob("*/*/input.jsonl"))
    corpus = ROOT / ".." / "shared" / "corpus"
    if corpus.is_dir():
        sources += sorted(corpus.glob("*/*.jsonl"))
    found = []
    for i, path in enumerate(sources):
        data = path.read_bytes()[: MAX_LEN - 2]
        found.append(bytes([i % 251, i % 8]) + data)
    return found


def with_atheris(seconds: int) -> tuple[int, int]:
    work = Path(tempfile.mkdtemp(prefix="apx-fuzz-"))
    corpus = work / "corpus"
    corpus.mkdir()
    for i, seed in enumerate(seeds()):
        (corpus / f"seed-{i:04d}").write_bytes(seed)
    log = work / "fuzz.log"
    command = [
        sys.executable,
        str(HERE / "fuzz_stream.py"),
        f"-max_total_time={seconds}",
        f"-max_len={MAX_LEN}",
        "-rss_limit_mb=4096",
        "-timeout=30",
        f"-artifact_prefix={work}/",
        str(corpus),
    ]
    with open(log, "wb") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, check=False).returncode
    text = log.read_text(errors="replace")
    done = re.findall(r"Done (\d+) runs", text)
    runs = [int(n) for n in re.findall(r"#(\d+)\s", text)]
    tried = int(done[-1]) if done else max(runs, default=0)
    crashes = sorted(work.glob("crash-*")) + sorted(work.glob("timeout-*")) + sorted(work.glob("oom-*"))
    if crashes or code != 0:
        CRASHES.mkdir(exist_ok=True)
        for crash in crashes:
            shutil.copy(crash, CRASHES / crash.name)
        tail = "\n".join(text.splitlines()[-40:])
        print(tail, file=sys.stderr)
        print(f"crash inputs copied to {CRASHES}; full log: {log}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return tried, max(len(crashes), 1 if code != 0 else 0)


def with_hypothesis(seconds: int) -> tuple[int, int]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    sys.path.insert(0, str(HERE))
    from fuzz_stream import one_input

    pool = seeds()
    tried = crashes = 0
    failures: list[bytes] = []

    def mutate(seed: bytes, cuts: list[tuple[int, bytes]]) -> bytes:
        data = bytearray(seed)
        for pos, piece in cuts:
            pos %= len(data) + 1
            data[pos : pos + len(piece) // 2] = piece
        return bytes(data)

    inputs = st.one_of(
        st.binary(max_size=2048),
        st.builds(mutate, st.sampled_from(pool), st.lists(st.tuples(st.integers(0, MAX_LEN), st.binary(max_size=8)), max_size=6)),
    )

    @settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(inputs)
    def loop(data: bytes) -> None:
        nonlocal tried, crashes
        tried += 1
        try:
            one_input(data)
        except Exception:  # any exception is a crash to count and keep  # noqa: BLE001
            crashes += 1
            failures.append(data)
            traceback.print_exc()

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        loop()
    if failures:
        CRASHES.mkdir(exist_ok=True)
        for i, data in enumerate(failures[:20]):
            (CRASHES / f"hypothesis-{i:03d}").write_bytes(data)
    return tried, crashes


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--engine", choices=["auto", "atheris", "hypothesis"], default="auto")
    args = parser.parse_args()
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            print("atheris is not available here: falling back to a hypothesis-driven loop", file=sys.stderr)
            engine = "hypothesis"
    tried, crashes = (with_atheris if engine == "atheris" else with_hypothesis)(args.seconds)
    print(f"fuzz ({engine}, {args.seconds} s): {tried} inputs tried, {crashes} crashes")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
