#!/usr/bin/python3
"""Runs scripts/capture_traces.py on tiny configurations (a few seconds) and
checks what can be checked in Python: the training loss goes down, the same
seed gives byte-identical files, float16 storage reports its precision loss,
and NumPy opens every file; layer times average the captured passes alone,
and --capture-stride 2 keeps every second iteration. In process: float16_loss
on known values, the test split normalised with the training split's
statistics, and LayerTimer on a clock of one tick per mark (a module called
twice sums both calls; each pass's backward intervals end at the next event
or the pass's end). The C++ test then checks the captured data
itself (mean gradient == weight change / lr).

Bad input, to capture_traces.py and to scripts/trace_tools/make_stats_trace.py
(run with a stand-in for gcsim that writes a fixed `inspect --json` report, or
fails): exit status 2 (1 for an output that cannot be written) and one line on
stderr, no traceback, nothing written, and an earlier trace or statistics
folder left as it was: a capture whose training fails (--lr 1e38) does not
replace the old trace, --force does not replace a folder that is no trace,
and make_stats_trace.py never rewrites its source, writes inside it, nor
an OUT_DIR holding another file; its statistics.json holds gcsim inspect's report of each
iteration, every field.
Usage: capture_test.py OUTDIR"""
import filecmp
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from checks import refusal_problems  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "capture_traces.py")
STATS = os.path.join(HERE, "..", "..", "scripts", "trace_tools", "make_stats_trace.py")
OWN_MODEL = os.path.join(HERE, "data", "own_model.py")
OWN_VIT = os.path.join(HERE, "data", "own_vit.py")


def capture(out, *extra):
    model = [] if "--model-file" in extra else ["--model", "cnn"]
    args = ["/usr/bin/python3", SCRIPT, *model, "--dataset", "digits",
            "--workers", "4", "--micro-batch", "16", "--lr", "0.1", "--seed", "5",
            "--out", out, "--force"] + list(extra)
    result = subprocess.run(args, capture_output=True, text=True)
    print(result.stdout)
    if result.returncode != 0:
        sys.exit(f"capture failed: {result.stderr}")
    with open(os.path.join(out, "manifest.json")) as stream:
        return json.load(stream)


def main(out):
    failures = []
    steps = ["--iterations", "40", "--capture-start", "37", "--capture-stride", "1"]
    a = capture(os.path.join(out, "a"), *steps)
    capture(os.path.join(out, "b"), *steps)  # the same seed again: compared file by file
    if a["iterations"] != [37, 38, 39]:
        failures.append(f"captured iterations {a['iterations']}, expected [37, 38, 39]")
    # Layer times average the captured iterations' passes alone (one per
    # worker), not the 37 before them.
    if a["timing"]["samples"] != 3 * 4:
        failures.append(f"timing.samples {a['timing']['samples']}, expected 3 iterations x 4 "
                        "workers")
    first, last = a["loss"][0]["loss"], np.mean([e["loss"] for e in a["loss"][-3:]])
    print(f"loss {first:.4f} at iteration 0, {last:.4f} over the last logged iterations")
    if not last < 0.9 * first:
        failures.append(f"loss did not go down: {first} -> {last}")
    for it in a["iterations"]:
        sub = os.path.join("iterations", f"{it:06d}")
        names = ["weights.npy"] + [f"worker_{w:03d}.npy" for w in range(4)]
        for name in names:
            path_a = os.path.join(out, "a", sub, name)
            if not filecmp.cmp(path_a, os.path.join(out, "b", sub, name), shallow=False):
                failures.append(f"{sub}/{name} differs between two runs with the same seed")
            if np.load(path_a).shape != (a["total_params"],):
                failures.append(f"{path_a}: numpy reads a wrong shape")
    h = capture(os.path.join(out, "f16"), "--iterations", "3", "--dtype", "float16")
    loss16 = h.get("float16_loss")
    if loss16 is None:
        failures.append("float16 capture did not report its precision loss")
    else:
        print("float16 loss:", json.dumps(loss16))
        if not 0 < loss16["max_relative_l2_error"] < 1e-3:
            failures.append(f"float16 relative L2 error {loss16['max_relative_l2_error']}")
    if np.load(os.path.join(out, "f16", "iterations", "000001", "worker_000.npy")).dtype != np.float16:
        failures.append("float16 capture did not store float16")
    # Every second iteration from 1: 1 and 3 of 5, and no folder for the others.
    strided = capture(os.path.join(out, "strided"), "--workers", "2", "--micro-batch", "4",
                      "--iterations", "5", "--capture-start", "1", "--capture-stride", "2")
    folders = sorted(os.listdir(os.path.join(out, "strided", "iterations")))
    if strided["iterations"] != [1, 3] or folders != ["000001", "000003"]:
        failures.append(f"--capture-start 1 --capture-stride 2 of 5: iterations "
                        f"{strided['iterations']}, folders {folders}; expected 1 and 3")
    # A model of one's own (data/own_model.py, importing a module beside
    # it): named after its file, its tensors in the order its forward pass
    # runs them (its head is defined first and runs last), its frozen stem
    # left out, its tied weight once (under the module that runs first),
    # its ReLU run twice a layer per run; the C++ test checks its gradients
    # against the weight change as for "a".
    own = capture(os.path.join(out, "own"), "--model-file", OWN_MODEL, *steps)
    modules = [layer["module"] for layer in own["layers"]]
    timed = {m["name"]: m for m in own["modules"]}
    with open(OWN_MODEL, "rb") as source:
        if own["capture"].get("model_file_sha256") != hashlib.sha256(source.read()).hexdigest():
            failures.append(f"--model-file: the manifest's model_file_sha256 "
                            f"{own['capture'].get('model_file_sha256')} is not the file's")
    relu = [timed.get(f"relu.runs.{n}") for n in (0, 1)]
    expected = ["hidden", "norm", "norm", "mix", "mix", "unmix", "scale", "head", "head"]
    if own["model"] != "own_model" or own["input_shape"] != [1, 8, 8] or modules != expected \
            or own["layers"][3]["name"] != "mix.weight" \
            or own["total_params"] != 2482 or timed.get("unmix", {}).get("params") != 24 \
            or timed.get("stem", {}).get("params") != 0:
        failures.append(f"--model-file: model {own['model']}, input {own['input_shape']}, "
                        f"tensors of {modules}, {own['total_params']} parameters, modules "
                        f"{[(m['name'], m['params']) for m in own['modules']]}; expected "
                        f"own_model, [1, 8, 8], {expected}, 2482, unmix 24 (its weight is "
                        f"mix.weight, mix running first), stem 0 (frozen)")
    # In place, the ReLU overwrote the norm's output, whose gradient hook
    # then fired with the ReLU's: the norm's backward measured 0.25 us, the
    # time between two hooks, where it takes ~20 us (a busy machine only
    # lengthens it; against its forward time, one slow pass failed it).
    norm = timed.get("norm")
    if None in relu or not all(run["backward_s"] > 0 for run in relu) or not norm \
            or not norm["backward_s"] > 2e-6:
        failures.append(f"--model-file: the in-place ReLU run twice was not made a layer per "
                        f"run: {relu} {norm}")
    # A vision transformer of one's own: PyTorch's MultiheadAttention, which
    # holds its input projection beside an out_proj it uses without calling
    # it, is timed whole, its four tensors its own (it was refused, its
    # time nobody's); the C++ test checks its gradients as for "a". Its
    # class token on the model (refused before) and positions beside the
    # norm they feed are layers of their own, after the patches they follow.
    vit = capture(os.path.join(out, "vit"), "--model-file", OWN_VIT, *steps)
    first = [(layer["name"], layer["module"]) for layer in vit["layers"][:6]]
    own = [(m["name"], m["type"], m["params"]) for m in vit["modules"][1:4]]
    if first != [("patch.weight", "patch"), ("patch.bias", "patch"), ("cls", "TinyViT"),
                 ("tokens.pos", "tokens"), ("tokens.norm.weight", "tokens.norm"),
                 ("tokens.norm.bias", "tokens.norm")] \
            or own != [("TinyViT", "TinyViT", 16), ("tokens", "Tokens", 272),
                       ("tokens.norm", "LayerNorm", 32)] \
            or not all(m["forward_s"] > 0 for m in vit["modules"][1:3]):
        failures.append(f"--model-file, a ViT's own parameters: tensors {first}, modules {own} "
                        f"({vit['modules'][1:3]}); expected the class token (TinyViT, 16) and "
                        f"positions (tokens, 272) after the patches, each a layer timed")
    attention = [layer["name"] for layer in vit["layers"]
                 if layer["module"] == "encoder.self_attn"]
    timed = {m["name"]: m for m in vit["modules"]}
    whole = timed.get("encoder.self_attn", {})
    if attention != ["encoder.self_attn.in_proj_weight", "encoder.self_attn.in_proj_bias",
                     "encoder.self_attn.out_proj.weight", "encoder.self_attn.out_proj.bias"] \
            or whole.get("params") != 1088 or not whole.get("forward_s", 0) > 0 \
            or not whole.get("backward_s", 0) > 0 or "encoder.self_attn.out_proj" in timed:
        failures.append(f"--model-file, a ViT: the attention's tensors {attention}, its module "
                        f"{whole}; expected its 4 tensors (1088 parameters), timed whole")
    failures += in_process_checks()
    failures += capture_refusals(os.path.join(out, "a"), os.path.join(out, "refusals"))
    failures += model_file_refusals(out)
    failures += stats_refusals(os.path.join(out, "a"), os.path.join(out, "refusals"))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    return 0


def in_process_checks():
    """float16_loss on known values, the data sets' normalisation, and
    LayerTimer on a clock that ticks once per mark (every interval 1)."""
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import capture_traces
    import torch
    from trace_tools import data
    from trace_tools import timing
    from trace_tools.timing import LayerTimer

    failures = []
    from trace_tools import models
    if capture_traces.MODEL_NAMES != list(models.MODELS):
        failures.append(f"--model's choices {capture_traces.MODEL_NAMES} are not "
                        f"trace_tools.models.MODELS {list(models.MODELS)}")
    # 1000 and 0 exact, 1.0001 rounded to 1 (1e-4 off), 1e-9 flushed to 0.
    loss = capture_traces.float16_loss(np.array([1000, 1e-9, 0, 1.0001], dtype=np.float32))
    if (abs(loss["relative_l2_error"] / (1e-4 / 1000) - 1) > 0.01 or loss["flushed_to_zero"] != 1
            or loss["max_elementwise_relative_error"] != 1.0 or loss["overflow"] != 0):
        failures.append(f"float16_loss of [1000, 1e-9, 0, 1.0001]: {loss}")

    # The test split is normalised with the training split's statistics.
    train, test = data.digits("train")[0], data.digits("test")[0]
    x_test, _ = data.load("digits", "test", 1, 8)
    expected = (test.mean() - train.mean()) / train.std()
    if abs(float(x_test.mean()) - expected) > 1e-5 or abs(expected) < 1e-3:
        failures.append(f"digits test split: mean {float(x_test.mean())} once normalised, "
                        f"expected {expected} (the training split's mean and std)")

    # Tensors in the order the forward pass runs their modules: a model
    # that defines its head first was captured head first, and gcsim
    # refused the trace (exit 0 from the capture). The dry run leaves
    # torch's random state as it was.
    class HeadFirst(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(4, 2)
            self.body = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.5))

        def forward(self, x):
            return self.head(self.body(x))

    def run_order(model, example):
        """The model's parameter names in the order a capture lays them out."""
        layout = timing.Layout(model, timing.modules_run(model, example))
        order, _ = timing.layer_order(model, example, layout)
        return [name for name, _ in timing.parameters_in_run_order(model, layout, order)]

    model = HeadFirst()
    state = torch.get_rng_state()  # the dry runs' dropout draws from it
    ordered = run_order(model, torch.ones(2, 3))
    if ordered != ["body.0.weight", "body.0.bias", "head.weight", "head.bias"]:
        failures.append(f"parameters in run order: {ordered}")
    if not torch.equal(state, torch.get_rng_state()):
        failures.append("the passes that find the run order changed torch's random state")

    class Ticks:
        now = 0

        def mark(self):
            self.now += 1
            return self.now

        def seconds(self, begin, end):
            return end - begin

        def wait(self):
            pass

    class ReluTwice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.act, self.b = torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1)

        def forward(self, x):
            return self.b(self.act(self.act(self.a(x))))

    model = ReluTwice()
    timer = LayerTimer(model, Ticks())
    for _ in range(2):
        timer.run(model, lambda out, y: ((out - y) ** 2).mean(), torch.ones(3, 2),
                  torch.zeros(3, 1))
    # A module's forward time sums its calls; each output gradient's event
    # to the next (the last to the end of the pass) is backward time; both
    # per pass.
    if timer.averages() != [("a", 1, 1), ("act", 2, 2), ("b", 1, 1)]:
        failures.append(f"LayerTimer on one tick per mark, ReLU called twice: "
                        f"{timer.averages()}, expected a 1/1, act 2/2, b 1/1")

    # A module that returns its input as it is (nn.Identity, Dropout(p=0),
    # a Flatten of a flat input) has no backward of its own: it took the
    # layer before's (TransformerEncoderLayer(dropout=0.0)'s attention had 0).
    class PassThrough(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.same, self.b = (torch.nn.Linear(2, 2), torch.nn.Identity(),
                                         torch.nn.Linear(2, 1))

        def forward(self, x):
            return self.b(self.same(self.a(x)))

    model = PassThrough()
    timer = LayerTimer(model, Ticks())
    timer.run(model, lambda out, y: ((out - y) ** 2).mean(), torch.ones(3, 2), torch.zeros(3, 1))
    # One tick each: a's backward is its own (the identity's hook had fired
    # after a's on the same tensor and taken its interval).
    if timer.averages() != [("a", 1, 1), ("same", 1, 0), ("b", 1, 1)]:
        failures.append(f"LayerTimer on a pass-through module: {timer.averages()}, expected "
                        f"a 1/1, same 1/0, b 1/1")
    # A module whose output is a tuple the model uses the second tensor of
    # (an LSTM's (output, (h_n, c_n)), read at h_n): its backward starts at
    # that tensor's gradient. Only the first tensor was marked, so the
    # LSTM's backward time went to the head.
    class LastState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.head = torch.nn.LSTM(2, 2, batch_first=True), torch.nn.Linear(2, 1)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.head(h[-1])

    model = LastState()
    timer = LayerTimer(model, Ticks())
    timer.run(model, lambda out, y: ((out - y) ** 2).mean(), torch.ones(3, 4, 2),
              torch.zeros(3, 1))
    if timer.averages() != [("lstm", 1, 1), ("head", 1, 1)]:
        failures.append(f"LayerTimer on an LSTM read at h_n: {timer.averages()}, expected "
                        f"lstm 1/1, head 1/1")

    # Parameters of a module beside children it calls (a ViT's class token
    # on the model, a block's layer scale after its layers): a layer of
    # their own, named after the module (the model after its class), timed
    # as the module less its timed calls, placed where their gradient falls
    # in the backward. They were refused (on the model) or made the whole
    # block one layer.
    class LayerScaled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner, self.scale = torch.nn.Linear(2, 2), torch.nn.Parameter(torch.ones(2))

        def forward(self, x):
            return self.inner(x) * self.scale

    class Tempered(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.temperature = torch.nn.Parameter(torch.ones(1))
            self.a, self.block, self.b = (torch.nn.Linear(2, 2), LayerScaled(),
                                          torch.nn.Linear(2, 1))

        def forward(self, x):
            return self.b(self.block(self.a(x * self.temperature)))

    x, y = torch.ones(3, 2), torch.zeros(3, 1)

    def ticked(model):
        """(layout, timer) of one pass of `model` on x, y, its layout found
        by a pass as the capture finds it, on the clock of one tick a mark,
        where a timed call's forward hook also takes 50 ticks after its
        last mark of the module's time (the hooks' own cost: not a split
        module's time)."""
        layout = timing.Layout(model, timing.modules_run(model, x))
        clock = Ticks()
        timer = LayerTimer(model, clock, layout)
        plain = timing.gradient_outputs

        def costly(*arguments):
            clock.now += 50
            return plain(*arguments)

        timing.gradient_outputs = costly
        try:
            timer.run(model, lambda out, y: ((out - y) ** 2).mean(), x, y)
        finally:
            timing.gradient_outputs = plain
        return layout, timer

    model = Tempered()
    layout, timer = ticked(model)
    # Forward: the model's 167 ticks less its 3 calls' extents, entry to
    # leave, hooks included (53, 57 and 53); the block's 55 less its
    # inner's 53 (their begin-to-end spans alone, 1, 55 and 1, left the
    # hooks' 150 ticks to the model). Backward: one tick from each event,
    # the scale's gradient before the inner layer's backward, the
    # temperature's last of all (so first in the forward order).
    expected = [("Tempered", 4, 1), ("a", 1, 1), ("block.inner", 1, 1), ("block", 2, 1),
                ("b", 1, 1)]
    if timer.averages() != expected:
        failures.append(f"LayerTimer on parameters beside children: {timer.averages()}, "
                        f"expected {expected}")
    ordered = run_order(model, x)
    layers = [layout.layer_of(name) for name in ordered]
    if ordered != ["temperature", "a.weight", "a.bias", "block.inner.weight", "block.inner.bias",
                   "block.scale", "b.weight", "b.bias"] \
            or layers != ["Tempered", "a", "a", "block.inner", "block.inner", "block", "b", "b"]:
        failures.append(f"parameters in run order, beside children: {ordered} in {layers}")
    # A layer spec made by describe() lists them in the trace's order (it
    # listed a module after its children, as their forward hooks end, and
    # gcsim refused it as the trace's compute_spec).
    import generate_workloads
    spec = generate_workloads.describe("tempered", Tempered, (2, 2), "none", "image")
    if [layer["name"] for layer in spec["layers"]] != ["Tempered", "a", "block.inner", "block",
                                                       "b"]:
        failures.append(f"describe() of parameters beside children: "
                        f"{[layer['name'] for layer in spec['layers']]}")
    # A model of no modules, its weight its own: one layer, named after its
    # class (the capture failed with a KeyError).
    class Bare(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1, 2))

        def forward(self, x):
            return x @ self.w.t()

    model = Bare()
    layout, timer = ticked(model)
    if layout.layer_of("w") != "Bare" or timer.averages() != [("Bare", 1, 1)]:
        failures.append(f"a model of no modules: its weight in {layout.layer_of('w')}, "
                        f"timed {timer.averages()}; expected one layer Bare, 1/1")
    # A split module run only inside a module timed whole (called from its
    # forward): its time is that module's; its parameters' gradient took
    # part of that one's backward, and its layer stood before it.
    class Called(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.g = torch.nn.Linear(2, 2), torch.nn.Parameter(torch.ones(2))

        def forward(self, x):
            return self.lin(x) * self.g

    class Caller(torch.nn.Module):
        def __init__(self, called):
            super().__init__()
            self.p, self.spare, self.called = (torch.nn.Parameter(torch.ones(2)),
                                               torch.nn.Linear(2, 2), [called])

        def forward(self, x):  # spare is used, not called: timed whole
            return self.called[0](x) * self.p + x @ self.spare.weight.t()

    class Nested(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.s = Called()
            self.w, self.head = Caller(self.s), torch.nn.Linear(2, 1)

        def forward(self, x):
            return self.head(self.w(x))

    model = Nested()
    layout, timer = ticked(model)
    if [name for name, *_ in timer.averages()] != ["w", "head"] \
            or timer.averages()[0][2] != 1 or timer.inside != {"s"}:
        failures.append(f"a split module run inside one timed whole: {timer.averages()}, "
                        f"{timer.inside} inside; expected w (its backward 1 tick) and head "
                        f"alone, s inside")
    # A module that holds parameters beside a child it does not call
    # (MultiheadAttention's out_proj) is timed whole, its child's its own.
    whole = timing.Layout(torch.nn.Sequential(torch.nn.MultiheadAttention(4, 2)),
                          {"", "0"})
    if [name for name, _ in whole.timed] != ["0"] or whole.split \
            or whole.layer_of("0.out_proj.weight") != "0":
        failures.append(f"MultiheadAttention: timed {whole.timed}, split {whole.split}")
    return failures


def snapshot(folder):
    """{relative path: bytes} of every file under folder."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as stream:
                files[os.path.relpath(path, folder)] = stream.read()
    return files


def refusal(result, what, needles, status=2):
    """What is wrong with a run that should have refused (refusal_problems: a
    traceback is never one line), named after `what`."""
    problems = refusal_problems(result, needles, status)
    print(f"{what}: {result.returncode}: {result.stderr.strip()[:300]}")
    return [f"{what}: {', '.join(problems)}"] if problems else []


def capture_refusals(trace, scratch):
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    old = os.path.join(scratch, "old")
    shutil.copytree(trace, old)
    before = snapshot(old)
    a_file = os.path.join(scratch, "a-file")
    with open(a_file, "w") as stream:
        stream.write("not a trace\n")
    not_trace = os.path.join(scratch, "not-a-trace")
    os.makedirs(not_trace)
    with open(os.path.join(not_trace, "thesis.tex"), "w") as stream:
        stream.write("not a trace\n")
    tiny = ["--model", "cnn", "--dataset", "digits", "--workers", "2", "--micro-batch", "4",
            "--iterations", "5"]
    failures = []
    for args, needles, status, made, what in [
            ([], ["--out (or --preset) is required"], 2, None, "no arguments"),
            (tiny + ["--workers", "0", "--lr", "-1", "--out", os.path.join(scratch, "x")],
             ["--workers", "--lr"], 2, "x", "--workers 0 --lr -1"),
            (tiny + ["--workers", "1000", "--micro-batch", "1000", "--out",
                     os.path.join(scratch, "x")], ["--micro-batch"], 2, "x",
             "workers x micro-batch over the training set"),
            (tiny + ["--out", "/proc/no-such-folder/out"], ["/proc/no-such-folder/out"], 1, None,
             "an --out that cannot be made"),
            (tiny + ["--out", a_file, "--force"], ["a-file"], 2, None, "--out a file, --force"),
            # --force replaces a trace, not a folder of anything else.
            (tiny + ["--out", not_trace, "--force"], ["not-a-trace", "no manifest.json"], 2,
             None, "--out a folder that is no trace, --force"),
            # Was "File exists", exit 1.
            (tiny + ["--out", os.path.join(a_file, "trace")], ["a-file is not a folder"], 2, None,
             "--out under a file"),
            # Training fails after the old trace was deleted (before the fix).
            (tiny + ["--lr", "1e38", "--out", old, "--force"], ["--lr"], 2, None,
             "a capture that fails (--lr 1e38) over an old trace"),
            # Gradients past float16's range were stored as inf, and the
            # manifest's precision figures became NaN and Infinity: JSON no
            # reader takes, written with exit 0.
            (tiny + ["--lr", "1e10", "--dtype", "float16", "--out", os.path.join(scratch, "x")],
             ["--dtype float16", "past float16's range"], 2, "x", "a float16 capture overflowing"),
            # A traceback, exit 1.
            (tiny + ["--seed", "-5", "--out", os.path.join(scratch, "x")], ["--seed"], 2, "x",
             "--seed -5"),
            (tiny + ["--seed", str(2 ** 64), "--out", os.path.join(scratch, "x")], ["--seed"], 2,
             "x", "--seed 2^64"),
            # Timed layers waited for a core: 50-300x too long.
            (tiny + ["--threads", str(len(os.sched_getaffinity(0)) + 1), "--out",
                     os.path.join(scratch, "x")], ["--threads", "cores"], 2, "x",
             "more --threads than cores")]:
        result = subprocess.run(["/usr/bin/python3", SCRIPT, *args], capture_output=True, text=True)
        failures += refusal(result, what, needles, status)
        if made and os.path.lexists(os.path.join(scratch, made)):
            failures.append(f"{what}: {made} was written")
    if snapshot(old) != before:
        failures.append("a failed capture changed the old trace it was to replace")
    with open(a_file) as stream:
        if stream.read() != "not a trace\n":
            failures.append("--out a file, --force: the file was replaced")
    if os.listdir(not_trace) != ["thesis.tex"]:
        failures.append(f"--out a folder that is no trace, --force: it holds "
                        f"{os.listdir(not_trace)}")
    leftovers = sorted(set(os.listdir(scratch)) - {"old", "a-file", "not-a-trace"})
    if leftovers:
        failures.append(f"refused captures left {leftovers} behind")
    result = subprocess.run(["/usr/bin/python3", SCRIPT, "--help"], capture_output=True, text=True,
                            cwd=scratch)
    if result.returncode != 0 or result.stderr or not result.stdout.startswith("usage:"):
        failures.append(f"--help: status {result.returncode}, stderr {result.stderr[:200]!r}")
    return failures + cache_preset_refusal(scratch)


# Model files a user might write wrong, what each refusal must name, and
# the line of the file it must point to (None: no line).
BAD_MODELS = [
    ("syntax", "def build(n)\n    return None\n", ["SyntaxError", "(line 1)"]),
    ("raises", "import torch\nraise RuntimeError('no GPU here')\n",
     ["failed to run", "RuntimeError: no GPU here", "(line 2)"]),
    ("no-build", "INPUT = (1, 8)\n", ["defines no build(num_classes)"]),
    ("no-input", "from torch import nn\ndef build(n):\n    return nn.Linear(64, n)\n",
     ["INPUT is None", "(channels, side)"]),
    ("bad-input", "INPUT = (1, 0)\ndef build(n):\n    return None\n", ["INPUT is (1, 0)"]),
    ("build-fails", "INPUT = (1, 8)\ndef build(n):\n    return {}[n]\n",
     ["build(10) failed", "KeyError", "(line 3)"]),
    ("not-module", "INPUT = (1, 8)\ndef build(n):\n    return 'a model'\n",
     ["returned a str, not a torch.nn.Module"]),
    ("no-parameters", "from torch import nn\nINPUT = (1, 8)\ndef build(n):\n"
                      "    return nn.Flatten()\n", ["no trainable parameters"]),
    ("exits", "import sys\nsys.exit()\n", ["failed to run", "called sys.exit()", "(line 2)"]),
    # Its temperature's layer would be named M, as its module M is.
    ("named-as-class", "import torch\nfrom torch import nn\nINPUT = (1, 8)\n"
                       "class M(nn.Module):\n    def __init__(self, n):\n"
                       "        super().__init__()\n        self.M = nn.Linear(64, n)\n"
                       "        self.temperature = nn.Parameter(torch.ones(1))\n"
                       "    def forward(self, x):\n"
                       "        return self.M(x.flatten(1)) / self.temperature\n"
                       "def build(n):\n    return M(n)\n",
     ["a module is named M, as the model's class", "rename it"]),
    ("used-outside", "from torch import nn\nINPUT = (1, 8)\nclass M(nn.Module):\n"
                     "    def __init__(self, n):\n        super().__init__()\n"
                     "        self.pos = nn.Embedding(64, 1)\n        self.out = nn.Linear(64, n)\n"
                     "    def forward(self, x):\n"
                     "        return self.out(x.flatten(1) + self.pos.weight[:, 0])\n"
                     "def build(n):\n    return M(n)\n",
     ["parameter pos.weight is used outside the forward of its module pos"]),
    ("not-copyable", "from torch import nn\nINPUT = (1, 8)\ndef build(n):\n"
                     "    return nn.Sequential(nn.Flatten(),\n"
                     "                         nn.utils.weight_norm(nn.Linear(64, n)))\n",
     ["cannot be copied"]),
    ("wrong-shape", "from torch import nn\nINPUT = (1, 8)\ndef build(n):\n"
                    "    return nn.Sequential(nn.Flatten(), nn.Linear(63, n))\n",
     ["forward pass on a batch of shape (4, 1, 8, 8) failed", "RuntimeError"]),
    ("eval-fails", "from torch import nn\nINPUT = (1, 8)\nclass M(nn.Module):\n"
                   "    def __init__(self, n):\n        super().__init__()\n"
                   "        self.out = nn.Linear(64, n)\n    def forward(self, x):\n"
                   "        assert self.training, 'no eval'\n"
                   "        return self.out(x.flatten(1))\n"
                   "def build(n):\n    return M(n)\n",
     ["its test in eval mode on 4 images failed", "AssertionError: no eval", "(line 8)"]),
    # Its sixth pass fails: the checks' three (the model file's, the
    # modules a pass calls, the layers' order), then iteration 0's two workers.
    ("training-fails", "from torch import nn\nINPUT = (1, 8)\nPASSES = [0]\n"
                       "class M(nn.Module):\n"
                       "    def __init__(self, n):\n        super().__init__()\n"
                       "        self.out = nn.Linear(64, n)\n    def forward(self, x):\n"
                       "        PASSES[0] += 1\n"
                       "        if PASSES[0] == 6:\n            raise ValueError('a bad batch')\n"
                       "        return self.out(x.flatten(1))\n"
                       "def build(n):\n    return M(n)\n",
     ["training failed at iteration 1, worker 0", "ValueError: a bad batch", "(line 11)"]),
    ("named-txt", None, None),
    # Its helper beside it fails: the helper's file and line are named.
    ("uses-helper", "from broken_helper import make\nINPUT = (1, 8)\ndef build(n):\n"
                    "    return make(n)\n",
     ["build(10) failed", "ValueError: broken helper", "(broken_helper.py line 2)"]),
    ("scripted", "import torch\nfrom torch import nn\nINPUT = (1, 8)\ndef build(n):\n"
                 "    return torch.jit.script(nn.Sequential(nn.Flatten(), nn.Linear(64, n)))\n",
     ["TorchScript module"]),
    ("checkpointed", "from torch import nn\nfrom torch.utils.checkpoint import checkpoint\n"
                     "INPUT = (1, 8)\nclass M(nn.Module):\n"
                     "    def __init__(self, n):\n        super().__init__()\n"
                     "        self.first = nn.Linear(64, 64)\n"
                     "        self.mid = nn.Linear(64, 64)\n"
                     "        self.out = nn.Linear(64, n)\n    def forward(self, x):\n"
                     "        return self.out(checkpoint(self.mid, self.first(x.flatten(1))))\n"
                     "def build(n):\n    return M(n)\n",
     ["the output of module mid takes no gradient", "gradient checkpointing"]),
    # A module holding a scale beside its layer, called from the forward of
    # a module timed whole (its out_proj is used, not called): refused
    # before training, where it was refused after it.
    ("run-inside", "import torch\nfrom torch import nn\nINPUT = (1, 8)\n"
                   "class Scaled(nn.Module):\n    def __init__(self):\n"
                   "        super().__init__()\n        self.lin = nn.Linear(64, 64)\n"
                   "        self.g = nn.Parameter(torch.ones(64))\n"
                   "    def forward(self, x):\n        return self.lin(x) * self.g\n"
                   "class Caller(nn.Module):\n    def __init__(self, scaled):\n"
                   "        super().__init__()\n        self.p = nn.Parameter(torch.ones(64))\n"
                   "        self.out_proj = nn.Linear(64, 64)\n        self.scaled = [scaled]\n"
                   "    def forward(self, x):\n"
                   "        return (self.scaled[0](x) * self.p + x @ self.out_proj.weight.t()\n"
                   "                + self.out_proj.bias)\n"
                   "class M(nn.Module):\n    def __init__(self, n):\n"
                   "        super().__init__()\n        self.s = Scaled()\n"
                   "        self.w = Caller(self.s)\n        self.head = nn.Linear(64, n)\n"
                   "    def forward(self, x):\n        return self.head(self.w(x.flatten(1)))\n"
                   "def build(n):\n    return M(n)\n",
     ["module s holds parameters but runs only inside another timed module's forward"]),
    # Its branch runs in the checks' first two passes, then never: a trace with
    # no time for it, which gcsim refused.
    ("branch-stops", "from torch import nn\nINPUT = (1, 8)\nRUNS = [0]\n"
                     "class M(nn.Module):\n"
                     "    def __init__(self, n):\n        super().__init__()\n"
                     "        self.branch = nn.Linear(64, 64)\n"
                     "        self.out = nn.Linear(64, n)\n"
                     "    def forward(self, x):\n        x = x.flatten(1)\n        RUNS[0] += 1\n"
                     "        if RUNS[0] <= 2:\n            x = x + self.branch(x)\n"
                     "        return self.out(x)\n"
                     "def build(n):\n    return M(n)\n",
     ["module branch holds parameters but ran in no captured pass"]),
    ("wrong-output", "from torch import nn\nINPUT = (1, 8)\ndef build(n):\n"
                     "    return nn.Sequential(nn.Flatten(), nn.Linear(64, 3))\n",
     ["gave (4, 3), not the (4, 10) class scores"]),
    ("idle-module", "from torch import nn\nINPUT = (1, 8)\nclass M(nn.Module):\n"
                    "    def __init__(self, n):\n        super().__init__()\n"
                    "        self.spare = nn.Linear(4, 4)\n        self.out = nn.Linear(64, n)\n"
                    "    def forward(self, x):\n        return self.out(x.flatten(1))\n"
                    "def build(n):\n    return M(n)\n",
     ["never uses parameter spare.weight (and 1 more)"]),
]


def model_file_refusals(scratch):
    """--model-file: a file that is not a model the capture can time is
    refused before any training, exit 2, one line naming the file and what
    is wrong (with the line of the user's file where it failed), nothing
    written; and --model beside --model-file, or with --preset cache."""
    scratch = os.path.join(scratch, "models")
    os.makedirs(scratch, exist_ok=True)
    tiny = ["--dataset", "digits", "--workers", "2", "--micro-batch", "4", "--iterations", "2"]
    out = os.path.join(scratch, "own")
    failures = []
    cases = [(["--model-file", os.path.join(scratch, "missing.py")], ["missing.py",
                                                                       "no such file"])]
    with open(os.path.join(scratch, "broken_helper.py"), "w") as stream:
        stream.write("def make(n):\n    raise ValueError('broken helper')\n")
    for name, text, needles in BAD_MODELS:
        if text is None:  # named .txt: read as Python all the same (was a traceback)
            path = os.path.join(scratch, "named.txt")
            with open(path, "w") as stream:
                stream.write(BAD_MODELS[0][1])
            cases.append((["--model-file", path], [f"--model-file {path}: "] + BAD_MODELS[0][2]))
            continue
        path = os.path.join(scratch, name + ".py")
        with open(path, "w") as stream:
            stream.write(text)
        cases.append((["--model-file", path], [f"--model-file {path}: "] + needles))
    cases += [(["--model", "cnn", "--model-file", OWN_MODEL], ["--model and --model-file"]),
              (["--preset", "cache", "--model-file", OWN_MODEL], ["--preset cache"]),
              # Its --out is the shipped trace, which --force would replace.
              (["--preset", "fmnist-cnn-16w", "--model-file", OWN_MODEL, "--force"],
               ["--preset fmnist-cnn-16w makes a shipped model's trace"])]
    for args, needles in cases:
        where = [] if "--preset" in args else ["--out", out]
        result = subprocess.run(["/usr/bin/python3", SCRIPT, *tiny, *args, *where],
                                capture_output=True, text=True)
        failures += refusal(result, f"--model-file {os.path.basename(args[-1])}", needles)
        if os.path.lexists(out):
            failures.append(f"{args}: {out} was written")
            shutil.rmtree(out)
    # A model written for its batch size (4 here) trains, and is tested in
    # batches of that size: its test pass at 360 images failed.
    # Its head is lazy (nn.LazyLinear: shapes from a first pass, which the
    # capture runs), and a dropout run twice is read for its p (its copies
    # stand in for it).
    bound = os.path.join(scratch, "batch_bound.py")
    with open(bound, "w") as stream:
        stream.write("from torch import nn\nINPUT = (1, 8)\nclass M(nn.Module):\n"
                     "    def __init__(self, n):\n        super().__init__()\n"
                     "        self.mid = nn.Linear(64, 64)\n        self.drop = nn.Dropout(0.1)\n"
                     "        self.out = nn.LazyLinear(n)\n    def forward(self, x):\n"
                     "        x = self.drop(x.reshape(4, 64))\n"
                     "        return self.out(x + (1 - self.drop.p) * self.drop(self.mid(x)))\n"
                     "def build(n):\n    return M(n)\n")
    result = subprocess.run(["/usr/bin/python3", SCRIPT, *tiny, "--model-file", bound,
                             "--out", out], capture_output=True, text=True)
    if result.returncode != 0 or "test accuracy on 360 held-out samples" not in result.stdout:
        failures.append(f"a model written for its batch size, lazy, its dropout read: "
                        f"{result.returncode} "
                        f"{result.stderr.strip()[-300:]}")
    shutil.rmtree(out, ignore_errors=True)
    return failures


def cache_preset_refusal(scratch):
    """--preset cache with its last trace's folder already there (no --force)
    is refused before any capture: it was found only after the earlier ones
    had been captured and written. In-process, with the presets' folders in
    `scratch` and the capture replaced by a tally."""
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import capture_traces
    folders = os.path.join(scratch, "cache-presets")
    presets = {name: dict(capture_traces.PRESETS[name], out=os.path.join(folders, name))
               for name in capture_traces.CACHE_PRESETS}
    os.makedirs(presets[capture_traces.CACHE_PRESETS[-1]]["out"])
    captured = []
    saved = capture_traces.PRESETS, capture_traces.capture_one
    capture_traces.PRESETS, capture_traces.capture_one = presets, captured.append
    try:
        capture_traces.main(["--preset", "cache"])
        refused = False
    except capture_traces.BadInput as error:
        refused = "pass --force" in str(error)
    finally:
        capture_traces.PRESETS, capture_traces.capture_one = saved
        shutil.rmtree(folders)
    if refused and not captured:
        return []
    return [f"--preset cache with the last folder there: refused {refused}, "
            f"{len(captured)} captures first"]


FAKE_GCSIM = """#!/usr/bin/python3
import json, sys
# gcsim inspect SOURCE --iteration N --json FILE: a fixed one-layer report.
if len(sys.argv) != 7 or sys.argv[1] != "inspect":
    sys.exit(f"stand-in gcsim: unexpected arguments {sys.argv[1:]}")
with open(sys.argv[6], "w") as stream:
    json.dump(dict(layers=[dict(name="conv1.weight", params=10, k=1, norm=float(sys.argv[4]),
                                top_mass=0.5, overlap=0.25)]), stream)
"""

FAILING_GCSIM = """#!/bin/sh
echo "$2/iterations/000037/worker_001.npy: file not found" >&2
exit 2
"""


def stats_refusals(trace, scratch):
    failures = []
    fake, failing = os.path.join(scratch, "gcsim"), os.path.join(scratch, "gcsim-failing")
    for path, text in ((fake, FAKE_GCSIM), (failing, FAILING_GCSIM)):
        with open(path, "w") as stream:
            stream.write(text)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    source = os.path.join(scratch, "source")
    shutil.copytree(trace, source)
    source_before = snapshot(source)
    stats = os.path.join(scratch, "stats")

    def make(*args):
        return subprocess.run(["/usr/bin/python3", STATS, *args], capture_output=True, text=True)

    result = make(fake, source, stats)
    written = snapshot(stats) if os.path.isdir(stats) else {}
    if result.returncode != 0 or sorted(written) != ["manifest.json", "statistics.json"]:
        failures.append(f"make_stats_trace.py: status {result.returncode}, wrote {sorted(written)}: "
                        f"{result.stderr[:300]}")
    elif json.loads(written["manifest.json"])["has_tensors"] is not False:
        failures.append("make_stats_trace.py: the manifest says the trace has tensors")
    elif [e["iteration"] for e in json.loads(written["statistics.json"])["iterations"]] != [37, 38, 39]:
        failures.append("make_stats_trace.py: statistics.json lacks a captured iteration")
    else:
        # Each iteration's entry is gcsim inspect's report of that iteration
        # (the stand-in gives a norm of the iteration asked for), every field kept.
        for entry in json.loads(written["statistics.json"])["iterations"]:
            expected = [dict(name="conv1.weight", params=10, k=1, norm=float(entry["iteration"]),
                             top_mass=0.5, overlap=0.25)]
            if entry["layers"] != expected:
                failures.append(f"make_stats_trace.py: statistics of iteration "
                                f"{entry['iteration']}: {entry['layers']}, expected {expected}")

    empty = os.path.join(scratch, "empty")
    os.makedirs(empty)
    cluttered = os.path.join(scratch, "cluttered")
    os.makedirs(cluttered)
    with open(os.path.join(cluttered, "notes.txt"), "w") as stream:
        stream.write("mine\n")
    # The source by another name: an OUT_DIR inside it was written there.
    linked = os.path.join(scratch, "linked")
    os.symlink(source, linked)
    for args, needles, status, what in [
            ([fake, source], ["OUT_DIR"], 2, "two arguments"),
            ([fake, os.path.join(scratch, "no-such-trace"), stats], ["no-such-trace"], 2,
             "a missing SOURCE"),
            ([fake, empty, stats], ["manifest.json"], 2, "an empty SOURCE"),
            ([failing, source, stats], ["gcsim inspect", "worker_001.npy"], 2,
             "a trace gcsim inspect refuses"),
            ([os.path.join(scratch, "no-such-gcsim"), source, stats], ["GCSIM", "no-such-gcsim"], 2,
             "a GCSIM that does not exist"),
            ([fake, source, "/proc/no-such-folder/out"], ["/proc/no-such-folder/out"], 1,
             "an OUT_DIR that cannot be made"),
            ([fake, source, source], ["SOURCE_TRACE"], 2, "OUT_DIR == SOURCE_TRACE"),
            ([fake, source, os.path.join(source, "stats")], ["inside SOURCE_TRACE"], 2,
             "an OUT_DIR inside SOURCE_TRACE"),
            ([fake, source, os.path.join(linked, "deeper", "stats")], ["inside SOURCE_TRACE"], 2,
             "an OUT_DIR inside SOURCE_TRACE through a link"),
            # Replaced whole, so a folder of anything else is not an OUT_DIR.
            ([fake, source, cluttered], ["cluttered", "notes.txt", "not replaced"], 2,
             "an OUT_DIR holding another file")]:
        failures += refusal(make(*args), f"make_stats_trace.py, {what}", needles, status)
    if snapshot(stats) != written:
        failures.append("make_stats_trace.py: a refused run changed the earlier output")
    if snapshot(source) != source_before:
        failures.append("make_stats_trace.py: the source trace was changed")
    if snapshot(cluttered) != {"notes.txt": b"mine\n"}:
        failures.append("make_stats_trace.py: a refused OUT_DIR's own file was changed")
    leftovers = sorted(set(os.listdir(scratch)) - {"old", "a-file", "not-a-trace", "gcsim",
                                                   "gcsim-failing", "source", "stats", "empty",
                                                   "cluttered", "linked"})
    if leftovers:
        failures.append(f"make_stats_trace.py left {leftovers} behind")
    result = make("--help")
    if result.returncode != 0 or result.stderr or not result.stdout.startswith("usage:"):
        failures.append(f"make_stats_trace.py --help: status {result.returncode}, "
                        f"stderr {result.stderr[:200]!r}")
    return failures


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
