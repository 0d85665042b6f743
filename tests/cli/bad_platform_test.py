#!/usr/bin/python3
"""Platforms at the edges and the inputs SimGrid used to crash, hang or
deadlock on: each bad one must exit with status 2, print one line naming the
file and the JSON field, and leave no result.json; the smallest platforms of
every topology must run.

Usage: bad_platform_test.py PATH/TO/gcsim
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

from checks import Checks, refusal_problems

GCSIM = os.path.abspath(sys.argv[1])
# An AddressSanitizer build (GCSIM_SANITIZE) catches a crash in SimGrid
# itself and reports it in place of the signal.
SANITIZED = "libasan" in subprocess.run(["ldd", GCSIM], capture_output=True, text=True).stdout
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
QUICKSTART = os.path.join(ROOT, "workloads", "scenarios", "quickstart.json")
DEFT16 = os.path.join(ROOT, "workloads", "scenarios", "deft-fmnist-16.json")
LINK = {"bandwidth": "10Gbps", "latency": "10us"}

check = Checks()


def gcsim(*args, cwd=None):
    return subprocess.run([GCSIM, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def scenario_file(workdir, platform, name="scenario.json"):
    """quickstart.json with `platform` inline (paths made absolute)."""
    with open(QUICKSTART) as handle:
        document = json.load(handle)
    document["platform"] = platform
    for key in ("workload", "device"):
        document[key] = os.path.join(ROOT, document[key])
    document["training"]["iterations"] = 2
    path = os.path.join(workdir, name)
    with open(path, "w") as handle:
        json.dump(document, handle)
    return path


def xml_file(workdir, name, body, zone="w", routing="Full", config=None, after=""):
    """A SimGrid platform file of one zone holding `body`, after a <config>
    of `config`'s props if given and before `after` (<trace>s and
    <trace_connect>s, which follow the zone); returns its name."""
    with open(os.path.join(workdir, name), "w") as handle:
        handle.write('<?xml version="1.0"?>\n'
                     '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                     '<platform version="4.1">\n'
                     + (f'<config>{config}</config>\n' if config is not None else '')
                     + f'<zone id="{zone}" routing="{routing}">\n{body}\n</zone>\n{after}</platform>\n')
    return name


def out_dir(workdir, name):
    """A result folder of the case's own: a leftover result.json must not pass
    for another case's."""
    return os.path.join(workdir, "out-" + "".join(c if c.isalnum() else "-" for c in name))


def expect_refused(name, result, out, needles):
    problems = refusal_problems(result, needles,
                                result_file=os.path.join(out, "result.json") if out else None)
    check(not problems, f"{name}: {'; '.join(problems) or result.stderr.strip()}")


def platforms_at_their_smallest(workdir):
    smallest = {
        "a one-node ring": {"topology": "ring", "nodes": 1, "link": LINK},
        "a two-node ring": {"topology": "ring", "nodes": 2, "link": LINK},
        "a one-node star": {"topology": "star", "nodes": 1, "link": LINK},
        "one worker and one server": {"topology": "parameter_server", "nodes": 1, "servers": 1,
                                      "link": LINK},
        "a one-leaf fat-tree": {"topology": "fat_tree", "fat_tree": {"down": [1], "up": [1]},
                                "link": LINK},
        "one machine of one GPU": {"topology": "multi_gpu", "nodes": 1, "gpus_per_node": 1,
                                   "link": LINK, "gpu_link": LINK},
    }
    for name, platform in smallest.items():
        path = scenario_file(workdir, platform)
        for compressor in ({"name": "dense"}, {"name": "topk", "density": 0.01}):
            out = out_dir(workdir, f"{name} {compressor['name']}")
            result = gcsim("run", path, "--out", out, "--quiet",
                           "--set", "compressor=" + json.dumps(compressor))
            check(result.returncode == 0 and os.path.exists(os.path.join(out, "result.json")),
                  f"{name} trains with {compressor['name']} (status {result.returncode}"
                  f"{': ' + result.stderr.strip()[-300:] if result.returncode else ''})")
    # A ring of one has nobody to talk to: nothing goes on the wire.
    out = os.path.join(workdir, "out-ring1")
    result = gcsim("run", QUICKSTART, "--out", out, "--quiet", "--set", "platform.topology=ring",
                   "--set", "platform.nodes=1", "--set", "training.iterations=2")
    if check(result.returncode == 0, f"the quickstart on a one-node ring runs "
                                     f"(status {result.returncode})"):
        with open(os.path.join(out, "result.json")) as handle:
            summary = json.load(handle)["summary"]
        check(summary["bytes_sent_per_worker"] == 0, "a one-node ring sends nothing")


def compressed_on_parameter_server(workdir):
    # Compressed steps run among the workers: the servers must not wait for
    # dense buckets (the run deadlocked on any parameter-server platform).
    path = scenario_file(workdir, {"topology": "parameter_server", "nodes": 4, "servers": 2,
                                   "link": LINK})
    out = os.path.join(workdir, "out-ps")
    result = gcsim("run", path, "--out", out, "--set",
                   'compressor={"name": "randomk", "density": 0.01}')
    check(result.returncode == 0, f"a compressed run on a parameter-server platform finishes "
                                  f"(status {result.returncode}: {result.stderr.strip()[-200:]})")
    # Its title names the baseline's push/pull; the summary says where the
    # compressor's steps ran instead (a dense run's has nothing to say).
    timeline = os.path.join(workdir, "ps.trace.json")
    dense = gcsim("run", path, "--out", os.path.join(workdir, "out-ps-dense"), "--timeline",
                  timeline)
    # The servers' sending has tracks of its own: each server's pull of each
    # bucket, from when it had every push to when the workers had its shard.
    with open(timeline) as handle:
        events = json.load(handle)["traceEvents"]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
              if e.get("ph") == "M" and e["name"] == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    pulled = {}
    for span in spans:
        track = tracks[(span["pid"], span["tid"])]
        if track.startswith("server "):
            pulled.setdefault(track, []).append(span)
    workers_done = max(e["ts"] + e["dur"] for e in spans
                       if tracks[(e["pid"], e["tid"])].startswith("worker "))
    check(sorted(pulled) == ["server 0 communication", "server 1 communication"]
          and all(len(own) == len(pulled["server 0 communication"]) > 0
                  and all(s["name"].startswith("pull bucket ") and s["ts"] > 0
                          and s["ts"] + s["dur"] <= workers_done + 1e-6 for s in own)
                  for own in pulled.values()),
          f"the servers' pulls have tracks of their own: {sorted(pulled)}")
    # Their args: the bytes each pull sent, per iteration the server's bytes.
    with open(os.path.join(workdir, "out-ps-dense", "result.json")) as handle:
        iterations = json.load(handle)["iterations"]
    server_bytes = [[sum(s["args"]["bytes_sent"] for s in own if s["args"]["iteration"] == i)
                     for own in pulled.values()] for i in range(len(iterations))]
    check([(sum(b) / len(b), max(b)) for b in server_bytes]
          == [(it["bytes_sent_per_server"], it["bytes_sent_max_server"]) for it in iterations],
          f"the servers' pulls' bytes_sent args add up to result.json's: {server_bytes}")
    note = "  note: randomk's steps run among the workers (its allreduces a ring)"
    # With a ring for the dense buckets too, the baseline bypasses them as well.
    ring = gcsim("run", path, "--out", os.path.join(workdir, "out-ps-ring"), "--set",
                 'compressor={"name": "randomk", "density": 0.01}', "--set",
                 "training.allreduce=ring")
    check(note in result.stdout and dense.returncode == 0 and "note:" not in dense.stdout
          and ring.returncode == 0 and "note:" not in ring.stdout,
          f"a compressed run on parameter servers says its steps bypass them: "
          f"{result.stdout[:400]!r} {ring.stdout[:300]!r}")


def sixteen_thousand_workers(workdir):
    def trains(platform, name, what, *sets):
        """One iteration of the Fashion-MNIST CNN on `platform`, with `sets`."""
        out = os.path.join(workdir, "out-" + name)
        result = gcsim("run", scenario_file(workdir, platform), "--out", out, "--quiet",
                       "--set", "training.iterations=1", "--set", "training.warmup_iterations=0",
                       "--set", "workload=" + os.path.join(ROOT, "workloads", "models",
                                                           "fmnist-cnn.json"), *sets)
        check(result.returncode == 0 and os.path.exists(os.path.join(out, "result.json")),
              f"{what} (status {result.returncode}"
              f"{': ' + result.stderr.strip()[:300] if result.returncode else ''})")

    # Two actors per worker, and SimGrid put each actor's stack in two memory
    # mappings (a guard page): 16384 workers passed Linux's default limit of
    # 65530 and SimGrid aborted with "Failed to protect stack".
    trains({"topology": "parameter_server", "nodes": 16384, "servers": 1, "link": LINK},
           "16384", "16384 workers train", "--set", "training.bucket_size=1GiB")
    # A tree allreduce runs four more actors per worker while it lasts: 6000
    # workers aborted the same way, counted as two actors each.
    trains({"topology": "star", "nodes": 6000, "link": LINK}, "6000-tree",
           "6000 workers train with the tree allreduce", "--set", "training.allreduce=tree")


def fat_tree_too_large(workdir):
    path = scenario_file(workdir, {"topology": "fat_tree", "link": LINK,
                                   "fat_tree": {"down": [4], "up": [4096], "links": [4096]}})
    out = out_dir(workdir, "links")
    expect_refused("a fat-tree of 67 million links", gcsim("run", path, "--out", out), out,
                   [path, "/platform/fat_tree", "67108864 links", "1000000"])
    # Levels whose leaf count overflows any integer.
    path = scenario_file(workdir, {"topology": "fat_tree", "link": LINK,
                                   "fat_tree": {"down": [4096] * 6, "up": [1] * 6}})
    out = out_dir(workdir, "leaves")
    expect_refused("a fat-tree of 4096^6 leaves", gcsim("run", path, "--out", out), out,
                   [path, "/platform/fat_tree/down", "leaves"])
    # Made so by a --set of a shipped file: the --set is named, not the file.
    fattree = os.path.join(ROOT, "platforms", "fattree-96-1g.json")
    out = out_dir(workdir, "leaves-set")
    expect_refused("a --set that makes a fat-tree too large",
                   gcsim("run", QUICKSTART, "--out", out, "--set", f"platform={fattree}",
                         "--set", "platform.fat_tree.down=[4096,4096]",
                         "--set", "platform.fat_tree.up=[1,1]"), out,
                   ["--set platform.fat_tree.down=[4096,4096]: /platform/fat_tree/down",
                    "16777216 leaves"])
    # At the limit itself: 65536 leaves run (2 of them used).
    path = scenario_file(workdir, {"topology": "fat_tree", "link": LINK, "nodes": 2,
                                   "fat_tree": {"down": [256, 256], "up": [1, 1]}})
    out = out_dir(workdir, "leaves-limit")
    result = gcsim("run", path, "--out", out, "--quiet", "--set", "training.iterations=1")
    check(result.returncode == 0 and os.path.exists(os.path.join(out, "result.json")),
          f"a fat-tree of exactly 65536 leaves runs (status {result.returncode}"
          f"{': ' + result.stderr.strip()[:300] if result.returncode else ''})")


def xml_platforms(workdir):
    good_xml = os.path.join(ROOT, "platforms", "small-cluster.xml")  # 4 hosts
    os.mkdir(os.path.join(workdir, "a-folder"))
    with open(os.path.join(workdir, "broken.xml"), "w") as handle:
        handle.write('<platform version="4.1"><zone id="w" routing="Full">\n')
    with open(os.path.join(workdir, "multi-line.xml"), "w") as handle:
        handle.write('<?xml version="1.0"?>\n'
                     '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                     '<platform version="4.1"><zone id="w" routing="Full">'
                     '<host id="a" speed="1Gf"/><link id="l" bandwidth="1GBps" latency="1us"/>'
                     '<route src="a" dst="zz"><link_ctn id="l"/></route></zone></platform>\n')
    with open(os.path.join(workdir, "platform.so"), "w") as handle:
        handle.write("not a library")
    cases = [
        ("an XML platform that is a folder", "a-folder", 4, "/platform/xml", "not a regular file"),
        ("malformed XML", "broken.xml", 4, "/platform/xml", "Parse error"),
        ("a JSON file as the XML platform", os.path.join(ROOT, "platforms", "star-8x10g.json"), 4,
         "/platform/xml", "SimGrid cannot load"),
        ("SimGrid's message on several lines", "multi-line.xml", 1, "/platform/xml", "zz"),
        ("a shared library as the XML platform", "platform.so", 4, "/platform/xml",
         "shared library"),
        ("more workers than the XML platform has hosts", good_xml, 5, "/platform/nodes",
         "has 4 hosts"),
    ]
    cases += xml_platforms_simgrid_aborted_on(workdir)
    for name, xml, nodes, field, words in cases:
        out = out_dir(workdir, name)
        path = scenario_file(workdir, {"topology": "simgrid_xml", "xml": xml, "nodes": nodes})
        expect_refused(name, gcsim("run", path, "--out", out, cwd=workdir), out,
                       [path, field, words])
    # In a platform file of its own the field is that file's.
    platform = os.path.join(workdir, "xml-platform.json")
    with open(platform, "w") as handle:
        json.dump({"topology": "simgrid_xml", "xml": good_xml, "nodes": 6}, handle)
    path = scenario_file(workdir, platform)
    out = out_dir(workdir, "platform file")
    expect_refused("too few hosts for a platform file", gcsim("run", path, "--out", out), out,
                   [platform + ": /nodes", "has 4 hosts"])


def nested_zones(count):
    """`count` zones, each in the one before, around a cluster of 4 hosts: in
    xml_file's zone, the cluster is nested count + 3 elements deep."""
    return (''.join(f'<zone id="z{n}" routing="Full">' for n in range(count))
            + '<cluster id="c" prefix="h" suffix="" radical="0-3" speed="1Gf" bw="1Gbps" '
            'lat="10us"/>' + "</zone>" * count)


def xml_platforms_simgrid_aborted_on(workdir):
    """Files SimGrid aborted or crashed on (exit 134 or 139 and a backtrace),
    while loading them or once the run sent a message: (name, file, nodes,
    field, words) cases for xml_platforms."""
    def platform_file(name, zone, body, routing="Full", after=""):
        return xml_file(workdir, name, body, zone, routing, after=after)

    hosts = '<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/><host id="c" speed="1Gf"/>'
    link = '<link id="l" bandwidth="{}" latency="1us"/>'
    route = '<route src="a" dst="b"><link_ctn id="l"/></route>'
    # Profiles that stop the link or the host after 0.1 ms (found beside the
    # platform file, as SimGrid finds them).
    with open(os.path.join(workdir, "stops.txt"), "w") as handle:
        handle.write("0 1e9\n0.0001 0\n")
    with open(os.path.join(workdir, "stops-speed.txt"), "w") as handle:
        handle.write("# a comment\n0 1\n0.0001 0\n")
    # Profiles SimGrid ran for ever on (a loop of 0 s) or aborted on.
    profiles = {"loop0.txt": "0 1e9\nLOOPAFTER 0\n", "loop0-latency.txt": "0 1e-6\nLOOPAFTER 0\n",
                "back.txt": "1 1e9\n0.5 2e9\n", "random.txt": "STOCHASTIC\nDET 1 UNIF 1e8 1e9\n",
                "two-loops.txt": "PERIODICITY 2\n0 1e9\n1 5e8\nLOOPAFTER 1\n"}
    for name, text in profiles.items():
        with open(os.path.join(workdir, name), "w") as handle:
            handle.write(text)

    def with_file(attribute, name):
        return hosts + link.format("1GBps").replace("/>", f' {attribute}="{name}"/>') + route

    def speed_trace(values, periodicity=10):
        return (f'<trace id="t" periodicity="{periodicity}">\n{values}\n</trace>\n'
                '<trace_connect kind="SPEED" trace="t" element="a"/>\n')
    plain = hosts + link.format("1GBps") + route
    return [
        # SimGrid's parser corrupted its heap (a malloc abort) past 500.
        ("elements nested 501 deep", platform_file("nested.xml", "w", nested_zones(498)), 2,
         "/xml", '<cluster id="c"> is nested 501 elements deep, more than the 500'),
        ("a bandwidth profile that reaches 0", platform_file(
            "bandwidth-stops.xml", "w", hosts + link.format("1GBps").replace(
                "/>", ' bandwidth_file="stops.txt"/>') + route), 2, "/xml",
         '<link id="l"> has a bandwidth_file (stops.txt) that reaches 0 at 0.0001 s'),
        ("a speed profile that reaches 0", platform_file(
            "speed-stops.xml", "w", hosts.replace('speed="1Gf"/>', 'speed="1Gf" '
                                                  'speed_file="stops-speed.txt"/>', 1)
            + link.format("1GBps") + route), 2, "/xml",
         '<host id="a"> has a speed_file (stops-speed.txt) that reaches 0 at 0.0001 s'),
        ("a bandwidth profile that repeats every 0 s", platform_file(
            "loop0.xml", "w", with_file("bandwidth_file", "loop0.txt")), 2, "/xml",
         '<link id="l"> has a bandwidth_file (loop0.txt) that repeats every 0 s'),
        ("a latency profile that repeats every 0 s", platform_file(
            "loop0-latency.xml", "w", with_file("latency_file", "loop0-latency.txt")), 2, "/xml",
         '<link id="l"> has a latency_file (loop0-latency.txt) that repeats every 0 s'),
        ("a profile whose dates go back", platform_file(
            "back.xml", "w", with_file("bandwidth_file", "back.txt")), 2, "/xml",
         "(back.txt) that is wrong at line 2: date 0.5 comes before the line above's (1)"),
        ("a stochastic profile", platform_file(
            "random.xml", "w", with_file("bandwidth_file", "random.txt")), 2, "/xml",
         'that is wrong at line 1: "STOCHASTIC" is stochastic: stochastic profiles are not '
         'simulated'),
        ("a profile with two periods", platform_file(
            "two-loops.xml", "w", with_file("bandwidth_file", "two-loops.txt")), 2, "/xml",
         "(two-loops.txt) that has both a period"),
        # Inline, tied to a host: SimGrid aborted on a negative factor as it
        # loaded the file, and on 0 once a compression kernel ran on the host.
        ("an inline speed trace that goes negative", platform_file(
            "speed-trace-negative.xml", "w", plain, after=speed_trace("0 1\n1 -1")), 2, "/xml",
         '<trace_connect kind="SPEED" element="a">: its trace "t" reaches 0 at 1 s'),
        ("an inline speed trace that all but stops the host", platform_file(
            "speed-trace-tiny.xml", "w", plain, after=speed_trace("0 1e-300", periodicity=1)), 2,
         "/xml",
         'its trace "t" sets a speed factor of 1e-300 at 0 s'),
        # SimGrid 3.32 aborted: the link is sealed once declared.
        ("a bandwidth trace tied to a link", platform_file(
            "bandwidth-trace.xml", "w", plain, after=speed_trace("0 1e9").replace(
                'kind="SPEED" trace="t" element="a"', 'kind="BANDWIDTH" trace="t" element="l"')),
         2, "/xml", '<trace_connect kind="BANDWIDTH" element="l">: SimGrid 3.32 cannot give a '
         'declared link a profile'),
        ("a link declared twice", platform_file(
            "twice.xml", "w", hosts + link.format("1GBps") + link.format("1GBps") + route), 2,
         "/xml", "Link 'l' declared several times"),
        ("an unknown routing model", platform_file("routing.xml", "w", hosts, routing="Bogus"),
         2, "/xml", "Not a valid model"),
        ("the removed <include> tag", platform_file(
            "include.xml", "w", '<include file="other.xml"/>' + hosts), 2, "/xml", "<include>"),
        ("a negative bandwidth", platform_file(
            "negative.xml", "w", hosts + link.format("-1GBps") + route), 2, "/xml",
         "link 'l' has a bandwidth of -1e+09 B/s"),
        ("a WIFI link", platform_file(
            "wifi.xml", "w", hosts + link.format("1GBps").replace(
                "/>", ' sharing_policy="WIFI"/>') + route), 2, "/xml",
         "link 'l' is a WIFI link, which gcsim does not model"),
        ("a zero bandwidth", platform_file(
            "zero.xml", "w", hosts + link.format("0Bps") + route), 2, "/xml",
         "link 'l' has a bandwidth of 0 B/s"),
        ("workers without a route (Full)", platform_file(
            "no-route.xml", "w", hosts + link.format("1GBps") + route), 3, "/xml",
         "no route from host 'a' to host 'c'"),
        ("workers without a route (Floyd)", platform_file(
            "no-route-floyd.xml", "w", hosts + link.format("1GBps") + route, routing="Floyd"), 3,
         "/xml", "no route from host 'a' to host 'c'"),
        # With no <route> at all SimGrid's Full routing crashes (SIGSEGV):
        # the child's crash, said with a hint.
        ("workers without any route (Full)", platform_file("no-routes.xml", "w", hosts), 3,
         "/xml", "SimGrid fails looking up the route from host 'a' to host 'b' (workers 0 and "
         "1): " + ("AddressSanitizer" if SANITIZED
                   else "Segmentation fault. (does the file route between these hosts?)")),
        # SimGrid threw std::out_of_range ("unordered_map::at"): the child's
        # exit status 70 was all the message said.
        ("a Vivaldi zone of plain hosts", platform_file("vivaldi.xml", "w", hosts,
                                                        routing="Vivaldi"), 2, "/xml",
         "no route from host 'a' to host 'b' (workers 0 and 1): the zone has no link of its own"),
        ("a Dijkstra zone SimGrid crashes in", platform_file(
            "dijkstra.xml", "w", hosts + link.format("1GBps") + route, routing="Dijkstra"), 3,
         "/xml", "SimGrid fails looking up the route from host 'a' to host 'b'"),
        # The child's load passed these; the run itself crashed (SIGSEGV in
        # the solver, a deadlock abort, an uncaught network failure).
        ("a <config> tag", xml_file(
            workdir, "config.xml", hosts + link.format("1GBps") + route,
            config='<prop id="maxmin/precision" value="-1"/>'), 2, "/xml",
         "a <config> tag sets SimGrid's options"),
        ("a host's state file", platform_file(
            "host-state.xml", "w", hosts.replace('speed="1Gf"/>', 'speed="1Gf" state_file="off"/>',
                                                 1) + link.format("1GBps") + route), 2, "/xml",
         '<host id="a"> has a state_file'),
        ("a link's state file", platform_file(
            "link-state.xml", "w", hosts + link.format("1GBps").replace(
                "/>", ' state_file="off"/>') + route), 2, "/xml", '<link id="l"> has a state_file'),
        ("a host availability trace", platform_file(
            "host-avail.xml", "w", hosts + link.format("1GBps") + route
            + '<trace id="t" periodicity="1">0 0\n</trace>'
            '<trace_connect kind="HOST_AVAIL" trace="t" element="a"/>'), 2, "/xml",
         '<trace_connect kind="HOST_AVAIL" element="a">'),
        ("a cluster of a hundred million hosts", platform_file(
            "huge-cluster.xml", "w", '<cluster id="big" prefix="n-" suffix="" '
            'radical="0-99999999" speed="1Gf" bw="10Gbps" lat="10us"/>'), 2, "/xml",
         '<cluster id="big"> (radical "0-99999999") declares 100000000 hosts'),
    ]


def xml_profiles_played(workdir):
    """Profiles within the limits run, and SimGrid plays them: a link whose
    bandwidth halves every other 10 us of each 20 us (LOOPAFTER) slows the
    allreduce, and a host at half speed every other millisecond (an inline
    speed trace) slows its compression kernels."""
    hosts = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(4))
    # (A file of its own for each link: SimGrid refuses to load one twice.)
    links = "".join(f'<link id="l{i}" bandwidth="1GBps" latency="1us"{{{i}}}/>' for i in range(4))
    routes = "".join(f'<route src="h{i}" dst="h{j}"><link_ctn id="l{i}"/><link_ctn id="l{j}"/></route>'
                     for i in range(4) for j in range(i + 1, 4))
    for i in range(4):
        with open(os.path.join(workdir, f"halves{i}.txt"), "w") as handle:
            handle.write("0 1e9\n1e-5 5e8\nLOOPAFTER 1e-5\n")
    no_files = links.format(*[""] * 4)
    plain = xml_file(workdir, "played-plain.xml", hosts + no_files + routes)
    halved = xml_file(workdir, "played-halved.xml", hosts + links.format(
        *[f' bandwidth_file="halves{i}.txt"' for i in range(4)]) + routes)
    slowed = xml_file(workdir, "played-slowed.xml", hosts + no_files + routes,
                      after='<trace id="slow" periodicity="0.002">\n0 1\n0.001 0.5\n</trace>\n'
                      '<trace_connect kind="SPEED" trace="slow" element="h0"/>\n')
    times = {}
    for name, xml in (("plain", plain), ("halved", halved), ("slowed", slowed)):
        path = scenario_file(workdir, {"topology": "simgrid_xml", "xml": xml, "nodes": 4},
                             name=f"played-{name}.json")
        out = out_dir(workdir, "played-" + name)
        result = gcsim("run", path, "--out", out, "--quiet", "--set",
                       'compressor={"name": "topk", "density": 0.01}', "--set",
                       "training.kernels_share_device=true", cwd=workdir)
        if check(result.returncode == 0, f"a valid {name} profile runs ({result.returncode}: "
                 f"{result.stderr.strip()[:300]})"):
            with open(os.path.join(out, "result.json")) as handle:
                summary = json.load(handle)["summary"]
            times[name] = (summary["communication_s"], summary["compression_s"])
    if len(times) == 3:
        check(times["halved"][0] > times["plain"][0] * 1.05,
              f"SimGrid plays the bandwidth profile: communication {times['halved'][0]:.6g} s "
              f"against {times['plain'][0]:.6g} s without it")
        # Worker 0's kernels run on h0 (kernels_share_device), half as fast
        # half the time: the busiest worker's compression is longer.
        check(times["slowed"][1] > times["plain"][1] * 1.05,
              f"SimGrid plays the speed trace: compression {times['slowed'][1]:.6g} s against "
              f"{times['plain'][1]:.6g} s without it")


def xml_profiles_valid(workdir):
    """Profiles SimGrid 3.32 plays, in the forms its reader takes, and zones
    nested as deep as its parser reads, run: the check refuses what SimGrid
    aborts or never ends on, not these."""
    hosts = '<host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>'
    route = '<route src="a" dst="b"><link_ctn id="l"/></route>'
    bandwidth_files = {
        "comments, CRLF, tabs and words after the value":
            "% a header\r\n# a comment\r\n0\t1e9 # start\r\n0.5 5e8 measured\r\n",
        "lines ended by CR alone": "0 1e9\r0.5 5e8\r",
        "PERIODICITY": "PERIODICITY 1\n0 1e9\n0.5 5e8\n",
        "PERIODICITY beside LOOPAFTER 0": "PERIODICITY 1\nLOOPAFTER 0\n0 1e9\n0.5 5e8\n",
        "a negative PERIODICITY (a repetition after the last date)": "PERIODICITY -1\n0 1e9\n1 5e8\n",
        "DET before the numbers": "DET 0 DET 1e9\nDET 0.5 DET 5e8\n",
        "an empty file": "",
        "comments only": "# nothing yet\n",
    }
    cases = []
    for n, (name, text) in enumerate(bandwidth_files.items()):
        with open(os.path.join(workdir, f"valid-{n}.txt"), "w", newline="") as handle:
            handle.write(text)
        cases.append((name, hosts + f'<link id="l" bandwidth="1GBps" latency="1us" '
                            f'bandwidth_file="valid-{n}.txt"/>' + route, ""))
    with open(os.path.join(workdir, "valid-speed.txt"), "w") as handle:
        handle.write("0 1\n1 0.5\n2 1\n3 0.5\n")
    plain = hosts + '<link id="l" bandwidth="1GBps" latency="1us"/>' + route
    cases += [
        # A file's <trace> has the periodicity the DTD requires; SimGrid
        # reads only an inline trace's.
        ("a <trace file> with a periodicity shorter than its dates", plain,
         '<trace id="t" file="valid-speed.txt" periodicity="1"/>'
         '<trace_connect kind="SPEED" trace="t" element="a"/>'),
        ("one inline trace tied to two hosts", plain,
         '<trace id="t" periodicity="2">\n0 1\n1 0.5\n</trace>'
         '<trace_connect kind="SPEED" trace="t" element="a"/>'
         '<trace_connect kind="SPEED" trace="t" element="b"/>'),
        ("elements nested 500 deep", nested_zones(497), ""),
    ]
    for n, (name, body, after) in enumerate(cases):
        xml = xml_file(workdir, f"valid-{n}.xml", body, after=after)
        path = scenario_file(workdir, {"topology": "simgrid_xml", "xml": xml, "nodes": 2},
                             name=f"valid-{n}.json")
        out = out_dir(workdir, f"valid-{n}")
        result = gcsim("run", path, "--out", out, "--quiet", "--set", "training.iterations=1",
                       cwd=workdir)
        check(result.returncode == 0 and os.path.exists(os.path.join(out, "result.json")),
              f"a valid profile runs: {name} ({result.returncode}: {result.stderr.strip()[:300]})")


def xml_routes_beyond_64_workers(workdir):
    """Above 64 workers the check does not look up every pair: a missing route
    that recursive doubling needs (ranks 16 and 20 of 72, neither neighbours
    nor worker 0) must still be found, not abort the run, and the same file
    with that route must run. Nor does it know a compressor's server: one
    at rank 5 needs the route from 8, which the run looks up (SimGrid aborted
    there), and the same file runs with the server at 0."""
    hosts = [f"h{i:02d}" for i in range(72)]
    links = [f'<host id="{h}" speed="1Gf"/><link id="l{h}" bandwidth="1GBps" latency="1us"/>'
             for h in hosts]

    def routes(missing):
        return [f'<route src="{a}" dst="{b}"><link_ctn id="l{a}"/><link_ctn id="l{b}"/></route>'
                for i, a in enumerate(hosts) for b in hosts[i + 1:] if (a, b) != missing]

    def scenario(xml, name, compressor=None):
        path = scenario_file(workdir, {"topology": "simgrid_xml", "xml": xml, "nodes": 72},
                             name=name)
        with open(path) as handle:
            document = json.load(handle)
        document["training"]["allreduce"] = "recursive_doubling"
        document["workload"] = os.path.join(ROOT, "workloads", "models", "fmnist-cnn.json")
        if compressor:
            document["compressor"] = compressor
            document["training"]["iterations"] = 1
        with open(path, "w") as handle:
            json.dump(document, handle)
        return path

    gap = os.path.join(workdir, xml_file(workdir, "72-hosts-one-route-missing.xml",
                                         "\n".join(links + routes(("h16", "h20")))))
    path = scenario(gap, "recursive-doubling-72-gap.json")
    out = out_dir(workdir, "72 hosts one route missing")
    expect_refused("a route recursive doubling needs, missing among 72 workers",
                   gcsim("run", path, "--out", out), out,
                   [path, "/platform/xml", "no route from host 'h16' to host 'h20'"])
    whole = os.path.join(workdir, xml_file(workdir, "72-hosts.xml",
                                           "\n".join(links + routes(None))))
    out = out_dir(workdir, "72 hosts")
    result = gcsim("run", scenario(whole, "recursive-doubling-72.json"), "--out", out, "--quiet")
    check(result.returncode == 0 and os.path.exists(os.path.join(out, "result.json")),
          f"72 workers with every route run (status {result.returncode}"
          f"{': ' + result.stderr.strip()[:300] if result.returncode else ''})")
    gap = os.path.join(workdir, xml_file(workdir, "72-hosts-5-8-missing.xml",
                                         "\n".join(links + routes(("h05", "h08")))))
    for server, refused in ((5, True), (0, False)):
        path = scenario(gap, f"sketched-server-{server}-72-gap.json",
                        {"name": "sketched_sgd", "density": 0.01, "server_rank": server})
        out = out_dir(workdir, f"72 hosts server {server}")
        if refused:
            expect_refused("a route only a server at rank 5 needs, missing among 72 workers",
                           gcsim("run", path, "--out", out), out,
                           [path, "/platform/xml", "no route from host 'h05' to host 'h08'"])
            continue
        result = gcsim("run", path, "--out", out, "--quiet")
        check(result.returncode == 0 and os.path.exists(os.path.join(out, "result.json")),
              f"the same file runs with the server at rank 0 (status {result.returncode}"
              f"{': ' + result.stderr.strip()[:300] if result.returncode else ''})")


def replayed_schedules(workdir):
    recorded = os.path.join(workdir, "recorded")
    result = gcsim("run", DEFT16, "--out", recorded, "--quiet", "--set",
                   'compressor={"name": "cltk", "density": 0.01}', "--set", "training.iterations=2")
    if not check(result.returncode == 0, f"a CLT-k run records its schedule "
                                         f"(status {result.returncode})"):
        return
    with open(os.path.join(recorded, "schedule.json")) as handle:
        schedule = json.load(handle)
    steps = schedule["iterations"][0]["steps"]
    kinds = [step["kind"] for step in steps]
    broadcast = kinds.index("broadcast")
    other = next(i for i, kind in enumerate(kinds) if kind not in ("broadcast", "reduce"))

    def halve(step):
        step["participants"] = list(range(8))
        step["bytes"] = step["bytes"][:8]

    def point_to_point(message):
        def edit(step):
            step.update(kind="point_to_point", participants=[0, 1], bytes=[1, 1],
                        messages=[message])
        return edit

    at = "/iterations/0/steps/"
    cases = [
        ("a broadcast rooted outside its participants",
         broadcast, lambda step: (halve(step), step.update(root=12)), f"{at}{broadcast}/root"),
        ("a broadcast without a root", broadcast, lambda step: step.update(root=-1),
         f"{at}{broadcast}/root"),
        ("a reduce rooted outside its participants",
         broadcast, lambda step: (halve(step), step.update(kind="reduce", root=9)),
         f"{at}{broadcast}/root"),
        ("a message to a non-participant", other, point_to_point([0, 5, 100]),
         f"{at}{other}/messages/0/1"),
        ("a message from a non-participant", other, point_to_point([5, 1, 100]),
         f"{at}{other}/messages/0/0"),
    ]
    # (name, edit of the first iteration, field, words)
    iteration_cases = [
        (name, lambda iteration, index=index, edit=edit: edit(iteration["steps"][index]), field,
         "participants") for name, index, edit, field in cases]

    # Past 2^53 a byte count is a typo, as a scenario's sizes are (it was
    # simulated, for years of simulated time).
    def set_bytes(iteration):
        iteration["steps"][other]["bytes"][1] = 2 ** 53 + 1

    # Each rank of a collective forwards blocks at its own count: unequal
    # counts simulated traffic no run sends (a rank's broadcast at its size).
    def unequal_bytes(step):
        step["bytes"][1] += 1000

    iteration_cases += [
        (f"unequal byte counts in a step of kind {kind}",
         lambda iteration, index=index: unequal_bytes(iteration["steps"][index]),
         f"{at}{index}/bytes", "same byte count on every participant")
        for index, kind in ((broadcast, "broadcast"), (other, kinds[other]))]
    iteration_cases += [
        ("a step's byte count past 2^53", set_bytes, f"{at}{other}/bytes/1", "[0, 2^53]"),
        ("a message's byte count past 2^53",
         lambda iteration: point_to_point([0, 1, 2 ** 53 + 1])(iteration["steps"][other]),
         f"{at}{other}/messages/0/2", "[0, 2^53]"),
    ]

    # A kernel after the last step never ran; one listed before a kernel of
    # an earlier step ran late.
    worker = next(w for w, kernels in enumerate(schedule["iterations"][0]["kernels"]) if kernels)
    kernels_at = f"/iterations/0/kernels/{worker}/"

    def past_the_end(iteration):
        iteration["kernels"][worker][0][1] = len(steps) + 1

    def out_of_order(iteration):
        first = iteration["kernels"][worker][0]
        iteration["kernels"][worker] = [first[:1] + [len(steps)] + first[2:],
                                        first[:1] + [0] + first[2:]]

    def huge(iteration):
        iteration["kernels"][worker][0][2] = 1e300

    iteration_cases += [
        # Priced by the profile, and blamed on it, before.
        ("a kernel of 1e300 elements", huge, kernels_at + "0/2", "from 0 to 2^53 elements"),
        ("a kernel past the last step", past_the_end, kernels_at + "0/1", "past the last step"),
        ("kernels out of order", out_of_order, kernels_at + "1/1", "in the order they run"),
    ]
    for name, edit, field, words in iteration_cases:
        out = out_dir(workdir, name)
        changed = copy.deepcopy(schedule)
        edit(changed["iterations"][0])
        path = os.path.join(workdir, "schedule-" + name.replace(" ", "-") + ".json")
        with open(path, "w") as handle:
            json.dump(changed, handle)
        expect_refused(name, gcsim("run", DEFT16, "--out", out, "--replay", path), out,
                       [path + ": " + field + ":", words])
    # A schedule replayed on another model: its bytes and kernel sizes were
    # the small CNN's, and ResNet-18's compute beside them was a "speedup"
    # of nothing. The model it was recorded on is in it, and checked.
    check(schedule.get("model") == {"name": "cnn", "parameters": 29994, "layers": 4},
          f"the schedule records the model it ran on ({schedule.get('model')})")
    out = out_dir(workdir, "another model")
    expect_refused("a replay on another model",
                   gcsim("run", DEFT16, "--out", out, "--replay",
                         os.path.join(recorded, "schedule.json"),
                         "--set", "workload=workloads/models/resnet18-cifar10.json"),
                   out, [os.path.join(recorded, "schedule.json") + ": /model/parameters:",
                         "recorded on cnn (29994 parameters in 4 layers)",
                         "resnet18-cifar10 has 11173962 parameters in 41 layers"])
    for field, value in (("parameters", 29995), ("layers", 5)):
        changed = copy.deepcopy(schedule)
        changed["model"][field] = value
        path = os.path.join(workdir, f"schedule-model-{field}.json")
        with open(path, "w") as handle:
            json.dump(changed, handle)
        out = out_dir(workdir, f"model {field}")
        expect_refused(f"a schedule of another {field} count",
                       gcsim("run", DEFT16, "--out", out, "--replay", path), out,
                       [f"{path}: /model/{field}:", "a replay's bytes and kernel sizes"])
    # A schedule of a gcsim before the model was recorded: nothing to check.
    older = copy.deepcopy(schedule)
    del older["model"]
    path = os.path.join(workdir, "schedule-without-model.json")
    with open(path, "w") as handle:
        json.dump(older, handle)
    result = gcsim("run", DEFT16, "--out", out_dir(workdir, "older"), "--quiet", "--replay", path)
    check(result.returncode == 0, f"a schedule without its model replays ({result.stderr.strip()})")
    # A dense run into the folder: the CLT-k schedule beside its result would
    # read as the dense run's own.
    result = gcsim("run", DEFT16, "--out", recorded, "--quiet", "--set", 'compressor={"name": "dense"}',
                   "--set", "training.iterations=2")
    check(result.returncode == 0 and not os.path.exists(os.path.join(recorded, "schedule.json")),
          "a dense run into a compressed run's folder leaves no schedule.json behind")
    # Unless that file is what the run read: a scenario named schedule.json
    # in the folder was removed as an earlier run's.
    own_folder = os.path.join(workdir, "scenario-in-out")
    os.mkdir(own_folder)
    named_schedule = os.path.join(own_folder, "schedule.json")
    with open(DEFT16) as handle:
        document = json.load(handle)
    for key in ("platform", "workload", "device"):
        document[key] = os.path.join(ROOT, document[key])
    document["compressor"] = {"name": "dense"}
    with open(named_schedule, "w") as handle:
        json.dump(document, handle)
    result = gcsim("run", named_schedule, "--out", own_folder, "--quiet",
                   "--set", "training.iterations=2")
    check(result.returncode == 0 and os.path.exists(named_schedule)
          and os.path.exists(os.path.join(own_folder, "result.json")),
          f"a dense run keeps its scenario named schedule.json in its --out ({result.stderr})")
    # A replay of another schedule into a folder holding one: that one goes
    # too; replaying a folder's own schedule into it keeps it.
    elsewhere = os.path.join(workdir, "schedule-elsewhere.json")
    with open(elsewhere, "w") as handle:
        json.dump(schedule, handle)
    own = os.path.join(recorded, "schedule.json")
    with open(own, "w") as handle:
        json.dump(schedule, handle)
    before = os.stat(own)
    result = gcsim("run", DEFT16, "--out", recorded, "--quiet", "--replay", own)
    after = os.stat(own) if os.path.exists(own) else None
    # Kept as it was: not removed, nor rewritten.
    kept = result.returncode == 0 and after is not None and \
        (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    result = gcsim("run", DEFT16, "--out", recorded, "--quiet", "--replay", elsewhere)
    check(kept and result.returncode == 0 and not os.path.exists(own),
          "a replay keeps the schedule it replayed and removes another run's from its folder")
    # A --set of the compressor or the scope beside a replay: the schedule's
    # ran, and the run went on as if the --set had (result.json's scenario
    # said it, the summary nothing), a figure labelled with what did not run.
    for setting in ['compressor={"name": "gtopk", "density": 0.1}', "compressor.density=0.1",
                    "training.compression_scope=model", 'training={"compression_scope": "bucket"}',
                    "gradients.synthesis=mean_scaling"]:
        refused = out_dir(workdir, "set-beside-replay")
        pointer = "/" + setting.split("=")[0].replace(".", "/")
        expect_refused(f"--set {setting} beside --replay",
                       gcsim("run", DEFT16, "--out", refused, "--replay", elsewhere, "--set", setting),
                       refused, [f"--set {setting}: {pointer}: a replay runs the ",
                                 " its schedule recorded (--replay): drop this --set, or the "
                                 "--replay"])
    # A scenario file's scope is the schedule's in result.json, as its
    # compressor is.
    scoped = out_dir(workdir, "scope-file")
    with open(DEFT16) as handle:
        scoped_scenario = json.load(handle)
    scoped_scenario["training"]["compression_scope"] = "bucket"
    with open(os.path.join(workdir, "scoped.json"), "w") as handle:
        json.dump(scoped_scenario, handle)
    result = gcsim("run", "scoped.json", "--out", scoped, "--replay", "schedule-elsewhere.json",
                   cwd=workdir)
    ran = json.load(open(os.path.join(scoped, "result.json"))) if result.returncode == 0 else {}
    said = ran.get("scenario", {}).get("training", {}).get("compression_scope")
    check(said is not None and said == ran["model"]["compression_scope"] == "model",
          f"a replay records the schedule's scope over the scenario file's: {said} "
          f"{result.stderr.strip()}")
    # The summary says it is a replay, of which schedule.
    check(f"  replay of {os.path.realpath(elsewhere)}: the selection sizes, density and fidelity "
          "its run recorded" in result.stdout,
          f"a replay's summary says so: {result.stdout[:600]!r}")
    # Named relative to the folder it ran in, the schedule is recorded where
    # it is (outside the source tree: its full path), as a trace is.
    recorded_as = ran.get("model", {}).get("gradients", {}).get("schedule")
    check(recorded_as == os.path.realpath(elsewhere),
          f"a replay records its schedule by where it is, not as typed: {recorded_as!r}")


with tempfile.TemporaryDirectory() as workdir:
    compressed_on_parameter_server(workdir)
    platforms_at_their_smallest(workdir)
    sixteen_thousand_workers(workdir)
    fat_tree_too_large(workdir)
    xml_platforms(workdir)
    xml_profiles_played(workdir)
    xml_profiles_valid(workdir)
    xml_routes_beyond_64_workers(workdir)
    replayed_schedules(workdir)
check.finish()
