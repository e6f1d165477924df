"""Context for the --jobs row: how much parallel headroom the machine has right now.

python bench/burn.py N   ->  pure-Python CPU work split over N processes (N=1: one process)
"""

import sys
from concurrent.futures import ProcessPoolExecutor

WORK = 8_000_000


def burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


if __name__ == "__main__":
    jobs = int(sys.argv[1])
    if jobs == 1:
        for _ in range(4):
            burn(WORK)
    else:
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(burn, [WORK] * 4))
