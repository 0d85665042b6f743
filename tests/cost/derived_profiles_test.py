#!/usr/bin/python3
"""The derived GPU profiles that ship (platforms/devices/{gtx1080ti,v100,a100,
h100}.json) are what scripts/calibrate/derive_gpu_profiles.py makes from its
published figures today, value for value: a figure changed in the script
without rerunning it, or a profile edited by hand, fails here. Built in this
process; nothing is written.

Usage: derived_profiles_test.py
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "calibrate"))
import derive_gpu_profiles  # noqa: E402

failures = []
for key, gpu in derive_gpu_profiles.GPUS.items():
    path = os.path.join(ROOT, "platforms", "devices", key + ".json")
    with open(path) as f:
        shipped = json.load(f)
    # Through JSON, as the script writes it, so that tuples and lists compare alike.
    made = json.loads(json.dumps(derive_gpu_profiles.build(key, gpu, None)))
    if made != shipped:
        differing = sorted(k for k in set(made) | set(shipped) if made.get(k) != shipped.get(k))
        failures.append(f"{os.path.relpath(path, ROOT)}: differs from the script's in {differing}; "
                        f"rerun /usr/bin/python3 scripts/calibrate/derive_gpu_profiles.py")
if len(derive_gpu_profiles.GPUS) != 4:
    failures.append(f"expected the 4 derived GPUs, the script has {sorted(derive_gpu_profiles.GPUS)}")
for failure in failures:
    print("FAIL", failure)
if not failures:
    print(f"ok  {len(derive_gpu_profiles.GPUS)} derived profiles are the script's")
sys.exit(1 if failures else 0)
