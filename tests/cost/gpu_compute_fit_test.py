#!/usr/bin/python3
"""The GPU compute calibration scripts (scripts/calibrate/):

- fit_compute.py recovers a known compute model (layer latency, backward rate
  half the forward one, per-kind efficiency) from whole-pass times made with
  it, prints passes that match them, and writes no model_times without
  --model-times; a negative latency comes out 0; with --model-times each
  inner batch is interpolated exactly from the others (passes linear in the
  batch), and a batch measured twice is refused;
- run on the committed H200 layer times it writes exactly the committed
  platforms/devices/h200.json, so the profile is what the script fits, and
  the measured layer times it stores add up to the passes they came from;
  likewise h200-tf32.json and h200-bf16.json from the TF32 and BF16-autocast
  times, whose forward rate is their own GEMM's in that precision and whose
  unmeasured kinds keep h200.json's FLOP rates;
- precisions mixed (TF32, autocast and FP32 times), an unknown autocast
  type, and --forward-rate-from-times on a file without a GEMM rate, exit 2
  naming the file and the field;
- a file that is not time_models_cuda.py's output, or lacks one of its
  fields, exits 2 naming the file and the field;
- a profile rate that is NaN, infinite, zero or negative, and one batch size
  alone (whose fit gives a kind no positive time per FLOP), exit 2 with one
  line and write nothing (an earlier --out stays as it was);
- time_models_cuda.py, on the CPU, times every layer of a workload model and
  its per-layer forward times fit inside the pass they were taken in, and
  the GEMM of --gemm-size, and says when it ran under --autocast; bad
  counts, an unknown model and an unwritable --out are refused before any
  timing;
- generate_workloads.py refuses --only without names or with an unknown one,
  and an --out it cannot make a folder of, before writing anything; it
  writes the committed BERT, small CNN, ResNet-18 and LSTM specs exactly;
  a grouped or depthwise convolution (no shipped model has one) is counted
  at in_channels / groups products per output, not in_channels.

Usage: gpu_compute_fit_test.py
"""
import json
import shutil
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPTS = os.path.join(ROOT, "scripts", "calibrate")
DEVICES = os.path.join(ROOT, "platforms", "devices")
PYTHON = "/usr/bin/python3"

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
from checks import Checks, refusal_problems  # noqa: E402

check = Checks()


def fit(args):
    return subprocess.run([PYTHON, os.path.join(SCRIPTS, "fit_compute.py"), *args],
                          capture_output=True, text=True, timeout=120)


def synthetic_layer_times(path, batch, latency, per_flop, ratio, scale=1.0, backward_per_flop=None,
                          names=("resnet50-imagenet", "vgg16-imagenet", "alexnet-imagenet")):
    """Passes of three workload models (or `names`) as the compute model
    gives them (times `scale`); `backward_per_flop` (per kind) replaces
    ratio x per_flop backward."""
    backward_per_flop = backward_per_flop or {k: ratio * v for k, v in per_flop.items()}
    models = {}
    for name in names:
        with open(os.path.join(ROOT, "workloads", "models", name + ".json")) as spec_file:
            spec = json.load(spec_file)
        forward = [scale * (latency + per_flop[layer["kind"]] * layer["forward_flops"] * batch)
                   for layer in spec["layers"]]
        backward = [scale * (latency + backward_per_flop[layer["kind"]] * layer["backward_flops"]
                             * batch) for layer in spec["layers"]]
        models[name] = {
            "batch": batch,
            "plain_forward_median_s": sum(forward),
            "plain_backward_median_s": sum(backward),
            "layers": [{"name": layer["name"], "module": "?", "forward_s": f, "backward_s": b}
                       for layer, f, b in zip(spec["layers"], forward, backward)],
        }
    data = {"format": "gcsim-layer-times/1", "command": "synthetic", "date": "2026-11-30",
            "torch_version": "none", "models": models}
    with open(path, "w") as file:
        json.dump(data, file)


def rate_of(text):
    assert text.endswith("Tflops"), text
    return float(text[:-len("Tflops")]) * 1e12


with tempfile.TemporaryDirectory() as tmp:
    # 1. A known model comes back out of the fit, its backward rate half
    # the forward one (a forward and a backward time per FLOP that differ,
    # so that the passes the script prints cannot take one for the other).
    rate = rate_of(json.load(open(os.path.join(DEVICES, "h200.json")))["compute"]["forward_flop_rate"])
    efficiency = {"conv": 0.8, "linear": 0.3, "norm": 0.02}
    per_flop = {kind: 1 / (rate * e) for kind, e in efficiency.items()}
    latency = 20e-6
    files = []
    for batch in (32, 128):
        files.append(os.path.join(tmp, f"b{batch}.json"))
        synthetic_layer_times(files[-1], batch, latency, per_flop, ratio=2.0)
    out = os.path.join(tmp, "fitted.json")
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *files, "--out", out])
    check(done.returncode == 0, f"fit of synthetic passes: status {done.returncode}: {done.stderr}")
    if done.returncode == 0:
        written = json.load(open(out))
        compute = written["compute"]
        got_latency = float(compute["layer_latency"][:-len("us")]) * 1e-6
        check(abs(got_latency / latency - 1) < 1e-3, f"layer latency {got_latency} != {latency}")
        check(abs(rate_of(compute["backward_flop_rate"]) / (rate / 2) - 1) < 1e-3,
              f"backward rate {compute['backward_flop_rate']} != half the forward rate {rate}")
        # Without --model-times the --profile's measured times (h200.json's)
        # are not carried into a profile whose compute model they no longer match.
        check("model_times" not in written,
              f"without --model-times the --profile's model_times are dropped: {sorted(written)}")
        # The passes printed for the fit are the measured ones: the error column
        # of every model says 0.0%.
        block = done.stdout.split("on the fit (error: both passes)", 1)[-1].split("held out", 1)[0]
        rows = [line for line in block.splitlines() if "imagenet" in line]
        check(len(rows) == 6 and all(row.endswith(("+0.0%", "-0.0%")) for row in rows),
              f"the fit's printed passes are the measured ones:\n{block}")
        for kind, e in efficiency.items():
            check(abs(compute["efficiency"][kind] / e - 1) < 1e-3,
                  f"efficiency of {kind}: {compute['efficiency'][kind]} != {e}")

    # BERT's passes beside the CNNs': its embeddings, gathers of almost no
    # time, cannot be fitted (they came out negative) and keep the profile's
    # efficiency, here 0.05 where the passes were made with 0.5; the other
    # kinds still come back.
    with_bert = []
    embedding = json.load(open(os.path.join(DEVICES, "h200.json")))["compute"]["efficiency"][
        "embedding"]
    for batch in (32, 128):
        with_bert.append(os.path.join(tmp, f"bert-b{batch}.json"))
        synthetic_layer_times(with_bert[-1], batch, latency,
                              dict(per_flop, embedding=1 / (rate * 10 * embedding)), ratio=1.0,
                              names=("resnet50-imagenet", "vgg16-imagenet", "alexnet-imagenet",
                                     "bert-base-seq128"))
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *with_bert, "--out", out])
    check(done.returncode == 0, f"fit with BERT: status {done.returncode}: {done.stderr}")
    if done.returncode == 0:
        compute = json.load(open(out))["compute"]
        check(all(abs(compute["efficiency"][kind] / e - 1) < 1e-3
                  for kind, e in efficiency.items())
              and compute["efficiency"]["embedding"] == embedding
              and "not fitted (under 1% of every pass): embedding" in done.stdout,
              f"the efficiencies recovered, the embeddings' kept: {compute['efficiency']}")

    # Every fitted pass a forward one (the backward passes host-bound): the
    # backward rate was the search's bound, 4 times the forward, written
    # without a word.
    forward_only = []
    for path in files:
        data = json.load(open(path))
        for entry in data["models"].values():
            entry["plain_backward_median_s"] *= 1.5
        forward_only.append(path.replace(".json", "-forward-only.json"))
        json.dump(data, open(forward_only[-1], "w"))
    refused_backward = os.path.join(tmp, "forward-only-profile.json")
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *forward_only,
                "--out", refused_backward])
    check(not refusal_problems(done, ["every pass", "forward", "backward rate"], status=2,
                               result_file=refused_backward),
          f"forward passes alone: refused ({done.returncode}: {done.stderr.strip()[-200:]})")

    # One model at two batches has its conv, linear and norm layers in one
    # proportion: any mix of their efficiencies fits, and least squares wrote
    # one (linear 440557 on a real ResNet-18). Refused; with --model-times
    # the measured times are written and the compute section kept.
    alone = []
    for batch in (32, 128):
        alone.append(os.path.join(tmp, f"alone-b{batch}.json"))
        synthetic_layer_times(alone[-1], batch, latency, per_flop, ratio=1.0,
                              names=("resnet50-imagenet",))
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *alone,
                "--out", os.path.join(tmp, "alone.json")])
    # (Its one linear layer is under 1% of the passes: not fitted at all.)
    check(not refusal_problems(done, ["cannot tell apart", "conv", "norm",
                                      "resnet50-imagenet"], status=2)
          and not os.path.exists(os.path.join(tmp, "alone.json")),
          f"one model's kinds are not fitted: {done.returncode}: {done.stderr.strip()}")
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *alone, "--model-times",
                "--out", os.path.join(tmp, "alone.json")])
    if done.returncode == 0:
        written = json.load(open(os.path.join(tmp, "alone.json")))
        given = json.load(open(os.path.join(DEVICES, "h200.json")))
        check(written["compute"] == given["compute"]
              and written["model_times"]["resnet50-imagenet"]["batches"] == [32, 128]
              and "compute model not fitted" in done.stdout,
              "--model-times on one model writes its times and keeps the compute section")
    else:
        check(False, f"--model-times on one model: {done.returncode}: {done.stderr.strip()}")

    # Passes a hundred times faster than the profile's forward rate allows:
    # the fitted efficiencies are past what gcsim reads, so nothing is written.
    fast = []
    for batch in (32, 128):
        fast.append(os.path.join(tmp, f"fast-b{batch}.json"))
        synthetic_layer_times(fast[-1], batch, latency, {k: v / 100 for k, v in per_flop.items()},
                              ratio=1.0)
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *fast,
                "--out", os.path.join(tmp, "fast.json")])
    check(not refusal_problems(done, ["efficiencies above 4", "conv 80", "linear 30", "forward_flop_rate"],
                               status=2) and not os.path.exists(os.path.join(tmp, "fast.json")),
          f"an efficiency past 4 is not written: {done.returncode}: {done.stderr.strip()}")
    percent = os.path.join(tmp, "percent.json")
    with open(os.path.join(DEVICES, "h200.json")) as file:
        profile = json.load(file)
    profile["compute"]["efficiency"]["linear"] = 50
    with open(percent, "w") as file:
        json.dump(profile, file)
    done = fit(["--profile", percent, *files])
    check(not refusal_problems(done, ["/compute/efficiency/linear", "not 50"], status=2),
          f"a percentage in the profile is refused: {done.returncode}: {done.stderr.strip()}")

    # A third batch 20% slower than the model: held out, the fit on the two
    # exact ones predicts it 1/1.2 - 1 = -16.7% off, every model; a hold-out
    # that let the file into its own fit could not.
    slow = os.path.join(tmp, "b64-slow.json")
    synthetic_layer_times(slow, 64, latency, per_flop, ratio=2.0, scale=1.2)
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *files, slow])
    block = done.stdout.split(f"{slow} held out of the fit", 1)[-1].split("held out", 1)[0]
    rows = [line for line in block.splitlines() if "imagenet" in line]
    check(done.returncode == 0 and len(rows) == 3 and all(r.endswith("-16.7%") for r in rows),
          f"the held-out batch is predicted by the fit on the others:\n{done.stdout}")

    # --model-times: each inner batch predicted from the others by gcsim's
    # interpolation between the two batches around it; the passes are
    # linear in the batch, so every prediction is exact (a batch held out
    # between 32 and 96, of 32, 96 and 128, is not weighted by 128).
    inner = []
    for batch in (64, 96):
        inner.append(os.path.join(tmp, f"b{batch}.json"))
        synthetic_layer_times(inner[-1], batch, latency, per_flop, ratio=2.0)
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), files[0], *inner, files[1],
                "--model-times", "--out", os.path.join(tmp, "interpolated.json")])
    block = done.stdout.split("each inner batch interpolated from the others", 1)[-1]
    rows = [line.split() for line in block.splitlines() if "imagenet" in line]
    check(done.returncode == 0 and sorted(int(row[1]) for row in rows) == [64] * 3 + [96] * 3
          and all(row[-1] in ("+0.0%", "-0.0%") for row in rows),
          f"inner batches interpolated exactly from the others:\n{block}")
    # Two files of one batch: which one's times model_times keeps is not
    # for the script to guess.
    twice = os.path.join(tmp, "b32-again.json")
    shutil.copyfile(files[0], twice)
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), files[0], twice, files[1],
                "--model-times", "--out", os.path.join(tmp, "twice.json")])
    check(not refusal_problems(done, ["b32-again.json", "batch 32 measured twice"], status=2,
                               result_file=os.path.join(tmp, "twice.json")),
          f"a batch measured twice: refused ({done.returncode}: {done.stderr.strip()[-200:]})")

    # Passes a microsecond per layer shorter than their FLOPs at the rates:
    # least squares would give a negative layer latency, which gcsim refuses;
    # the latency is 0 and the rates are fitted without it.
    quick = []
    for path in files:
        data = json.load(open(path))
        for name, entry in data["models"].items():
            for layer in entry["layers"]:
                layer["forward_s"] -= latency
                layer["backward_s"] -= latency
            entry["plain_forward_median_s"] -= len(entry["layers"]) * (latency + 1e-6)
            entry["plain_backward_median_s"] -= len(entry["layers"]) * (latency + 1e-6)
        quick.append(path.replace(".json", "-quick.json"))
        json.dump(data, open(quick[-1], "w"))
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *quick,
                "--out", os.path.join(tmp, "quick.json")])
    check(done.returncode == 0
          and json.load(open(os.path.join(tmp, "quick.json")))["compute"]["layer_latency"]
          == "0.000us", f"a negative layer latency is written as 0 ({done.returncode}: "
                        f"{done.stderr.strip()[-200:]})")

    # --backward-per-kind recovers a backward rate of each kind's own (its
    # comparison fit), which the profile's one backward rate cannot.
    backward_tflops = {"conv": 25.0, "linear": 40.0, "norm": 0.5}
    kind_files = []
    for batch in (32, 128):
        kind_files.append(os.path.join(tmp, f"kinds-b{batch}.json"))
        synthetic_layer_times(kind_files[-1], batch, latency, per_flop, ratio=1.0,
                              backward_per_flop={k: 1 / (t * 1e12) for k, t in backward_tflops.items()})
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *kind_files, "--backward-per-kind"])
    line = next((x for x in done.stdout.splitlines() if x.startswith("with a backward rate per kind")), "")
    got = {}
    for part in line.split("TFLOP/s forward / backward", 1)[-1].split(","):
        words = part.split()
        if len(words) == 4:
            got[words[0]] = (float(words[1]), float(words[3]))
    check(done.returncode == 0 and set(got) == set(backward_tflops)
          and all(abs(got[k][0] * 1e12 * per_flop[k] - 1) < 1e-2 for k in got)
          and all(abs(got[k][1] / backward_tflops[k] - 1) < 1e-2 for k in got),
          f"--backward-per-kind recovers each kind's rates: {line!r}")
    check("rates of the measured layer times by kind" in done.stdout,
          "--backward-per-kind prints the measured layers' rates by kind")

    # 2. The committed profile is the fit of the committed layer times.
    measured = sorted(os.path.join(DEVICES, "h200-layer-times", name)
                      for name in os.listdir(os.path.join(DEVICES, "h200-layer-times")))
    tf32_measured = sorted(os.path.join(DEVICES, "h200-tf32-layer-times", name)
                           for name in os.listdir(os.path.join(DEVICES, "h200-tf32-layer-times")))
    refit = os.path.join(tmp, "h200.json")
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *measured, "--model-times",
                "--out", refit])
    check(done.returncode == 0, f"refit of h200: status {done.returncode}: {done.stderr}")
    if done.returncode == 0:
        check(open(refit).read() == open(os.path.join(DEVICES, "h200.json")).read(),
              "platforms/devices/h200.json is not what fit_compute.py --model-times makes of "
              "platforms/devices/h200-layer-times/b*.json")
        # The measured times add up to each pass timed without hooks.
        section = json.load(open(refit))["model_times"]
        for path in measured:
            for name, entry in json.load(open(path))["models"].items():
                at = section[name]["batches"].index(entry["batch"])
                for key, plain in (("forward_s", entry["plain_forward_median_s"]),
                                   ("backward_s", entry["plain_backward_median_s"])):
                    total = sum(layer[key][at] for layer in section[name]["layers"].values())
                    check(abs(total / plain - 1) < 1e-4,
                          f"{name} at batch {entry['batch']}: {key} layers add to {total}, "
                          f"the pass took {plain}")

    # The TF32 and BF16-autocast profiles, made by the devices README's commands.
    for variant, precision in (("tf32", "TF32"), ("bf16", "BF16 autocast")):
        folder = os.path.join(DEVICES, f"h200-{variant}-layer-times")
        files_of_variant = sorted(os.path.join(folder, name) for name in os.listdir(folder))
        committed = os.path.join(DEVICES, f"h200-{variant}.json")
        refit_variant = os.path.join(tmp, f"h200-{variant}.json")
        done = fit(["--profile", os.path.join(DEVICES, "h200.json"), "--forward-rate-from-times",
                    "--model-times", "--name", f"NVIDIA H200 (measured, {precision})",
                    *files_of_variant, "--out", refit_variant])
        check(done.returncode == 0, f"refit of h200-{variant}: status {done.returncode}: "
                                    f"{done.stderr}")
        if done.returncode != 0:
            continue
        check(open(refit_variant).read() == open(committed).read(),
              f"{committed} is not what fit_compute.py makes of {folder}/b*.json")
        fp32, other = (json.load(open(path))["compute"]
                       for path in (os.path.join(DEVICES, "h200.json"), committed))
        rates = [json.load(open(path))["gemm"]["flop_rate"] for path in files_of_variant]
        check(min(rates) <= rate_of(other["forward_flop_rate"]) <= max(rates)
              and rate_of(other["forward_flop_rate"]) > 4 * rate_of(fp32["forward_flop_rate"]),
              f"the {precision} forward rate {other['forward_flop_rate']} is not the files' "
              f"GEMM rates {rates}")
        for kind in ("attention", "embedding", "lstm", "other"):
            kept = (other["efficiency"][kind] * rate_of(other["forward_flop_rate"])
                    / (fp32["efficiency"][kind] * rate_of(fp32["forward_flop_rate"])))
            check(abs(kept - 1) < 2e-3, f"unmeasured {kind}: FLOP rate x{kept} in {precision}")
        check(precision in other["source"] and "FP32" not in other["source"],
              f"the {precision} profile's source says FP32: {other['source']!r}")

    # 3. Not a layer-times file: exit 2, one line naming it.
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as file:
        json.dump({"format": "something-else", "models": {}}, file)
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), bad])
    check(done.returncode == 2 and done.stderr.count("\n") == 1 and bad in done.stderr
          and "/format" in done.stderr, f"bad file: status {done.returncode}: {done.stderr!r}")
    def refused(change, field, what):
        """Exit 2 and one line naming `field` for the first layer-times file after `change`."""
        data = json.load(open(files[0]))
        change(data["models"]["vgg16-imagenet"])
        with open(bad, "w") as file:
            json.dump(data, file)
        done = fit(["--profile", os.path.join(DEVICES, "h200.json"), bad])
        check(done.returncode == 2 and done.stderr.count("\n") == 1
              and f"/models/vgg16-imagenet/{field}" in done.stderr,
              f"{what}: status {done.returncode}: {done.stderr!r}")

    # Without the passes timed without hooks (an older time_models_cuda.py's).
    refused(lambda model: model.pop("plain_backward_median_s"), "plain_backward_median_s",
            "missing field")
    # A batch no scenario can ask for (it made the fitted rates overflow).
    refused(lambda model: model.update(batch=2 ** 63), "batch", "absurd batch")

    # A rate that is no rate: exit 2, one line naming the field, no profile
    # written (it wrote NaN, a negative rate or a ZeroDivisionError).
    previous = os.path.join(tmp, "previous.json")
    with open(previous, "w") as file:
        file.write("the user's earlier output\n")

    def refused_fit(args, needles, what, status=2):
        done = fit([*args, "--out", previous])
        problems = refusal_problems(done, needles, status=status)
        problems += ["a traceback"] if "Traceback" in done.stderr else []
        if open(previous).read() != "the user's earlier output\n":
            problems.append("the earlier --out was overwritten")
        check(not problems, f"{what}: refused, --out left as it was ({problems})")

    for rate in ("nanTflops", "infTflops", "-5Tflops", "0Tflops"):
        profile = json.load(open(os.path.join(DEVICES, "h200.json")))
        profile["compute"]["forward_flop_rate"] = rate
        bad_profile = os.path.join(tmp, "bad-profile.json")
        with open(bad_profile, "w") as file:
            json.dump(profile, file)
        refused_fit(["--profile", bad_profile, *files], ["bad-profile.json",
                                                        "/compute/forward_flop_rate", rate],
                    f"forward_flop_rate {rate}")
    # One batch size: the README's `--batch 64` file alone cannot separate the
    # layer latency from the rates (it was a ValueError traceback).
    refused_fit(["--profile", os.path.join(DEVICES, "h200.json"),
                 os.path.join(DEVICES, "h200-layer-times", "b64.json")],
                ["b64.json", "one batch size"], "one layer-times file")
    # A first file without `date`, which the written profile cites (KeyError).
    data = json.load(open(files[0]))
    del data["date"]
    with open(bad, "w") as file:
        json.dump(data, file)
    refused_fit(["--profile", os.path.join(DEVICES, "h200.json"), bad, files[1]],
                ["bad.json", "/date"], "a layer-times file without date")
    # An unwritable --out: exit 1, one line.
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *files,
                "--out", "/proc/no-such-folder/h200.json"])
    check(not refusal_problems(done, ["cannot write /proc/no-such-folder/h200.json"], status=1),
          f"unwritable --out: exit 1, one line ({done.returncode}: {done.stderr!r})")

    # --out onto a layer-times file replaced it with a profile; an empty one
    # wrote nothing without a word. --out onto --profile is the refit in place.
    victim = os.path.join(tmp, "victim.json")
    shutil.copyfile(files[0], victim)
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), victim, *files[1:],
                "--out", victim])
    check(not refusal_problems(done, ["--out", "is also an input", "victim.json"])
          and open(victim).read() == open(files[0]).read(),
          f"--out onto a layer-times file: refused, the file kept ({done.stderr!r})")
    done = fit(["--profile", os.path.join(DEVICES, "h200.json"), *files, "--out", ""])
    check(not refusal_problems(done, ["--out", "empty"]), f"--out '': refused ({done.stderr!r})")

    # Precisions mixed, or no GEMM rate to take: exit 2 naming the file.
    refused_fit(["--profile", os.path.join(DEVICES, "h200.json"), tf32_measured[0], measured[1]],
                [os.path.basename(measured[1]), "/settings", "FP32", "TF32"],
                "TF32 and FP32 times in one fit")
    refused_fit(["--profile", os.path.join(DEVICES, "h200.json"), "--forward-rate-from-times",
                 *measured], ["/gemm/flop_rate", "--forward-rate-from-times"],
                "--forward-rate-from-times on files without a GEMM rate")

    # 4. time_models_cuda.py on the CPU.
    def time_models(*args):
        return subprocess.run([PYTHON, os.path.join(SCRIPTS, "time_models_cuda.py"), "--device",
                               "cpu", "--warmup", "1", "--iterations", "1", "--batch", "2", *args],
                              capture_output=True, text=True, timeout=300)

    refused_times = os.path.join(tmp, "refused-times.json")
    for args, needles, status in [
            (["--iterations", "0"], ["--iterations", "0"], 2),  # StatisticsError
            (["--batch", "-1"], ["--batch", "-1"], 2),  # torch's RuntimeError
            (["--warmup", "-3"], ["--warmup", "-3"], 2),  # taken
            (["--gemm-size", "-1"], ["--gemm-size", "-1"], 2),  # torch's RuntimeError
            # Found only after timing the models before it.
            (["--models", "resnet18-cifar10,nosuchmodel"], ["--models", "nosuchmodel"], 2)]:
        done = time_models("--models", "resnet18-cifar10", *args, "--out", refused_times)
        problems = refusal_problems(done, needles, status=status, result_file=refused_times)
        problems += ["it timed a model"] if "forward" in done.stdout else []
        check(not problems, f"time_models_cuda.py {' '.join(args)}: refused first ({problems})")
    done = time_models("--models", "resnet18-cifar10", "--out", "/proc/no-such-folder/t.json")
    problems = refusal_problems(done, ["cannot write /proc/no-such-folder/t.json"], status=1)
    problems += ["it timed a model"] if "forward" in done.stdout else []
    check(not problems, f"time_models_cuda.py, unwritable --out: exit 1 before timing ({problems})")
    # As root, /dev/null passed the check (a temporary could be made in /dev)
    # and the timings were thrown away.
    done = time_models("--models", "resnet18-cifar10", "--out", "/dev/null")
    problems = refusal_problems(done, ["--out: /dev/null exists and is not a regular file"])
    problems += ["it timed a model"] if "forward" in done.stdout else []
    check(not problems, f"time_models_cuda.py --out /dev/null: exit 2 before timing ({problems})")

    times = os.path.join(tmp, "cpu.json")
    done = subprocess.run([PYTHON, os.path.join(SCRIPTS, "time_models_cuda.py"), "--device", "cpu",
                           "--models", "resnet18-cifar10", "--batch", "2", "--warmup", "1",
                           "--iterations", "2", "--gemm-size", "64", "--out", times],
                          capture_output=True, text=True, timeout=300)
    check(done.returncode == 0, f"time_models_cuda.py: status {done.returncode}: {done.stderr}")
    if done.returncode == 0:
        gemm = json.load(open(times)).get("gemm", {})
        check(gemm.get("size") == 64 and gemm.get("median_s", 0) > 0
              and abs(gemm.get("flop_rate", 0) * gemm["median_s"] / (2 * 64 ** 3) - 1) < 1e-9,
              f"the GEMM of --gemm-size 64 is not recorded: {gemm}")
        model = json.load(open(times))["models"]["resnet18-cifar10"]
        check(model.get("batch") == 2 and model.get("warmup") == 1 and model.get("iterations") == 2,
              f"the file records the batch, warm-ups and timed iterations run: "
              f"{ {k: model.get(k) for k in ('batch', 'warmup', 'iterations')} }")
        spec = json.load(open(os.path.join(ROOT, "workloads", "models", "resnet18-cifar10.json")))
        timed = {layer["name"] for layer in model["layers"]}
        missing = [layer["name"] for layer in spec["layers"] if layer["name"] not in timed]
        check(not missing, f"layers not timed: {missing}")
        check(all(layer["forward_s"] > 0 and layer["backward_s"] >= 0 for layer in model["layers"]),
              "a layer's time is not positive")
        # Modules run one after the other inside the forward pass. The lower
        # bounds only say that the layers hold much of the pass: time a
        # process waits for a core between two modules (ticks of 4 ms on a
        # loaded 2-core machine, against a pass of about 30 ms here) adds to
        # the pass alone, and a bound of one half failed once under load.
        forward_sum = sum(layer["forward_s"] for layer in model["layers"])
        check(0.25 * model["forward_mean_s"] < forward_sum <= model["forward_mean_s"] * (1 + 1e-9),
              f"per-layer forward {forward_sum} s against the pass's {model['forward_mean_s']} s")
        # Backward intervals partition the pass from the first output gradient on.
        backward_sum = sum(layer["backward_s"] for layer in model["layers"])
        check(0.25 * model["backward_mean_s"] < backward_sum <= model["backward_mean_s"] * (1 + 1e-9),
              f"per-layer backward {backward_sum} s against the pass's {model['backward_mean_s']} s")

    # Mixed precision: the forward passes under autocast, and the file says so;
    # such times do not join FP32 ones in a fit, nor does an unknown type.
    amp_times = os.path.join(tmp, "cpu-bf16.json")
    done = time_models("--models", "resnet18-cifar10", "--autocast", "bf16", "--gemm-size", "64",
                       "--out", amp_times)
    check(done.returncode == 0 and json.load(open(amp_times))["settings"]["autocast"] == "bfloat16",
          f"--autocast bf16: status {done.returncode}: {done.stderr}")
    if done.returncode == 0:
        refused_fit(["--profile", os.path.join(DEVICES, "h200.json"), measured[0], amp_times],
                    ["cpu-bf16.json", "/settings", "BF16 autocast", "FP32"],
                    "BF16 autocast and FP32 times in one fit")
        data = json.load(open(amp_times))
        data["settings"]["autocast"] = "int8"
        with open(bad, "w") as file:
            json.dump(data, file)
        refused_fit(["--profile", os.path.join(DEVICES, "h200.json"), bad, measured[0]],
                    ["bad.json", "/settings/autocast", "int8"], "an unknown autocast type")
        # Shapes that were tracebacks: settings not an object, an autocast
        # that cannot be hashed, a model named by a path out of workloads/models.
        for change, needles, what in (
                (lambda d: d.update(settings=[1]), ["/settings", "expected an object"],
                 "settings that are a list"),
                (lambda d: d["settings"].update(autocast=[]), ["/settings/autocast"],
                 "an autocast that is a list"),
                (lambda d: d.update(models={"../scenarios/quickstart": next(iter(
                    d["models"].values()))}), ["/models/../scenarios/quickstart"],
                 "a model named by a path")):
            data = json.load(open(amp_times))
            change(data)
            with open(bad, "w") as file:
                json.dump(data, file)
            refused_fit(["--profile", os.path.join(DEVICES, "h200.json"), bad], ["bad.json",
                                                                                 *needles], what)

    # 5. generate_workloads.py: refusals before anything is written. --out is
    # a scratch folder, so that a regression cannot rewrite workloads/models.
    def generate(*args):
        return subprocess.run([PYTHON, os.path.join(ROOT, "scripts", "generate_workloads.py"),
                               *args], capture_output=True, text=True, timeout=300)

    models_out = os.path.join(tmp, "models")
    a_file = os.path.join(tmp, "a-file")
    with open(a_file, "w") as file:
        file.write("not a folder\n")
    for args, needles, status, what in [
            (["--out", models_out, "--only"], ["--only"], 2, "--only without names"),
            (["--out", models_out, "--only", "nosuchmodel"], ["nosuchmodel", "fmnist-cnn"], 2,
             "an unknown model"),
            (["--out", a_file, "--only", "fmnist-cnn"], ["--out", "a-file"], 2, "--out a file"),
            (["--out", "/proc/no-such-folder", "--only", "fmnist-cnn"],
             ["cannot write /proc/no-such-folder"], 1, "an --out it cannot make")]:
        done = generate(*args)
        problems = refusal_problems(done, ["generate_workloads.py: ", *needles], status=status,
                                    result_file=models_out)
        problems += ["a traceback"] if "Traceback" in done.stderr else []
        check(not problems, f"generate_workloads.py, {what}: refused, nothing written ({problems})")
    check(open(a_file).read() == "not a folder\n", "generate_workloads.py left --out's file alone")
    # The committed transformer spec is what the generator makes of its
    # architecture (the fits and BERT's measured times find its layers by name);
    # so are the small CNN's, ResNet-18's and the LSTM's, which hold the kinds
    # BERT lacks (conv, batch norm, an LSTM and its tied embedding), each
    # built in well under a second.
    regenerated = ("bert-base-seq128", "fmnist-cnn", "resnet18-cifar10", "lstm-wikitext2")
    done = generate("--out", models_out, "--only", *regenerated)
    for name in regenerated:
        committed = os.path.join(ROOT, "workloads", "models", name + ".json")
        made = os.path.join(models_out, name + ".json")
        check(done.returncode == 0 and open(made).read() == open(committed).read(),
              f"workloads/models/{name}.json is what generate_workloads.py writes "
              f"({done.returncode}: {done.stderr.strip()[-200:]})")
    # A grouped convolution's output sees in_channels / groups inputs: 8 -> 16
    # channels in 4 groups of 3x3 on 10x10 (padding 1) is 2 * 1600 * 18 FLOPs,
    # depthwise (groups 8, 8 -> 8) 2 * 800 * 9.
    done = subprocess.run([PYTHON, "-c", f"""
import sys
sys.path.insert(0, {os.path.join(ROOT, "scripts")!r})
import torch
from generate_workloads import forward_flops
for conv in (torch.nn.Conv2d(8, 16, 3, padding=1, groups=4),
             torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)):
    x = torch.zeros(1, 8, 10, 10)
    print(forward_flops(conv, (x,), conv(x)))
"""], capture_output=True, text=True, timeout=300)
    check(done.returncode == 0 and done.stdout.split() == [str(2 * 1600 * 18), str(2 * 800 * 9)],
          f"grouped and depthwise convolutions: {2 * 1600 * 18} and {2 * 800 * 9} forward FLOPs "
          f"({done.stdout.split()}: {done.stderr.strip()[-200:]})")
    # A model whose forward pass skips a module holding parameters (PyTorch's
    # fused attention in eval mode calls none of its submodules): describe()
    # says which, where a bare assert said the model's name.
    done = subprocess.run([PYTHON, "-c", f"""
import sys
sys.path.insert(0, {os.path.join(ROOT, "scripts")!r})
import torch
from generate_workloads import describe

class Skips(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.used, self.spare = torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.used(x)

try:
    describe("skips", Skips, (1, 4), "none", "sample")
except ValueError as error:
    print(error)
"""], capture_output=True, text=True, timeout=300)
    check(done.returncode == 0 and "skips: the forward pass called modules holding 20 of its 30 "
          "parameters; never called: spare" in done.stdout,
          f"describe() names the modules a forward pass never called ({done.stdout.strip()}: "
          f"{done.stderr.strip()[-200:]})")
    # time_models_cuda.py feeds BERT's token ids, but not the LSTM's
    # (tokens, batch) order.
    done = time_models("--models", "lstm-wikitext2", "--out", os.path.join(tmp, "lstm.json"))
    check(not refusal_problems(done, ["lstm-wikitext2", "bert-base-seq128"], status=2),
          f"time_models_cuda.py refuses the LSTM, naming what it can time: {done.stderr!r}")

check.finish()
