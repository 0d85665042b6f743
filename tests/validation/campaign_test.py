#!/usr/bin/python3
"""scripts/minicluster/campaign.py without measuring (no namespace made):

- on committed runs placed in its folder, it keeps them (not a byte
  changed; each campaign is given --python /bin/false, so a run it tried to
  measure would fail the test, never make namespaces) and writes what `gcsim
  validate` gives on each run directly, on its fit (the calibrated platform,
  the comparison, the printed table) and on its description, the figures,
  and errors_over_runs.py's table per cluster; run again, the same files;
- a file in its folder that is not the cluster's run, and every bad
  option (a cluster spec, run.py's own options after --, the options the
  campaign sets, --out a file, no gcsim) are exit 2 with one line, before
  anything is written or measured; a run gcsim refuses is exit 2, gcsim's
  line and the campaign's; a dry run says what it would measure and
  writes nothing;
- a SIGTERM to the campaign reaches the command it runs (run.py, which then
  removes its namespaces) and the campaign waits for it to end before it
  exits 1 with one line.

Usage: campaign_test.py PATH/TO/gcsim
"""
import filecmp
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESULTS = os.path.join(ROOT, "results", "validation")
CAMPAIGN = os.path.join(ROOT, "scripts", "minicluster", "campaign.py")
GCSIM = os.path.abspath(sys.argv[1])
failures = []

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from checks import refusal_problems  # noqa: E402

# Two committed runs, one of each rate naming (100mbit, 1gbit).
RUNS = {"minicluster-p4-100mbit.json": "minicluster-p4-100mbit-short.json",
        "minicluster-p8-1gbit.json": "minicluster-p8-1gbit.json"}


def campaign(*args):
    """The campaign with the gcsim under test (a --gcsim in args comes later, and wins)."""
    return subprocess.run(["/usr/bin/python3", CAMPAIGN, "--gcsim", GCSIM, *args],
                          capture_output=True, text=True, timeout=600)


def same_file(a, b):
    return os.path.isfile(a) and os.path.isfile(b) and filecmp.cmp(a, b, shallow=False)


def text_of(path):
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return f.read()


def check(condition, what):
    if not condition:
        failures.append(what)


def placed(folder):
    os.makedirs(folder)
    for name, committed in RUNS.items():
        shutil.copyfile(os.path.join(RESULTS, committed), os.path.join(folder, name))


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "campaign")
    placed(out)
    args = ["--out", out, "--clusters", "4x100,8x1000", "--python", "/bin/false"]
    done = campaign(*args)
    check(done.returncode == 0, f"campaign on placed runs: status {done.returncode}: "
          f"{done.stderr.strip()[-400:]}")
    check(done.stdout.count("(kept): scripts/minicluster/run.py --nodes") == 2,
          f"both runs kept, with what they were measured by: {done.stdout[:400]!r}")
    for name, committed in RUNS.items():
        check(same_file(os.path.join(RESULTS, committed), os.path.join(out, name)), f"{name} changed")
        stem = os.path.join(out, name[:-len(".json")])
        direct = os.path.join(tmp, "direct")
        os.makedirs(direct, exist_ok=True)
        fitted = subprocess.run([GCSIM, "validate", os.path.join(out, name), "--fit",
                                 "--out", os.path.join(direct, "platform.json"),
                                 "--json", os.path.join(direct, "fit.json")],
                                capture_output=True, text=True, timeout=300)
        plain = subprocess.run([GCSIM, "validate", os.path.join(out, name),
                                "--json", os.path.join(direct, "nofit.json")],
                               capture_output=True, text=True, timeout=300)
        check(fitted.returncode == 0 and plain.returncode == 0, f"{name}: gcsim validate failed")
        check(same_file(stem + "-calibrated-platform.json", os.path.join(direct, "platform.json")),
              f"{name}: the calibrated platform is missing or not gcsim's")
        check(text_of(stem + "-fit.txt") == fitted.stdout, f"{name}: -fit.txt is not gcsim's table")
        check(text_of(stem + "-nofit.txt") == plain.stdout, f"{name}: -nofit.txt is not gcsim's table")
        for kind in ("fit", "nofit"):
            mine, its = text_of(f"{stem}-{kind}.json"), text_of(os.path.join(direct, f"{kind}.json"))
            a, b = (json.loads(mine), json.loads(its)) if mine and its else ({}, None)
            check(all(a.get(key) == b.get(key) for key in ("summary", "collectives", "training"))
                  if b else False, f"{name}: -{kind}.json missing or differs from gcsim's")
    for figure in ("validation.png", "validation.pdf", "validation-phases.png"):
        path = os.path.join(out, figure)
        check(os.path.isfile(path) and os.path.getsize(path) > 1000, f"{figure} not drawn")
    errors = text_of(os.path.join(out, "errors.txt")) or ""
    for line in ("4 nodes, 100 Mbit/s: 1 run", "8 nodes, 1 Gbit/s: 1 run", "collectives >= 4 MiB",
                 "dense iteration", "deft iteration"):
        check(line in errors, f"errors.txt lacks {line!r}: {errors[:400]!r}")
    check(errors in done.stdout, "the table is not printed")
    check(not [f for f in os.listdir(out) if f.startswith(".")], "a temporary file left")

    # Again: the same files, the comparisons made anew (those removed come
    # back, deterministically).
    before = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)
              if f.endswith((".json", ".txt"))}
    for made in ("minicluster-p8-1gbit-nofit.json", "minicluster-p4-100mbit-fit.txt", "errors.txt"):
        os.remove(os.path.join(out, made))
    again = campaign(*args)
    check(again.returncode == 0, f"second campaign: status {again.returncode}")
    for f, data in before.items():
        path = os.path.join(out, f)
        check(os.path.isfile(path) and open(path, "rb").read() == data,
              f"{f} missing or different after the second campaign")

    # A file in the folder that is not the cluster's run: refused, nothing compared.
    wrong = os.path.join(tmp, "wrong")
    os.makedirs(wrong)
    shutil.copyfile(os.path.join(RESULTS, RUNS["minicluster-p4-100mbit.json"]),
                    os.path.join(wrong, "minicluster-p8-100mbit.json"))
    problems = refusal_problems(campaign("--out", wrong, "--clusters", "8x100", "--python", "/bin/false"),
                                ["minicluster-p8-100mbit.json: not a run of 8 nodes at 100 Mbit/s"])
    failures += [f"wrong run: {p}" for p in problems]
    check(os.listdir(wrong) == ["minicluster-p8-100mbit.json"], "the wrong run's folder got files")

    # A run gcsim refuses (a negative time): exit 2 as gcsim's, its line first.
    with open(os.path.join(RESULTS, RUNS["minicluster-p4-100mbit.json"])) as f:
        bad_run = json.load(f)
    bad_run["training"][0]["iterations"][3]["iteration_s"] = -1.0
    refused_run = os.path.join(tmp, "refused")
    os.makedirs(refused_run)
    with open(os.path.join(refused_run, "minicluster-p4-100mbit.json"), "w") as f:
        json.dump(bad_run, f)
    done = campaign("--out", refused_run, "--clusters", "4x100", "--python", "/bin/false")
    lines = done.stderr.strip().splitlines()
    check(done.returncode == 2 and len(lines) == 2 and "/training/0/iterations/3/iteration_s" in lines[0]
          and lines[1] == "campaign.py: compare 4 nodes at 100 Mbit/s on its fit: refused, as the "
          "line above says", f"a run gcsim refuses: status {done.returncode}, {lines!r}")
    check(sorted(os.listdir(refused_run)) == ["minicluster-p4-100mbit.json"],
          f"a refused run's folder got files: {os.listdir(refused_run)}")

    # A dry run of a folder that is not there: what it would measure, nothing made.
    fresh = os.path.join(tmp, "fresh")
    dry = campaign("--out", fresh, "--dry-run", "--scheduling")
    check(dry.returncode == 0 and dry.stdout.count("to measure") == 8,
          f"dry run: status {dry.returncode}, {dry.stdout!r}")
    check(not os.path.exists(fresh), "the dry run made its folder")

    # Bad options: one line, exit 2, nothing made (and nothing measured).
    a_file = os.path.join(tmp, "a-file")
    open(a_file, "w").close()
    for bad, words in [
            (["--clusters", "4y100"], ["--clusters: '4y100' is not NODESxRATE"]),
            (["--clusters", "4x100,4x100"], ["--clusters: '4x100' twice"]),
            (["--clusters", "4x100,4x100.0"], ["--clusters: '4x100.0' twice"]),
            (["--clusters", "4x1_000"], ["--clusters: '4x1_000' is not NODESxRATE"]),
            (["--clusters", "4x100,"], ["--clusters: '' is not NODESxRATE"]),
            (["--clusters", "4x100.5", "--scheduling"], ["'4x100.5': --scheduling takes whole Mbit/s"]),
            (["--clusters", "20x100"], ["20 nodes at 100 Mbit/s: run.py --nodes: 20 is not 2..16"]),
            (["--clusters", "4x5000"], ["4 nodes at 5 Gbit/s: run.py --rate: 5000"]),
            (["--", "--nodes", "3"], ["--nodes after --: the campaign gives each run its --nodes"]),
            (["--", "--out=x.json"], ["--out=x.json after --"]),
            (["--", "--pyth", "/opt/py"], ["--pyth after --: the campaign gives each run"]),
            (["--", "--help"], ["--help after --: run.py's options only"]),
            (["--", "--"], ["-- after --: run.py's options only"]),
            (["--", "--bogus"], ["campaign.py: run.py: unrecognized arguments: --bogus"]),
            (["--", "--iterations", "3", "--warmup", "5"], ["run.py --warmup: 5 is not 0..2"]),
            (["--gcsim", os.path.join(tmp, "none")], ["--gcsim:", "is not an executable file"]),
            (["--trace", a_file], ["--trace:", "is not a folder"])]:
        target = os.path.join(tmp, "bad")
        problems = refusal_problems(
            campaign("--out", target, "--python", "/bin/false", *bad), words)
        failures += [f"{' '.join(bad)}: {p}" for p in problems]
        check(not os.path.exists(target), f"{' '.join(bad)}: made --out")
    failures += [f"--out a file: {p}" for p in refusal_problems(
        campaign("--out", a_file, "--dry-run"), [f"--out: {a_file} is not a folder"])]
    dangling = os.path.join(tmp, "dangling")
    os.symlink(os.path.join(tmp, "nowhere"), dangling)
    failures += [f"--out a dangling link: {p}" for p in refusal_problems(
        campaign("--out", dangling, "--python", "/bin/false"), [f"--out: {dangling} is not a folder"])]
    failures += [f"--out empty: {p}" for p in refusal_problems(
        campaign("--out", "", "--dry-run"), ["--out: empty"])]

    # A signal to the campaign reaches the command it runs, which is waited for.
    mark = os.path.join(tmp, "mark")
    stand_in = ("import signal, sys, time\n"
                "def stop(*_):\n"
                "    time.sleep(0.5)  # a teardown that takes a while\n"
                f"    open({mark!r}, 'w').write('torn down')\n"
                "    sys.exit(1)\n"
                "signal.signal(signal.SIGTERM, stop)\n"
                "print('ready', flush=True)\n"
                "for _ in range(600):\n"
                "    time.sleep(0.1)  # in slices, so that its handler runs on time\n")
    driver = ("import sys\n"
              f"sys.path.insert(0, {os.path.dirname(CAMPAIGN)!r})\n"
              "import campaign\n"
              "try:\n"
              f"    campaign.Child().run([sys.executable, '-c', {stand_in!r}], 'stand-in')\n"
              "except KeyboardInterrupt as why:\n"
              "    sys.exit(f'stopped ({why})')\n")
    parent = subprocess.Popen(["/usr/bin/python3", "-c", driver], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    for line in parent.stdout:
        if line.strip() == "ready":
            break
    parent.send_signal(signal.SIGTERM)
    started = time.time()
    _, stderr = parent.communicate(timeout=30)
    check(parent.returncode == 1 and stderr.strip() == f"stopped (signal {int(signal.SIGTERM)})",
          f"signalled campaign: status {parent.returncode}, {stderr.strip()!r}")
    check(os.path.exists(mark), "the command the campaign ran did not get its SIGTERM, or was not "
          "waited for")
    check(time.time() - started < 20, "the signalled campaign took too long to end")

print(errors)
if failures:
    print("FAILED:\n  " + "\n  ".join(failures))
sys.exit(1 if failures else 0)
