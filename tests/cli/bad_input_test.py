#!/usr/bin/python3
"""Bad input never crashes and never writes a result: each case must exit
with status 2, print exactly one line on stderr that names the file (or the
--set) and the JSON path, and leave no result.json behind. An output that
cannot be written is exit 1 instead, also without a result.json; a bad sweep
file or sweep option is exit 2 and writes no sweep.csv; a calibration option
out of range is exit 2 before any timing.

Usage: bad_input_test.py PATH/TO/gcsim
"""
import copy
import json
import os
import stat
import subprocess
import sys
import tempfile

from checks import refusal_problems

GCSIM = os.path.abspath(sys.argv[1])
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")

with open(QUICKSTART) as handle:
    BASE = json.load(handle)
LINK = {"bandwidth": "10Gbps", "latency": "10us"}
INLINE_PLATFORM = {"name": "inline", "topology": "star", "nodes": 4, "link": LINK}


def scenario(**changes):
    document = copy.deepcopy(BASE)
    document["platform"] = copy.deepcopy(INLINE_PLATFORM)
    for key, value in changes.items():
        document[key] = value
    return document


def with_platform(**changes):
    platform = copy.deepcopy(INLINE_PLATFORM)
    platform.update(changes)
    return scenario(platform=platform)


def with_training(**changes):
    training = copy.deepcopy(BASE["training"])
    training.update(changes)
    return scenario(training=training)


def nested(depth):
    """`depth` arrays, each the only element of the one around it."""
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return json.load(handle)


GOOD_WORKLOAD = load("workloads", "models", "resnet18-cifar10.json")
GOOD_DEVICE = load("platforms", "devices", "v100.json")


def changed(good, mutate):
    """A deep copy of `good` after `mutate` (which changes it in place)."""
    document = copy.deepcopy(good)
    mutate(document)
    return document


def bad_workload(mutate):
    return changed(GOOD_WORKLOAD, mutate)


def bad_device(mutate):
    return changed(GOOD_DEVICE, mutate)


class Link(str):
    """An extra 'file' that is a symbolic link to this path."""


TRACE = os.path.join(ROOT, "workloads", "traces", "fmnist-cnn-16w")
GOOD_MANIFEST = load("workloads", "traces", "fmnist-cnn-16w", "manifest.json")


def trace_with(mutate):
    """A copy of the shipped CNN trace's manifest with its tensors linked."""
    return {"trace/manifest.json": changed(GOOD_MANIFEST, mutate),
            "trace/iterations": Link(os.path.join(TRACE, "iterations"))}


# A two-host cluster, valid.
CLUSTER_XML = ('<?xml version="1.0"?><!DOCTYPE platform SYSTEM '
               '"https://simgrid.org/simgrid.dtd"><platform version="4.1">'
               '<zone id="w" routing="Full"><cluster id="c" prefix="n" suffix="" '
               'radical="0-1" speed="1Gf" bw="1Gbps" lat="10us"/></zone></platform>')

# (name, scenario document or raw text or None for a missing file,
#  extra files {name: content}, extra args, substrings the message must hold)
CASES = [
    ("missing file", None, {}, [], ["scenario.json", "file not found"]),
    # A link loop was "file not found", which sends one looking elsewhere.
    ("a workload that is a link loop", scenario(workload="loop.json"),
     {"loop.json": Link("loop.json")}, [],
     ["scenario.json: /workload:", "loop.json: cannot look it up: Too many levels of symbolic"]),
    # A link to nowhere was "not found; did you mean" the link's own name.
    ("a workload that is a link to nowhere", scenario(workload="gone.json"),
     {"gone.json": Link("moved.json")}, [],
     ["scenario.json: /workload:",
      'gone.json" not found; it is a symbolic link to "moved.json", which is not there']),
    # A newline in the name broke the summary's title line in two.
    ("a name with a newline", scenario(name="a\nb"), {}, [],
     ["scenario.json: /name:", "without '/' or control characters"]),
    ("malformed JSON", '{"name": "x",,}', {}, [], ["scenario.json", "malformed JSON at line 1, column 14"]),
    # A second scenario (run takes one): CLI11 listed extra words last first,
    # without the command's name.
    ("two scenarios", scenario(), {}, ["other.json", "third.json"],
     ["gcsim run: unexpected arguments (given: other.json third.json;"]),
    ("a misspelt option", scenario(), {}, ["--timline", "t.json"],
     ["gcsim run: unknown option --timline (given: --timline t.json;"]),
    # "unknown field" sent one looking for a typo.
    ("a parameter-server field on a star", scenario(), {}, ["--set", "platform.servers=2"],
     ["--set platform.servers=2: /platform/servers: is a field of a parameter_server platform, "
      "not of a star one"]),
    # The platform file alone was blamed for what the --set asked for.
    ("a topology set without its fields", scenario(), {}, ["--set", "platform.topology=fat_tree"],
     ["/fat_tree: required field is missing, needed once --set platform.topology=fat_tree"]),
    # It said where, not what.
    ("a trailing comma", '{"name": "x",\n "seed": 1,\n}', {}, [],
     ["scenario.json", "malformed JSON at line 3, column 1: syntax error while parsing object key",
      "(a comma before a closing bracket: JSON allows none)"]),
    # nlohmann kept the last of the two without a word.
    ("a key twice", '{"name": "x", "seed": 1, "training": {"iterations": 2, "iterations": 3}}', {},
     [], ["scenario.json: /training/iterations:", "appears twice"]),
    # nlohmann copies a value recursively: 60,000 levels overflowed the stack
    # (a segmentation fault, no message), in a file as in a --set value.
    ("nested 60,000 deep", '{"name": "x", "seed": ' + "[" * 60000 + "]" * 60000 + "}", {}, [],
     ["scenario.json: /seed/0/0/0/0/0/0/0/...:", "nested deeper than 256 levels"]),
    ("--set value nested 60,000 deep", scenario(), {},
     ["--set", "seed=" + "[" * 60000 + "]" * 60000],
     ["--set seed:", "nested deeper than 256 levels"]),
    # Cut short after a line break: it said line 1, column 1.
    ("JSON cut short", '{\n', {}, [], ["scenario.json", "malformed JSON at line 2, column 1"]),
    ("malformed on line 3", '{"a":\n  [1, 2,\n   x]}', {}, [], ["malformed JSON at line 3, column 4"]),
    ("not an object", "[1, 2]", {}, [], ["scenario.json", "/:", "expected a scenario object"]),
    ("unknown field with did-you-mean", dict(scenario(), trainnig={}), {}, [],
     ["scenario.json", "/trainnig", "did you mean \"training\""]),
    ("wrong type", with_training(iterations="five"), {}, [],
     ["/training/iterations", "expected an integer"]),
    ("negative bandwidth", with_platform(link={"bandwidth": "-1Gbps", "latency": "10us"}), {}, [],
     ["/platform/link/bandwidth", "bandwidth with a unit in [1kbps, 1000Tbps]", "-1Gbps"]),
    ("unit-less bandwidth", with_platform(link={"bandwidth": 1000, "latency": "10us"}), {}, [],
     ["/platform/link/bandwidth", "with a unit"]),
    ("negative latency", with_platform(link={"bandwidth": "1Gbps", "latency": "-5us"}), {}, [],
     ["/platform/link/latency"]),
    # Figures that overflowed to infinity or made SimGrid abort or deadlock.
    ("bandwidth that overflows", scenario(), {}, ["--set", "platform.link.bandwidth=1e300Tbps"],
     ["--set platform.link.bandwidth=1e300Tbps", "/platform/link/bandwidth", "[1kbps, 1000Tbps]"]),
    ("bandwidth below any link", with_platform(link={"bandwidth": "1bps", "latency": "10us"}), {},
     [], ["/platform/link/bandwidth", "[1kbps, 1000Tbps]", "\"1bps\""]),
    ("latency past any run", with_platform(link={"bandwidth": "1Gbps", "latency": "1e300s"}), {},
     [], ["/platform/link/latency", "0s or in [1ps, 1e9s]"]),
    # "0 or in [1ps, 1e9s]" read as if a bare 0 were accepted.
    ("a bare 0 as the latency", scenario(), {}, ["--set", "platform.link.latency=0"],
     ["--set platform.link.latency=0", "/platform/link/latency", "0s or in [1ps", "got 0"]),
    ("subnormal latency", with_platform(link={"bandwidth": "1Gbps", "latency": "1e-310s"}), {},
     [], ["/platform/link/latency", "0s or in [1ps, 1e9s]"]),
    ("latency factor past any calibration", with_platform(network={"latency_factor": 1e308}), {},
     [], ["/platform/network/latency_factor", "[0.001, 1000]"]),
    ("bandwidth factor past any calibration", with_platform(network={"bandwidth_factor": 1e-300}),
     {}, [], ["/platform/network/bandwidth_factor", "[0.001, 1000]"]),
    ("TCP window below a byte", with_platform(network={"tcp_window": "1e-300B"}), {}, [],
     ["/platform/network/tcp_window", "[1B, 8192TiB]"]),
    ("unknown sharing solver", with_platform(network={"solver": "fast"}), {}, [],
     ["/platform/network/solver", "unknown value \"fast\""]),
    # Each figure within its bounds, an iteration longer than any run.
    ("iteration past any run",
     with_platform(link={"bandwidth": "1Gbps", "latency": "1e8s"}, network={"latency_factor": 1000}),
     {}, [], ["scenario.json: /platform: an iteration takes", "more than 1e9 s"]),
    # It named the platform alone, whose own values were fine.
    ("iteration past any run by a --set", scenario(), {},
     ["--set", "platform.link.latency=1e9s"],
     ["/platform: an iteration takes", "(given --set platform.link.latency=1e9s)"]),
    ("zero nodes", with_platform(nodes=0), {}, [], ["/platform/nodes", "[1, 65536]"]),
    ("unknown topology", with_platform(topology="torus"), {}, [],
     ["/platform/topology", "unknown value \"torus\""]),
    ("unknown compressor", scenario(compressor={"name": "topkk"}), {}, [],
     ["/compressor/name", "unknown compressor 'topkk'", "did you mean 'topk'"]),
    ("compressor not an object", scenario(compressor="dense"), {}, [], ["/compressor"]),
    ("unknown compressor parameter", scenario(compressor={"name": "topk", "densty": 0.01}), {}, [],
     ["/compressor/densty", "did you mean 'density'"]),
    # 64 x 2^31 floats (512 GiB): refused before allocating, not swapped to a halt.
    ("a sketch no machine holds", scenario(compressor={"name": "gs_sgd", "rows": 64,
                                                       "columns": 2 ** 31}), {}, [],
     ["/compressor", "gs_sgd needs 137438953472 floats at once"]),
    ("compressor parameter out of range", scenario(compressor={"name": "topk", "density": 2}), {}, [],
     ["/compressor/density"]),
    # Every iteration was IWP's dense warm-up (5 by default), reported as IWP.
    # The default warm-up is written nowhere: the run's length is blamed.
    ("a compressor warm-up as long as the run", scenario(compressor={"name": "iwp"}), {},
     ["--set", "training.iterations=5"],
     ["--set training.iterations=5: /training/iterations",
      "5 dense warm-up iterations (the default)", "would never compress"]),
    ("a compressor warm-up written longer than the run",
     scenario(compressor={"name": "iwp", "warmup_iterations": 9}), {}, [],
     ["scenario.json: /compressor/warmup_iterations", "9 dense warm-up iterations and"]),
    # PowerSGD's plain allreduces before start_iteration (DDP's 1000) are one too.
    ("powersgd's start_iteration past the run",
     scenario(compressor={"name": "powersgd", "start_iteration": 1000}), {}, [],
     ["scenario.json: /compressor/start_iteration", "1000 dense warm-up iterations and",
      "powersgd would never compress"]),
    ("missing workload", {k: v for k, v in scenario().items() if k != "workload"}, {}, [],
     ["/workload", "required field is missing"]),
    # Every place looked is named, not only the first (beside the scenario).
    ("workload file not found", scenario(workload="workloads/models/nope.json"), {}, [],
     ["/workload", '"workloads/models/nope.json" not found beside scenario.json',
      "in the working directory or in gcsim's source tree (" + ROOT + ")"]),
    ("device not found", scenario(device="platforms/devices/nope.json"), {}, [],
     ["/device", '"platforms/devices/nope.json" not found beside']),
    ("platform file not found", scenario(platform="platforms/nope.json"), {}, [],
     ["/platform", '"platforms/nope.json" not found beside']),
    # A slip in a name gets the near name of the folder it was looked for in.
    ("a misspelt platform file", scenario(platform="platforms/star-8x1g.json"), {}, [],
     ["/platform", 'did you mean "platforms/star-8x10g.json"?']),
    ("a misspelt device file", scenario(device="platforms/devices/v10.json"), {}, [],
     ["/device", 'did you mean "platforms/devices/v100.json"?']),
    ("a model named without its data set", scenario(workload="workloads/models/resnet18.json"),
     {}, [], ["/workload", 'did you mean "workloads/models/resnet18-cifar10.json"?']),
    # The system reads a name up to its NUL: this read resnet18-cifar10.json.
    ("a NUL in a path", scenario(workload="workloads/models/resnet18-cifar10.json\0.bak"), {}, [],
     ["/workload", "holds a NUL character"]),
    ("zero iterations", with_training(iterations=0), {}, [], ["/training/iterations"]),
    # Echoed as given, the line break split the message in two.
    ("a line break in a --set", scenario(), {}, ["--set", "name=a\nb"],
     ["--set name=a\\nb: /name"]),
    ("zero bucket", with_training(bucket_size="0MiB"), {}, [], ["/training/bucket_size"]),
    ("zero first bucket", with_training(first_bucket_size="0MiB"), {}, [],
     ["/training/first_bucket_size"]),
    # Cast to uint64_t it was 0 (undefined past 2^64): a bucket per layer, not one.
    ("bucket past 2^64 bytes", scenario(), {}, ["--set", "training.bucket_size=1e20B"],
     ["--set training.bucket_size=1e20B", "/training/bucket_size", "[1B, 8192TiB] (8192TiB = 2^53"]),
    ("compute variation above 1", with_training(compute_variation=1.5), {}, [],
     ["/training/compute_variation", "[0, 1]", "1.5"]),
    ("negative compute variation", scenario(), {}, ["--set", "training.compute_variation=-0.1"],
     ["--set training.compute_variation=-0.1", "/training/compute_variation"]),
    ("compute variation as text", with_training(compute_variation="5%"), {}, [],
     ["/training/compute_variation", "expected a number"]),
    ("unknown compression scope", with_training(compression_scope="layer"), {}, [],
     ["/training/compression_scope", "auto model bucket"]),
    ("per-bucket DEFT", dict(with_training(compression_scope="bucket"),
                             compressor={"name": "deft", "density": 0.01}), {}, [],
     ["/training/compression_scope", "deft", "whole model"]),
    ("parameter server on a star", with_training(allreduce="parameter_server"), {}, [],
     ["/training/allreduce", "parameter_server"]),
    ("hierarchical allreduce without machines of GPUs", with_training(allreduce="hierarchical"),
     {}, [], ["/training/allreduce", "\"multi_gpu\"", "got \"star\""]),
    # A fat tree's leaves may be machines of GPUs; their fields are checked.
    ("a fat tree's gpu_link without gpus_per_node",
     scenario(platform={"topology": "fat_tree", "fat_tree": {"down": [4], "up": [1]},
                        "link": LINK, "gpu_link": LINK}), {}, [],
     ["/platform/gpu_link", "give \"gpus_per_node\" too"]),
    ("a fat tree of machines without their gpu_link",
     scenario(platform={"topology": "fat_tree", "fat_tree": {"down": [4], "up": [1]},
                        "link": LINK, "gpus_per_node": 8}), {}, [],
     ["/platform/gpu_link", "missing"]),
    ("a fat tree of machines past the hosts SimGrid is given",
     scenario(platform={"topology": "fat_tree", "fat_tree": {"down": [256, 256], "up": [1, 1]},
                        "link": LINK, "gpus_per_node": 2, "gpu_link": LINK}), {}, [],
     ["/platform/gpus_per_node", "65536 leaves", "65536 hosts"]),
    ("a fat tree of more machines than leaves",
     scenario(platform={"topology": "fat_tree", "fat_tree": {"down": [4], "up": [1]},
                        "link": LINK, "gpus_per_node": 8, "gpu_link": LINK, "nodes": 5}), {}, [],
     ["/platform/nodes", "5 machines, more than the tree's 4 leaves"]),
    ("gpus_per_node on a star", with_platform(gpus_per_node=8), {}, [],
     ["/platform/gpus_per_node", "is a field of a multi_gpu or fat_tree platform, not of a star"]),
    ("hierarchical allreduce on a fat tree of single GPUs",
     scenario(platform={"topology": "fat_tree", "fat_tree": {"down": [4], "up": [1]},
                        "link": LINK}, training={**BASE["training"], "allreduce": "hierarchical"}),
     {}, [], ["/training/allreduce", "\"gpus_per_node\"", "got \"fat_tree\""]),
    ("fat-tree levels disagree",
     with_platform(topology="fat_tree", nodes=None, fat_tree={"down": [4, 4], "up": [1]}), {}, [],
     ["/platform"]),
    ("name with a slash", scenario(name="a/b"), {}, [], ["/name"]),
    # results/../result.json: outside the results folder.
    ("name ..", scenario(), {}, ["--set", "name=.."], ["--set name=..", "/name", "not \".\" or \"..\""]),
    # Past NAME_MAX the run simulated and then failed to make results/NAME/.
    ("name of 256 bytes", scenario(), {}, ["--set", "name=" + "a" * 256],
     ["--set name=" + "a" * 256, "/name", "at most 255 bytes"]),
    ("negative seed", scenario(seed=-3), {}, [], ["/seed"]),
    # Both were compared in double and passed; converting 2^63 is undefined.
    ("seed just past INT64_MAX", scenario(), {}, ["--set", "seed=9223372036854776000"],
     ["--set seed=9223372036854776000", "/seed", "expected an integer in [0, 9223372036854775807]"]),
    ("seed of 2^63 as a float", scenario(), {}, ["--set", "seed=9223372036854775807.0"],
     ["/seed", "expected an integer in [0, 9223372036854775807]"]),
    ("workload with negative FLOPs",
     scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][0].update(forward_flops=-1))}, [],
     ["bad-workload.json", "/layers/0/forward_flops", "got number -1"]),
    # A layer without its kind was "other", without forward_flops it computed
    # nothing: a transformer spec written by hand ran 1.7x long or in no time.
    ("workload layer without a kind",
     scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][1].pop("kind"))}, [],
     ["bad-workload.json", "/layers/1/kind", "missing"]),
    ("workload layer without forward FLOPs",
     scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][0].pop("forward_flops"))}, [],
     ["bad-workload.json", "/layers/0/forward_flops", "missing"]),
    ("workload layer without a name",
     scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][2].update(name=""))}, [],
     ["bad-workload.json", "/layers/2/name", "got \"\""]),
    ("workload with FLOPs past any model",
     scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][2].update(forward_flops=1e308))}, [],
     ["bad-workload.json", "/layers/2/forward_flops", "[0, 1e18]"]),
    ("workload total that lies",
     scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w.update(parameters=5))}, [],
     ["bad-workload.json", "/parameters", "add up to 11173962"]),
    ("unknown field inside a platform file", scenario(platform="plat.json"),
     {"plat.json": dict(INLINE_PLATFORM, linkk={})}, [],
     ["plat.json", "/linkk", "did you mean \"link\""]),
    ("--set with a bad value", scenario(), {}, ["--set", "platform.link.bandwidth=fast"],
     ["--set platform.link.bandwidth=fast", "/platform/link/bandwidth"]),
    ("--set of an unknown field", scenario(), {}, ["--set", "training.bucket=1MiB"],
     ["/training/bucket", "did you mean \"bucket_size\""]),
    # No name near it: the fields the object takes, the one meant among them.
    ("--set of an unknown field with no near name", scenario(), {},
     ["--set", "training.batch_size=64"],
     ["/training/batch_size", "unknown field (this object's fields: allreduce, batch_per_worker,"]),
    ("--set without =", scenario(), {}, ["--set", "platform.nodes"], ["--set platform.nodes"]),
    # Both were blamed on the scenario file, which has neither field.
    ("--set through a field it makes", scenario(), {}, ["--set", "training.foo.bar=1"],
     ["--set training.foo.bar=1: /training/foo:", "unknown field"]),
    ("--set of a compressor parameter", scenario(), {}, ["--set", "compressor.density=0.5"],
     ["--set compressor.density=0.5: /compressor/density:", "unknown parameter"]),
    # The name alone changed keeps the file's parameters, which the new
    # compressor may not take: the file named, the whole object suggested.
    ("--set of a compressor's name alone", scenario(compressor={"name": "topk", "density": 0.01}),
     {}, ["--set", "compressor.name=dense"],
     ["scenario.json: /compressor/density:", "unknown parameter",
      "to replace them all: --set 'compressor={\"name\": \"dense\"}'"]),
    # --seed won silently over --set seed.
    ("--seed beside --set seed", scenario(), {}, ["--seed", "7", "--set", "seed=3"],
     ["--set seed=3: /seed: --seed 7 sets the seed too: give one of them"]),
    ("--set into a number", scenario(), {}, ["--set", "seed.x=1"], ["--set seed.x=1", "/seed"]),
    ("device profile that is not JSON", scenario(device="broken-device.json"),
     {"broken-device.json": "{not json"}, [], ["broken-device.json", "malformed JSON"]),
    # Figures that load but make a time SimGrid cannot run (it aborted on them).
    ("backward FLOP rate that overflows", scenario(device="tiny-rate.json"),
     {"tiny-rate.json": bad_device(lambda d: d["compute"].update(backward_flop_rate="1e-300flops"))},
     [], ["tiny-rate.json", "/compute", "backward pass", "inf s"]),
    # The workloads state each layer's backward FLOPs now; a profile's old
    # ratio other than the 2 they agree with would silently mean nothing.
    ("backward FLOPs ratio other than 2", scenario(device="ratio-3.json"),
     {"ratio-3.json": bad_device(lambda d: d["compute"].update(backward_flops_ratio=3))},
     [], ["ratio-3.json", "/compute/backward_flops_ratio", "backward_flops"]),
    # An efficiency typed as a percentage ran that kind 100 times fast.
    ("efficiency as a percentage", scenario(device="percent.json"),
     {"percent.json": bad_device(lambda d: d["compute"]["efficiency"].update(linear=50))},
     [], ["percent.json", "/compute/efficiency/linear", "at most 4", "not 50"]),
    ("trace time past any run", scenario(workload="trace", compressor={"name": "topk"}),
     trace_with(lambda m: m["modules"][0].update(forward_s=1e308)), [],
     ["manifest.json", "/modules/0/forward_s", "0 or in [1e-12, 1e9]"]),
    # Without times (they are optional in a manifest) a trace's layers were
    # priced by their FLOPs, which a trace does not record: zero compute.
    ("trace without times or a compute_spec", scenario(workload="trace",
                                                       compressor={"name": "topk"}),
     trace_with(lambda m: (m.pop("timing"), [(module.pop("forward_s"), module.pop("backward_s"))
                                              for module in m["modules"]])), [],
     ["trace/manifest.json: /modules:", "no measured compute times", "compute_spec"]),
    # Measured times are looked up by layer name; the totals are informative
    # but were taken whatever they said.
    ("workload with two layers of one name", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][1].update(name=w["layers"][0]["name"]))},
     [], ["bad-workload.json", "/layers/1/name", "unique"]),
    # A layer's tensors must hold its parameters: PowerSGD views them as
    # matrices, and shapes of another layer would compress the wrong rows.
    ("workload tensors that miss a parameter", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][1]["tensors"][1].update(shape=[63]))},
     [], ["bad-workload.json", "/layers/1/tensors", "hold 127 elements", "128 parameters"]),
    ("workload tensor past its layer", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][0]["tensors"][0].update(
         shape=[64, 3, 3, 4]))},
     [], ["bad-workload.json", "/layers/0/tensors/0/shape", "1728 parameters"]),
    ("workload tensor of extent 0", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][0]["tensors"][0].update(
         shape=[64, 0, 3, 3]))},
     [], ["bad-workload.json", "/layers/0/tensors/0/shape/1"]),
    ("workload with two tensors of one name", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][1]["tensors"][1].update(
         name=w["layers"][1]["tensors"][0]["name"]))},
     [], ["bad-workload.json", "/layers/1/tensors/1/name", "unique"]),
    # An unnamed tensor is named by its index: "1" would be the same layer.
    ("workload tensor named as an unnamed one's index", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: (w["layers"][1]["tensors"][0].pop("name"),
                                                   w["layers"][1]["tensors"][1].update(name="0")))},
     [], ["bad-workload.json", "/layers/1/tensors/1/name", "\"0\" names an earlier"]),
    # The other way round the unnamed tensor is blamed, not a name it has not.
    ("workload unnamed tensor whose index an earlier one is named",
     scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: (w["layers"][1]["tensors"][0].update(name="1"),
                                                   w["layers"][1]["tensors"][1].pop("name")))},
     [], ["bad-workload.json", "/layers/1/tensors/1: \"1\" names an earlier"]),
    ("workload tensor named \"\"", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][1]["tensors"][1].update(name=""))},
     [], ["bad-workload.json", "/layers/1/tensors/1/name", "leave it out"]),
    ("workload tensors not a list", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][0].update(tensors={"shape": [1728]}))},
     [], ["bad-workload.json", "/layers/0/tensors", "non-empty array"]),
    ("workload tensors on a layer of no parameters", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][1].update(parameters=0, tensors=[]))},
     [], ["bad-workload.json", "/layers/1/tensors", "leave \"tensors\" out"]),
    ("workload tensor with a typo", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["layers"][0]["tensors"][0].update(
         shpae=[1728]))},
     [], ["bad-workload.json", "/layers/0/tensors/0", "shpae"]),
    ("workload FLOPs total that lies", scenario(workload="bad-workload.json"),
     {"bad-workload.json": bad_workload(lambda w: w["flops_per_sample"].update(forward=1))},
     [], ["bad-workload.json", "/flops_per_sample/forward", "the layers add up to"]),
    # nlohmann's overflow was an internal error (exit 1).
    ("number beyond a double", '{"name": "x", "seed": 1e999}', {}, [],
     ["scenario.json", "malformed JSON", "1e999"]),
    # A value taken as a string went into result.json as it came: not UTF-8,
    # nlohmann threw when writing it (exit 1).
    ("--set value that is not UTF-8", scenario(), {}, [b"--set", b"name=ba\xffse"],
     ["--set name:", "not valid UTF-8"]),
    # Read until it ends: a pipe or /dev/urandom hung, /dev/zero took all memory.
    ("platform that is a device", scenario(platform="/dev/zero"), {}, [],
     ["/dev/zero", "not a regular file"]),
    # A read that fails (EIO: /proc/self/mem at address 0) looked like the
    # end of the file and was reported as malformed JSON.
    ("platform that cannot be read", scenario(platform="/proc/self/mem"), {}, [],
     ["/proc/self/mem", "cannot read the file", "Input/output error"]),
    # SimGrid aborted in its solver once a compute ran on the host.
    ("XML host of speed 0", scenario(platform={"name": "x", "topology": "simgrid_xml",
                                               "xml": "speed0.xml", "nodes": 2}),
     {"speed0.xml": '<?xml version="1.0"?><!DOCTYPE platform SYSTEM '
                    '"https://simgrid.org/simgrid.dtd"><platform version="4.1">'
                    '<zone id="w" routing="Full"><host id="a" speed="0f"/>'
                    '<host id="b" speed="1Gf"/><link id="l" bandwidth="1Gbps" latency="1us"/>'
                    '<route src="a" dst="b"><link_ctn id="l"/></route></zone></platform>'},
     [], ["/platform/xml", "host 'a'", "speed"]),
    # SimGrid's parser took the NUL for the attribute's end: hosts n0, n1.
    ("XML with a NUL", scenario(platform={"name": "x", "topology": "simgrid_xml",
                                          "xml": "nul.xml", "nodes": 2}),
     {"nul.xml": CLUSTER_XML.replace('prefix="n"', 'prefix="n\0ode-"')}, [],
     ["scenario.json: /platform/xml:", "nul.xml: not a text file (a NUL byte at offset"]),
    ("XML with a byte-order mark", scenario(platform={"name": "x", "topology": "simgrid_xml",
                                                      "xml": "bom.xml", "nodes": 2}),
     {"bom.xml": "\ufeff" + CLUSTER_XML}, [],
     ["scenario.json: /platform/xml:", "bom.xml: starts with a UTF-8 byte-order mark"]),
    # Each '<' was taken up to the next '>', a copy of the rest of the file:
    # 640 KB of '</' took 17 s, and 4 MB would take minutes.
    ("XML ending in 4 MB of '</'", scenario(platform={"name": "x", "topology": "simgrid_xml",
                                                      "xml": "lt.xml", "nodes": 2}),
     {"lt.xml": CLUSTER_XML + "a</b" * 1000000}, [], ["scenario.json: /platform/xml"]),
    # The message sent the user to /platform, whose links are in the XML.
    ("XML iteration past any run", scenario(platform={"name": "x", "topology": "simgrid_xml",
                                                      "xml": "slow.xml", "nodes": 2}),
     {"slow.xml": '<?xml version="1.0"?><!DOCTYPE platform SYSTEM '
                  '"https://simgrid.org/simgrid.dtd"><platform version="4.1">'
                  '<zone id="w" routing="Full"><cluster id="c" prefix="n" suffix="" '
                  'radical="0-1" speed="1Gf" bw="0.001bps" lat="10us"/></zone></platform>'},
     [], ["scenario.json: /platform/xml: an iteration takes", "more than 1e9 s",
          "latencies in", "slow.xml"]),
    # A misspelt required field was reported as missing, the key typed
    # never named.
    ("misspelt required field",
     with_platform(link={"bandwith": "10Gbps", "latency": "10us"}), {}, [],
     ["/platform/link/bandwidth", "required field is missing", '"bandwith"']),
    # "expected an integer in [0, 0]" did not say the bound is iterations.
    ("as many warm-up iterations as iterations", with_training(iterations=2, warmup_iterations=2),
     {}, [], ["/training/warmup_iterations", "fewer than training.iterations (2)"]),
    # The first --set holding the field was blamed, not the last, which
    # wrote the value.
    ("second --set at fault", scenario(), {},
     ["--set", "platform=" + os.path.join(ROOT, "platforms", "fattree-96-1g.json"),
      "--set", "platform.nodes=200"],
     ["--set platform.nodes=200: /platform/nodes:", "the tree's 96 leaves", "fat_tree.down"]),
    ("second --set inside a compressor", scenario(), {},
     ["--set", 'compressor={"name": "topk"}', "--set", "compressor.density=3"],
     ["--set compressor.density=3: /compressor/density:"]),
    # CLI11 read -1 as 2^64 - 1 and saturated 2^66 to 2^63 - 1.
    ("--seed -1", scenario(), {}, ["--seed", "-1"],
     ["--seed: expected an integer in [0, 9223372036854775807]", "got '-1'"]),
    ("--seed past 2^64", scenario(), {}, ["--seed", "99999999999999999999"],
     ["--seed: expected an integer in [0, 9223372036854775807]", "got '99999999999999999999'"]),
    # 2^63 fits a uint64 but not the int64 result.json records it as.
    ("--seed 2^63", scenario(), {}, ["--seed", "9223372036854775808"],
     ["--seed: expected an integer in [0, 9223372036854775807]", "got '9223372036854775808'"]),
    # An empty path meant the default folder (--out) or nothing (--timeline).
    ("empty --timeline", scenario(), {}, ["--timeline", ""], ["--timeline: empty"]),
    # These named the file and not the field, or resolved "" to the
    # scenario's own folder ("/tmp/x/: is a directory").
    ("a folder as the device", scenario(), {}, ["--set", "device=" + ROOT],
     ["--set device=" + ROOT, "/device", "not a folder or a device"]),
    ("an empty device path", scenario(device=""), {}, [],
     ["scenario.json: /device:", 'expected a path, got ""']),
    ("an empty workload path", scenario(), {}, ["--set", "workload="],
     ["--set workload=: /workload:", 'expected a path, got ""']),
    ("a folder without a manifest as the workload", scenario(), {},
     ["--set", "workload=" + os.path.join(ROOT, "workloads", "models")],
     ["--set workload=", ": /workload: ", "models: not a trace folder: it holds no manifest.json"]),
    ("a missing platform file by --set", scenario(), {}, ["--set", "platform=nowhere.json"],
     ["--set platform=nowhere.json: /platform:", '"nowhere.json" not found beside']),
    ("an empty platform path", scenario(platform=""), {}, [],
     ["scenario.json: /platform:", 'got ""']),
    # Indices are 32-bit: past 2^32 - 1 parameters some compressors wrapped
    # them silently, others stopped with an internal error.
    ("a model past a 32-bit index, compressed", scenario(
        workload="huge.json", compressor={"name": "deft", "density": 0.001}),
     {"huge.json": {"name": "huge", "sample_unit": "sample", "parameters": 5 * 10 ** 9,
                    "layers": [{"name": "t", "kind": "other", "parameters": 5 * 10 ** 9,
                                "forward_flops": 0, "backward_flops": 0}]}}, [],
     ["scenario.json: /workload:", "deft compresses the whole model at once, 5000000000",
      "32-bit index"]),
    # The parser's "unexpected end of input" at line 1, column 1 read as a
    # broken file, not as an empty one or a binary one.
    ("an empty scenario file", "", {}, [], ["scenario.json: the file is empty, expected JSON"]),
    ("a scenario of white space", " \n\t\n", {}, [],
     ["scenario.json: the file holds only white space"]),
    ("a binary scenario file", "\x00\x01\x02", {}, [],
     ["scenario.json: not a text file (a NUL byte at offset 0)"]),
    # A unit that is one of gcsim's but for case: which one was meant.
    ("a bandwidth unit in the wrong case",
     with_platform(link={"bandwidth": "10gbps", "latency": "10us"}), {}, [],
     ["/platform/link/bandwidth",
      'got "10gbps" (units are case-sensitive: did you mean "10Gbps"?)']),
    # Bytes or bits: the unit closest in case ("MBPS" is MBps, not Mbps).
    ("a bandwidth unit in capitals",
     with_platform(link={"bandwidth": "100MBPS", "latency": "10us"}), {}, [],
     ["/platform/link/bandwidth", 'got "100MBPS" (units are case-sensitive: did you mean '
      '"100MBps"?)']),
    # A rate written as people write it: "10Gb" is no unit of gcsim's.
    ("a bandwidth without its per second",
     with_platform(link={"bandwidth": "10Gb", "latency": "10us"}), {}, [],
     ["/platform/link/bandwidth", 'got "10Gb" (did you mean "10Gbps"?)']),
    ("a bandwidth in bits a second", with_platform(link={"bandwidth": "10Gbs", "latency": "10us"}),
     {}, [], ["/platform/link/bandwidth", 'got "10Gbs" (did you mean "10Gbps"?)']),
    ("a latency with a micro sign", with_platform(link={"bandwidth": "10Gbps", "latency": "5µs"}),
     {}, [], ["/platform/link/latency", 'got "5µs" (did you mean "5us"?)']),
    # No hint to a value the field refuses too: 2000Tbps is past 1000Tbps.
    ("a bandwidth past the range without its per second",
     with_platform(link={"bandwidth": "2000Tb", "latency": "10us"}), {}, [],
     ["/platform/link/bandwidth", 'got "2000Tb"\n']),
    ("a size unit in the wrong case", with_training(bucket_size="25 mib"), {}, [],
     ["/training/bucket_size", 'did you mean "25MiB"?']),
    # A --set value that opens JSON and breaks it was taken as a string and
    # refused for its type, the missing brace never named.
    ("--set of broken JSON", scenario(), {},
     ["--set", 'compressor={"name": "topk", "density": 0.01'],
     ["--set compressor: the value opens a JSON object but is not valid JSON (syntax error",
      "unexpected end of input", "a string that starts so is given quoted"]),
    # A number past a double is no JSON nlohmann reads: a string, refused
    # for its type (not an exception out of the parser).
    ("--set of a number past a double", scenario(), {}, ["--set", "seed=1e999"],
     ["--set seed=1e999: /seed: expected an integer", '"1e999"']),
    # A sweep file given to run was refused for a missing platform.
    ("a sweep file given to run", {"scenario": QUICKSTART, "grid": {"platform.nodes": [2, 4]}},
     {}, [], ["scenario.json: /platform: required field is missing: this is a sweep file",
              "gcsim sweep"]),
    # A scenario copied out of the tree names a shipped file by its bare
    # name: the shipped one of that kind (a device, not a platform).
    ("a shipped device by its bare name", scenario(device="v100.json"), {}, [],
     ["scenario.json: /device:", 'did you mean "platforms/devices/v100.json"?']),
    # And without its extension (no hint at all).
    ("a shipped device by its name alone", scenario(device="v100"), {}, [],
     ["scenario.json: /device:", 'did you mean "platforms/devices/v100.json"?']),
    ("a shipped platform by its name alone", scenario(platform="star-8x10g"), {}, [],
     ["scenario.json: /platform:", 'did you mean "platforms/star-8x10g.json"?']),
    ("a platform's name given as the device", scenario(device="star-8x10g.json"), {}, [],
     ["scenario.json: /device:", '"star-8x10g.json" not found beside scenario.json']),
    # A layer spec's gradients have methods of their own (a trace's were
    # ignored without a word, then refused with the whole field).
    ("a trace's synthesis with a layer spec", scenario(gradients={"synthesis": "mean_scaling"}),
     {}, [], ['scenario.json: /gradients/synthesis: unknown value "mean_scaling"; expected one '
              'of: capture_fitted shared_heavy_signal']),
    ("a spread for shared_heavy_signal",
     scenario(gradients={"synthesis": "shared_heavy_signal", "spread": 0.5}), {}, [],
     ['scenario.json: /gradients/spread: only with "synthesis": "capture_fitted", not '
      '"shared_heavy_signal"']),
    ("a signal share past 1", scenario(gradients={"signal_share": 1.5}), {}, [],
     ["scenario.json: /gradients/signal_share: expected a number in [0, 1], got 1.5"]),
    ("a negative spread", scenario(), {}, ["--set", "gradients.spread=-0.1"],
     ["/gradients/spread: expected a number in [0, 2], got -0.1"]),
    ("a signal share for a trace", scenario(workload="trace", gradients={"signal_share": 0.2}),
     trace_with(lambda m: None), [],
     ["scenario.json: /gradients/signal_share: only for a layer spec's synthetic gradients"]),
    # nlohmann kept the second of two keys in a --set value without a word.
    ("a key twice in a --set value", scenario(), {},
     ["--set", 'compressor={"name": "topk", "density": 0.01, "density": 0.02}'],
     ["--set compressor: /compressor/density: this key appears twice in one object"]),
    # An error's line ended at the NUL (a C string's end): "scenario.json: /trai".
    ("a NUL in a key", json.dumps(dict(scenario(), **{"trai\u0000ning": 1})), {}, [],
     ["scenario.json: a key holds a NUL character (\\u0000), which no input takes"]),
    ("a NUL in a value", scenario(name="a\u0000b"), {}, [],
     ["scenario.json: /name: a string holds a NUL character"]),
    # A million-letter key was echoed whole (and compared letter by letter
    # with every field's name for a did-you-mean: seconds for 50 MB).
    ("a key of a million letters", dict(scenario(), **{"k" * 1000000: 1}), {}, [],
     ["scenario.json: /kkkk", " bytes cut ...] ", "unknown"]),
    ("a negative float16 sum", with_platform(float16_sum="-1ns"), {}, [],
     ["scenario.json: /platform/float16_sum:"]),
    ("a float16 sum on a ring", with_platform(topology="ring", float16_sum="10ns"), {}, [],
     ["scenario.json: /platform/float16_sum: is a field of a star platform"]),
    # A comment took any value (it is not simulated, but it is read).
    ("a comment that is a number", scenario(comment=5), {}, [],
     ["scenario.json: /comment: expected a string, got number 5"]),
    ("a platform description that is a list", with_platform(description=["x"]), {}, [],
     ["scenario.json: /platform/description: expected a string, got"]),
    # An empty --replay ran the compressors as if it were not given.
    ("empty --replay", scenario(), {}, ["--replay", ""], ["--replay: empty"]),
    # Outputs onto inputs or onto each other were written over without a word.
    ("--timeline onto the scenario", scenario(), {}, ["--timeline", "scenario.json"],
     ["--timeline: scenario.json is also the scenario file"]),
    ("--timeline onto the workload", scenario(workload="w.json"), {"w.json": GOOD_WORKLOAD},
     ["--timeline", "w.json"], ["--timeline: w.json is also the scenario's workload"]),
    # A referenced file's own JSON path was dropped from the message.
    ("platform file with a key twice", scenario(platform="p.json"),
     {"p.json": '{"name": "p", "topology": "star", "nodes": 2, "nodes": 3, '
                '"link": {"bandwidth": "1Gbps", "latency": "1us"}}'}, [],
     ["scenario.json: /platform:", "p.json: /nodes:", "twice"]),
    ("--set of a scope the compressor cannot", scenario(), {},
     ["--set", 'compressor={"name": "gtopk", "density": 0.01}',
      "--set", "training.compression_scope=bucket"],
     ["--set training.compression_scope=bucket: /training/compression_scope:"]),
    ("--timeline onto result.json", scenario(), {}, ["--timeline", "out/../out/result.json"],
     ["--timeline:", "is also --out's result.json"]),
    ("optimizer kernel that overflows", scenario(device="huge-kernel.json"),
     {"huge-kernel.json": bad_device(
         lambda d: d["kernels"]["sgd_momentum"]["fit"]["segments"][0].update(per_n_s=1e308))},
     [], ["huge-kernel.json", "/kernels/sgd_momentum/fit", "inf s"]),
    # A mutation audit (2026-12-04) found these checks untested: without
    # each, the run went ahead (a typo unseen, a value truncated or out of
    # range recorded), or SimGrid refused it without naming the field.
    ("negative warm-up", scenario(), {}, ["--set", "training.warmup_iterations=-1"],
     ["/training/warmup_iterations", "[0, 100000]"]),
    ("zero batch", scenario(), {}, ["--set", "training.batch_per_worker=0"],
     ["/training/batch_per_worker", "[1, 1048576], got 0"]),
    ("a fractional iteration count", scenario(), {}, ["--set", "training.iterations=2.5"],
     ["/training/iterations", "expected an integer", "2.5"]),
    ("a fractional node count", scenario(), {}, ["--set", "platform.nodes=4.5"],
     ["/platform/nodes", "expected an integer", "4.5"]),
    ("unknown gradients field",
     scenario(workload=os.path.join(ROOT, "workloads", "traces", "fmnist-cnn-16w"),
              gradients={"synthesis_method": "x"}), {}, [],
     ["/gradients/synthesis_method", "unknown field", "did you mean \"synthesis\""]),
    ("unknown link field", with_platform(link={"bandwidth": "10Gbps", "latency": "10us",
                                               "latancy": "1ms"}), {}, [],
     ["/platform/link/latancy", "unknown field", "did you mean \"latency\""]),
    ("unknown network field", with_platform(network={"model": "LV08", "latency_factr": 1}), {},
     [], ["/platform/network/latency_factr", "unknown field"]),
    ("a fat-tree level of 0", with_platform(topology="fat_tree",
                                            fat_tree={"down": [0], "up": [1]}), {}, [],
     ["/platform/fat_tree/down/0", "positive"]),
    ("a fat-tree of no levels", with_platform(topology="fat_tree",
                                              fat_tree={"down": [], "up": []}), {}, [],
     ["/platform/fat_tree/down", "non-empty"]),
    ("a fat-tree level of 5000", with_platform(topology="fat_tree",
                                               fat_tree={"down": [5000], "up": [1]}), {}, [],
     ["/platform/fat_tree/down/0", "4096"]),
    ("fat-tree links of another length",
     with_platform(topology="fat_tree", fat_tree={"down": [4], "up": [1], "links": [1, 2]}), {},
     [], ["/platform/fat_tree/links", "as many levels as \"down\" (1)"]),
    ("5000 shared cores", with_platform(shared_cores=5000), {}, [],
     ["/platform/shared_cores", "[1, 4096]"]),
    ("zero parameter servers", with_platform(topology="parameter_server", servers=0,
                                             server_link={"bandwidth": "10Gbps",
                                                          "latency": "10us"}), {}, [],
     ["/platform/servers", "[1, 65536]"]),
    ("65 GPUs a machine", with_platform(topology="multi_gpu", gpus_per_node=65,
                                        gpu_link={"bandwidth": "100Gbps", "latency": "1us"}),
     {}, [], ["/platform/gpus_per_node", "[1, 64]"]),
    ("2000 machines of 64 GPUs", with_platform(topology="multi_gpu", nodes=2000, gpus_per_node=64,
                                               gpu_link={"bandwidth": "100Gbps",
                                                         "latency": "1us"}), {}, [],
     ["/platform/nodes", "nodes x gpus_per_node exceeds 65536"]),
    ("an XML platform of 70000 nodes",
     scenario(platform={"name": "c", "topology": "simgrid_xml", "xml": "cluster.xml",
                        "nodes": 70000}), {
         "cluster.xml": '<?xml version="1.0"?><!DOCTYPE platform SYSTEM '
                        '"https://simgrid.org/simgrid.dtd"><platform version="4.1">'
                        '<cluster id="c" prefix="n-" suffix="" radical="0-69999" speed="1Gf" '
                        'bw="10Gbps" lat="1us"/></platform>'}, [],
     ["/platform/nodes", "[1, 65536]"]),
    ("a comment nested 257 deep", dict(scenario(), comment=nested(256)), {}, [],
     ["nested deeper than 256 levels"]),
    ("a bucket of 2^63 KiB and one more", scenario(), {},
     ["--set", "training.bucket_size=8796093022209KiB"], ["/training/bucket_size", "8192TiB"]),
    ("--set past an array's end", scenario(), {},
     ["--set", "platform=" + os.path.join(ROOT, "platforms", "fattree-96-1g.json"),
      "--set", "platform.fat_tree.down.2=2"], ["--set platform.fat_tree.down.2=2",
                                               "\"2\" is not an index of this array of 2"]),
    ("--set of an index past any array", scenario(), {},
     ["--set", "platform=" + os.path.join(ROOT, "platforms", "fattree-96-1g.json"),
      "--set", "platform.fat_tree.down.99999999999999999999=2"], ["not an index"]),
    ("--set with an empty component", scenario(), {}, ["--set", "training.comment..x=1"],
     ["--set training.comment..x=1", "empty component"]),
]


def grid(axes, values):
    """A sweep of QUICKSTART over `axes` parameters of `values` values each."""
    return {"scenario": QUICKSTART,
            "grid": {f"training.x{a}": list(range(values)) for a in range(axes)}}


# (name, sweep document, extra args, substrings the first stderr line must hold[,
# where the sweep file is, under the folder holding --out "out"])
SWEEP_CASES = [
    # 16^16 = 2^64 points wrapped to 0: an empty sweep.csv and exit 0.
    ("grid of 2^64 points", grid(16, 16), [],
     ["sweep.json: /grid: the grid has 1.845e+19 points, more than 100000"]),
    # 1000^7 points: vector::reserve threw, an internal error.
    ("grid of 1e21 points", grid(7, 1000), [], ["sweep.json: /grid: the grid has 1e+21 points"]),
    # Each value was compared with every earlier one: hours for 10^6 values.
    ("one axis of 100001 values", grid(1, 100001), [],
     ["sweep.json: /grid: the grid has 100001 points, more than 100000"]),
    # 1 and 1.0 are one value, as JSON compares them.
    ("a value twice", {"scenario": QUICKSTART, "grid": {"seed": [1, 2, 1.0]}}, [],
     ["sweep.json: /grid/seed/2: duplicate value 1.0"]),
    # Every point with it failed to start (exit 1), after the sweep began.
    ("a value past an argument's length",
     {"scenario": QUICKSTART, "grid": {"description": ["d" * 200000]}}, [],
     ["sweep.json: /grid/description/0: this value makes a --set argument of 200012 bytes, "
      "more than the 131071"]),
    ("name ..", dict(grid(1, 2), name=".."), [], ["sweep.json: /name", "not \".\" or \"..\""]),
    ("name of 256 bytes", dict(grid(1, 2), name="a" * 256), [],
     ["sweep.json: /name", "at most 255 bytes"]),
    ("empty --scratch-dir", grid(1, 2), ["--scratch-dir", ""], ["--scratch-dir: empty"]),
    ("--jobs 0", {"scenario": QUICKSTART, "grid": {"platform.nodes": [2]}}, ["--jobs", "0"],
     ["--jobs: expected an integer in [1, 4096], got '0'"]),
    # CLI11 said "Value abc not in range 1 to 4096" of a word.
    ("--jobs abc", {"scenario": QUICKSTART, "grid": {"platform.nodes": [2]}}, ["--jobs", "abc"],
     ["--jobs: expected an integer in [1, 4096], got 'abc'"]),
    # sweep has no --set (the sweep file's "set" is its place): CLI11 said
    # "The following arguments were not expected: a=b --set", last first.
    ("--set", {"scenario": QUICKSTART, "grid": {"platform.nodes": [2]}}, ["--set", "seed=3"],
     ["gcsim sweep: unknown option --set (given: --set seed=3;"]),
    # A sweep file copied out of workloads/scenarios/ names its base by its
    # bare name: where that file is.
    ("a copied sweep's base scenario", {"scenario": "quickstart.json",
                                        "grid": {"platform.nodes": [2, 4]}}, [],
     ["sweep.json: /scenario:", '"quickstart.json" not found (beside sweep.json',
      'did you mean "workloads/scenarios/quickstart.json"?']),
    # A scenario given to sweep was refused for a missing "scenario".
    ("a scenario given to sweep", BASE, [],
     ["sweep.json: /scenario: required field is missing: this is a scenario", "gcsim run"]),
    # What the sweep writes into --out was written over the sweep file there.
    ("a sweep file named points.txt in --out", grid(1, 2), [],
     ["out/points.txt is also the sweep file"], "out/points.txt"),
    ("a sweep file named sweep.csv in --out", grid(1, 2), [],
     ["out/sweep.csv is also the sweep file"], "out/sweep.csv"),
    ("a sweep file in a point's folder", grid(1, 2), [],
     ["is the sweep file and lies in", "out/points/p000_x0-0, a point's folder"],
     "out/points/p000_x0-0/log.txt"),
]


# `gcsim calibrate` options out of range: once a default without a word (0,
# -1), or an hour of timing (100000 sizes per octave). Refused before any timing.
CALIBRATE_CASES = [
    ("--rounds 0", ["--rounds", "0"], ["--rounds: expected an integer in [1, 100], got '0'"]),
    ("--min-log2 0", ["--min-log2", "0"], ["--min-log2: expected an integer in [4, 30], got '0'"]),
    ("--min-log2 12.5", ["--min-log2", "12.5"],
     ["--min-log2: expected an integer in [4, 30], got '12.5'"]),
    ("--steps-per-octave 100000", ["--steps-per-octave", "100000"],
     ["--steps-per-octave: expected an integer in [1, 64], got '100000'"]),
    # Both sizes given: neither is --quick's.
    ("--min-log2 above --max-log2", ["--min-log2", "12", "--max-log2", "10"],
     ["--max-log2: the smallest size (2^12) is above the largest (2^10)"]),
    # --quick starts at 2^10: it was reported as --min-log2's fault.
    ("--max-log2 below --quick's range", ["--max-log2", "8"],
     ["--max-log2: the smallest size (2^10, --quick's) is above the largest (2^8)"]),
]


def run_calibrate_case(args, expected, workdir):
    out = os.path.join(workdir, "profile.json")
    result = subprocess.run([GCSIM, "calibrate", "--device", "cpu", "--quick", "--out", out] + args,
                            capture_output=True, text=True, timeout=60)
    return refusal_problems(result, expected, 2, out)


def run_sweep_case(name, document, args, expected, workdir, sweep_file="sweep.json"):
    """`sweep_file`: where the sweep file is, under `workdir` (--out is "out")."""
    path = os.path.join(workdir, sweep_file)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(document, handle)
    out = os.path.join(workdir, "out")
    result = subprocess.run([GCSIM, "sweep", path, "--out", out] + args, capture_output=True,
                            text=True, timeout=120, cwd=workdir)
    problems = []
    if result.returncode != 2:
        problems.append(f"exit status {result.returncode}, expected 2")
    lines = result.stderr.strip().splitlines()
    first = lines[0] if lines else ""
    if len(first) > 200:
        problems.append(f"a first line of {len(first)} characters: {first[:200]!r}")
    for needle in expected:
        if needle not in first:
            problems.append(f"message lacks {needle!r}: {result.stderr.strip()[:300]!r}")
    if os.path.exists(os.path.join(out, "sweep.csv")) and sweep_file != "out/sweep.csv":
        problems.append("a sweep.csv was written")
    with open(path) as handle:
        if handle.read() != json.dumps(document):
            problems.append("the sweep file was written over")
    return problems


# Outputs that cannot be written: exit 1 (the environment's fault), one line
# naming the file, and no result.json (a sweep counts a point with one as done).
# (name, extra args, substrings the message must hold)
OUTPUT_CASES = [
    # The run's working directory: result.json was written before the timeline failed.
    ("timeline onto a folder", ["--timeline", "."], ["gcsim: cannot write .: Is a directory"]),
]


def run_case(name, document, files, args, expected, workdir, status=2, out_name="out",
             existing=False):
    """Runs one case; `out_name` is the --out folder under `workdir`, made
    beforehand when `existing`. A refused run must leave no folder it made
    and remove none it did not."""
    path = os.path.join(workdir, "scenario.json")
    if document is not None:
        with open(path, "w") as handle:
            handle.write(document if isinstance(document, str) else json.dumps(document))
    for file_name, content in files.items():
        target = os.path.join(workdir, file_name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if isinstance(content, Link):
            os.symlink(content, target)
            continue
        with open(target, "w") as handle:
            handle.write(content if isinstance(content, str) else json.dumps(content))
    out = os.path.join(workdir, out_name)
    if existing:
        os.makedirs(out)
    result = subprocess.run([GCSIM, "run", path, "--out", out] + args, capture_output=True,
                            text=True, timeout=120, cwd=workdir)
    problems = refusal_problems(result, expected, status, os.path.join(out, "result.json"))
    if result.stdout:
        problems.append(f"printed on stdout: {result.stdout[:200]!r}")
    first = os.path.join(workdir, out_name.split("/")[0])
    if not existing and os.path.exists(first):
        problems.append(f"left {out_name.split('/')[0]}/ behind, which it made")
    if existing and not os.path.isdir(out):
        problems.append(f"removed {out_name}/, which was there before")
    return problems


# Refused after gcsim made the --out folder: (name, --out under the work
# folder, whether it exists beforehand). A folder gcsim made goes, nested
# ones too; one that was there stays.
TOO_LONG = with_platform(link={"bandwidth": "1Gbps", "latency": "1e8s"},
                         network={"latency_factor": 1000})
FOLDER_CASES = [
    ("an --out folder it made", "made", False),
    ("nested --out folders it made", "made/a/b", False),
    ("an --out folder that was there", "there", True),
]


# (name, args, stdout, exit status, substrings of the one line on stderr)
COMMAND_CASES = [
    # CLI11 said only "A subcommand is required".
    ("a misspelt command", ["rnu", "x.json"], os.devnull, 2,
     ["gcsim: unknown command 'rnu'", "run, sweep, validate"]),
    # The same words for an option before the command and for none at all
    # ("-x run" said "scenario is required").
    ("an option before the command", ["-x", "run", "x.json"], os.devnull, 2,
     ["gcsim: unknown option '-x' before the command", "run, sweep, validate"]),
    ("no command", [], os.devnull, 2, ["gcsim: no command given", "run, sweep, validate"]),
    # CLI11's lines did not say which command they were about, and one
    # said "At Most 1 required but received 2" of an option given twice.
    ("run without a scenario", ["run"], os.devnull, 2,
     ["gcsim run: scenario is required (see gcsim run --help)"]),
    # It said "<input>: file not found; did you mean" a file of the folder.
    ("run with an empty scenario", ["run", ""], os.devnull, 2,
     ["gcsim run: scenario: empty: name a file or folder"]),
    ("validate with an empty file", ["validate", ""], os.devnull, 2,
     ["gcsim validate: measured: empty: name a file or folder"]),
    # A scenario named like an option: only "scenario is required".
    ("a scenario named -dash.json", ["run", "-dash.json"], os.devnull, 2,
     ["gcsim run: scenario is required; -dash.json is no option of gcsim run",
      "given as ./-dash.json or after --"]),
    ("--seed twice", ["run", QUICKSTART, "--seed", "1", "--seed", "2"], os.devnull, 2,
     ["gcsim run: --seed: given more than once; give it once"]),
    # "A subcommand is required" again, of a subcommand misspelt or missing.
    ("a misspelt profile subcommand", ["profile", "shwo", "x.json"], os.devnull, 2,
     ["gcsim profile: unknown subcommand 'shwo' (subcommands: show, refit;"]),
    ("no profile subcommand", ["profile"], os.devnull, 2,
     ["gcsim profile: no subcommand given (subcommands: show, refit;"]),
    # It said "gcsim profile: file is required (see gcsim profile --help)".
    ("profile show without its file", ["profile", "show"], os.devnull, 2,
     ["gcsim profile show: file is required (see gcsim profile show --help)"]),
    # The report went nowhere and the exit status said success.
    ("inspect onto a full stdout", ["inspect", os.path.join(ROOT, "workloads", "traces",
                                                            "fmnist-cnn-16w")],
     "/dev/full", 1, ["gcsim: cannot write the standard output: No space left on device"]),
]


def main():
    failures = 0
    for name, document, files, args, expected in CASES:
        if isinstance(document, dict) and document.get("platform", {}) is not None and \
                isinstance(document.get("platform"), dict) and "nodes" in document["platform"] and \
                document["platform"]["nodes"] is None:
            del document["platform"]["nodes"]
        with tempfile.TemporaryDirectory() as workdir:
            problems = run_case(name, document, files, args, expected, workdir)
        status = "ok" if not problems else "FAIL"
        print(f"{status}: {name}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    for name, args, expected in OUTPUT_CASES:
        with tempfile.TemporaryDirectory() as workdir:
            problems = run_case(name, scenario(), {}, args, expected, workdir, status=1)
        print(f"{'ok' if not problems else 'FAIL'}: output: {name}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    # The finished file was renamed onto the path whatever it was: as root,
    # --timeline /dev/null made /dev/null a regular file. A FIFO shows the
    # same without root.
    with tempfile.TemporaryDirectory() as workdir:
        fifo = os.path.join(workdir, "pipe")
        os.mkfifo(fifo)
        problems = run_case("timeline onto a pipe", scenario(), {}, ["--timeline", fifo],
                            ["cannot write " + fifo, "not a regular file"], workdir, status=1)
        if not stat.S_ISFIFO(os.lstat(fifo).st_mode):
            problems.append("the pipe was replaced")
    print(f"{'ok' if not problems else 'FAIL'}: output: timeline onto a pipe")
    for problem in problems:
        print(f"    {problem}")
    failures += bool(problems)
    for name, out_name, existing in FOLDER_CASES:
        with tempfile.TemporaryDirectory() as workdir:
            problems = run_case(name, TOO_LONG, {}, [], ["/platform", "more than 1e9 s"], workdir,
                                out_name=out_name, existing=existing)
        print(f"{'ok' if not problems else 'FAIL'}: folders: {name}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    for name, document, args, expected, *sweep_file in SWEEP_CASES:
        with tempfile.TemporaryDirectory() as workdir:
            problems = run_sweep_case(name, document, args, expected, workdir, *sweep_file)
        print(f"{'ok' if not problems else 'FAIL'}: sweep: {name}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    for name, args, expected in CALIBRATE_CASES:
        with tempfile.TemporaryDirectory() as workdir:
            problems = run_calibrate_case(args, expected, workdir)
        print(f"{'ok' if not problems else 'FAIL'}: calibrate: {name}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    for name, args, stdout, status, expected in COMMAND_CASES:
        with open(stdout, "w") as handle:
            result = subprocess.run([GCSIM, *args], stdout=handle, stderr=subprocess.PIPE,
                                    text=True, timeout=120)
        problems = refusal_problems(result, expected, status)
        print(f"{'ok' if not problems else 'FAIL'}: command: {name}")
        for problem in problems:
            print(f"    {problem}")
        failures += bool(problems)
    total = len(CASES) + len(OUTPUT_CASES) + len(FOLDER_CASES) + len(SWEEP_CASES) + \
        len(CALIBRATE_CASES) + len(COMMAND_CASES)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
