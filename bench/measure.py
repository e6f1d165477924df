"""Run one command as a child and report its wall time, CPU time and peak memory.

    python bench/measure.py CMD...   ->  {"wall": s, "cpu": s, "maxrss_mb": MB, "rc": n}

Run from a fresh process per measurement, so RUSAGE_CHILDREN holds exactly one
child: the command (its own children, if any, count too).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def main() -> int:
    start = time.perf_counter()
    rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # ru_maxrss is in kilobytes on Linux.
    print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "maxrss_mb": usage.ru_maxrss / 1024, "rc": rc}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
