#!/usr/bin/python3
"""Times torch.topk on the CPU for the sizes of compressors_bench's BM_TopK.

Run with Debian's interpreter, which has python3-torch:
    /usr/bin/python3 compressors/bench/torch_topk.py [--repeats N]
Same input shape as the C++ benchmark (heavy-tailed: normal / sqrt(uniform)),
top-k of |x| with sorted=False, at 1 and 2 threads. Prints the median wall time
per call in milliseconds, with |x| computed in the call and precomputed.
"""
import argparse
import statistics
import time

import torch


def heavy_tailed(n, seed):
    g = torch.Generator().manual_seed(seed)
    normal = torch.randn(n, generator=g)
    uniform = torch.rand(n, generator=g).clamp_min(1e-6)
    return normal / uniform.sqrt() * 1e-3


def median_ms(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"torch {torch.__version__}")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for n in (1_000_000, 25_000_000):
            x = heavy_tailed(n, 42)
            for inv_density in (1000, 100):
                k = n // inv_density
                # The magnitude is part of the selection, as in the C++ benchmark;
                # the second figure leaves |x| out, in torch's favour.
                ms = median_ms(lambda: torch.topk(x.abs(), k, sorted=False), args.repeats)
                mags = x.abs()
                ms_pre = median_ms(lambda: torch.topk(mags, k, sorted=False), args.repeats)
                print(f"threads={threads} n={n} k={k} density={1 / inv_density:g} "
                      f"median_ms topk(x.abs())={ms:.3f} topk(precomputed |x|)={ms_pre:.3f}")


if __name__ == "__main__":
    main()
