#!/usr/bin/python3
"""scripts/minicluster/run.py's measured-run entry of a training run, from
the ranks' raw timings (no namespace, no process group):

- line_up: a run of collectives took from the last rank's arrival to the
  last rank's end, and the ranks arrived as far apart as the first and the
  last start;
- training_entry: each iteration's phases are the ranks' means, compute is
  forward plus backward, the longest rank's step is kept, and the collectives' arrival spread and time after
  the last arrival add up over the iteration's runs of collectives.

Usage: measured_entry_test.py
"""
import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "minicluster"))
from checks import Checks  # noqa: E402
import run  # noqa: E402

check = Checks()


def close(a, b):
    return abs(a - b) <= 1e-12


# Rank 0 starts at 0 and ends at 5, rank 1 starts at 2 and ends at 6: the
# collectives took 4 once both were there, and the ranks arrived 2 apart.
took, apart = run.line_up([(0.0, 5.0), (2.0, 6.0)])
check(close(took, 4.0) and close(apart, 2.0),
      f"line_up([(0, 5), (2, 6)]) = ({took}, {apart}), want (4, 2)")


def rank_row(forward, backward, groups):
    return dict(iteration_s=forward + backward + 0.004, forward_s=forward, backward_s=backward,
                compression_s=0.001, communication_s=0.002, optimizer_s=0.001, loss=1.0,
                collective_groups=groups)


raw = dict(compressor={"name": "topk", "density": 0.01},
           per_rank=[[rank_row(0.010, 0.020, [(0.0, 0.5), (1.0, 1.2)])],
                     [rank_row(0.012, 0.024, [(0.1, 0.6), (1.1, 1.3)])]],
           layers=[{"name": "conv1", "bytes": 4000}],
           alone_per_rank=[(0.01, 0.02, 0.001, 0.0005), (0.01, 0.02, 0.001, 0.0007)],
           bytes_sent_rank0=1234)
args = argparse.Namespace(nodes=2, barrier=False, density=0.01, batch=32, warmup=0,
                          model="wide-cnn")
entry = run.training_entry("topk", raw, args)
iteration = entry["iterations"][0]
check(close(iteration["forward_s"], 0.011) and close(iteration["backward_s"], 0.022)
      and close(iteration["compute_s"], 0.033),
      f"compute is the ranks' mean forward plus backward: {iteration['forward_s']} + "
      f"{iteration['backward_s']} = {iteration['compute_s']}, want 0.011 + 0.022 = 0.033")
# Two runs of collectives: 0.5 + 0.2 s after the last arrival, 0.1 + 0.1 s apart.
check(close(iteration["collectives_after_last_arrival_s"], 0.7)
      and close(iteration["arrival_spread_s"], 0.2),
      f"collectives after the last arrival {iteration['collectives_after_last_arrival_s']} s "
      f"(want 0.7), arrival spread {iteration['arrival_spread_s']} s (want 0.2)")
# The ranks' steps are 0.034 and 0.040 s: the mean is the step, the longer
# one bounds the arrival spread.
check(close(iteration["iteration_s"], 0.037) and close(iteration["iteration_longest_rank_s"], 0.040),
      f"the step {iteration['iteration_s']} s (want the mean, 0.037), the longest rank's "
      f"{iteration.get('iteration_longest_rank_s')} s (want 0.040)")
check(entry["compressor"] == {"name": "topk", "density": 0.01} and entry["ranks"] == 2
      and entry["bytes_sent_per_worker"] == 1234
      and close(entry["compute_alone"]["compression_s"], 0.0006)
      and entry["workload"]["model"] == "wide-cnn",
      f"the entry's compressor, ranks, bytes, compression alone and model: {entry['compressor']}, "
      f"{entry['ranks']}, {entry.get('bytes_sent_per_worker')}, {entry['compute_alone']}, "
      f"{entry['workload']['model']}")

check.finish()
