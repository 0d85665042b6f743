#!/usr/bin/python3
"""scripts/minicluster/netns.py's commands, recorded instead of run (no
namespace, no root): what the issue asks of the mini-cluster and the live
run cannot tell apart.

- every `ip` command names one of the cluster's own namespaces (`ip netns
  add|del|exec NAME`, `ip -n NAME`): nothing on the host's links, routes
  or addresses;
- both ends of every veth are limited (the node's eth0 and its bridge
  port), every htb rate and ceil in mbit and at most the cluster's rate
  (a missing bridge-side limit, or a ceil in another unit, leaves the live
  ring collectives as they were); the fair node queue has a class and a
  filter per peer, the fifo one a single class;
- every node namespace uses TCP reno;
- teardown deletes every namespace it made (the bridge's too), after a
  normal exit, an exception in the `with` body, and a failure or a
  KeyboardInterrupt (SIGINT, or run.py's SIGTERM) half-way through
  building it, also one that ends `ip netns add` after it made the
  namespace; a second signal during the teardown is raised at its end;
- can_create_namespaces says why not (no `ip`, `ip netns add` refused) and
  deletes its probe; Cluster refuses more than 1 Gbit/s and 2..16 nodes.

Usage: netns_commands_test.py
"""
import os
import signal
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
sys.path.insert(0, os.path.join(ROOT, "scripts", "minicluster"))
from checks import Checks  # noqa: E402
import netns  # noqa: E402

check = Checks()


class Recorder:
    """netns.py's `subprocess`: records every argv that ran; `fail_at` (the
    n-th call that has check=True) raises `error` instead of running."""
    CalledProcessError = subprocess.CalledProcessError
    DEVNULL, PIPE = subprocess.DEVNULL, subprocess.PIPE

    def __init__(self, fail_at=None, error=None):
        self.calls, self.checked, self.fail_at, self.error = [], 0, fail_at, error

    def run(self, argv, check=False, **_):
        if check:
            self.checked += 1
            if self.checked == self.fail_at:
                raise self.error  # not recorded: it did nothing
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, b"", b"")


def recorded(action, recorder):
    real = netns.subprocess
    netns.subprocess = recorder
    try:
        return action()
    finally:
        netns.subprocess = real


def raised_by(action, recorder):
    """What `recorded(action, recorder)` raises, or None."""
    try:
        recorded(action, recorder)
    except BaseException as caught:  # KeyboardInterrupt too: the tests send it
        return caught
    return None


def added(calls):
    return [c[3] for c in calls if c[:3] == ["ip", "netns", "add"]]


def deleted(calls):
    return [c[3] for c in calls if c[:3] == ["ip", "netns", "del"]]


def all_deleted(calls, count):
    """Whether `count` namespaces were made and each of them deleted."""
    return len(added(calls)) == count and sorted(deleted(calls)) == sorted(added(calls))


def namespace_of(argv):
    """The namespace an `ip` command acts in, or None for the host."""
    if argv[:2] == ["ip", "-n"]:
        return argv[2]
    if argv[:2] == ["ip", "netns"] and argv[2] in ("add", "del", "exec", "pids"):
        return argv[3]
    return None


def rate_words(argv):
    """The values after `rate` and `ceil` in a tc command."""
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word in ("rate", "ceil")]


def mbit(word):
    return float(word[:-len("mbit")]) if word.endswith("mbit") else None


NODES, RATE = 4, 100
for queue in ("fair", "fifo"):
    recorder = Recorder()

    def build():
        with netns.Cluster(NODES, RATE, prefix="gct", node_queue=queue) as cluster:
            return cluster
    cluster = recorded(build, recorder)
    calls = recorder.calls
    own = set([cluster.bridge_ns] + cluster.node_ns)
    outside = [c for c in calls if namespace_of(c) not in own]
    check(not outside, f"{queue}: every ip command in one of the cluster's namespaces "
                       f"(outside: {outside[:3]})")
    check(sorted(added(calls)) == sorted(own) and sorted(deleted(calls)) == sorted(own),
          f"{queue}: made and deleted the bridge's and the {NODES} nodes' namespaces "
          f"({added(calls)}, deleted {deleted(calls)})")
    tc = [c[4:] for c in calls if c[:2] == ["ip", "netns"] and c[2] == "exec" and c[4:5] == ["tc"]]
    words = [w for c in tc for w in rate_words(c)]
    check(words and all(mbit(w) is not None and 0 < mbit(w) <= RATE for w in words),
          f"{queue}: every htb rate and ceil in mbit, at most {RATE} ({sorted(set(words))})")
    for i, ns in enumerate(cluster.node_ns):
        node = [c[4:] for c in calls if c[2:4] == ["exec", ns] and c[4:5] == ["tc"]]
        port = [c[4:] for c in calls if c[2:4] == ["exec", cluster.bridge_ns] and c[4:5] == ["tc"]
                and c[c.index("dev") + 1] == f"p{i}"]
        roots = [c for c in node + port if "qdisc" in c and "root" in c and "htb" in c]
        full = [c for c in node + port if "class" in c and rate_words(c) == [f"{RATE}mbit"] * 2]
        check(len(roots) == 2 and {c[c.index("dev") + 1] for c in roots} == {"eth0", f"p{i}"}
              and {c[c.index("dev") + 1] for c in full} == {"eth0", f"p{i}"},
              f"{queue}: node {i}'s eth0 and bridge port p{i} each an htb root with a class "
              f"of rate and ceil {RATE}mbit")
        filters = [c[c.index("dst") + 1] for c in node if "filter" in c]
        peers = [f"{a}/32" for a in cluster.addresses if a != cluster.addresses[i]]
        classes = [c for c in node if "class" in c]
        if queue == "fair":
            share = f"{RATE / NODES:g}mbit"
            children = [c for c in classes if c[c.index("parent") + 1] == "1:1"]
            check(sorted(filters) == sorted(peers) and len(children) == NODES
                  and all(rate_words(c) == [share, f"{RATE}mbit"] for c in children),
                  f"fair: node {i}: a filter per peer ({filters}) and {NODES} classes of rate "
                  f"{share}, ceil {RATE}mbit under the node's {RATE}mbit")
        else:
            check(not filters and len(classes) == 1,
                  f"fifo: node {i}: one class, no filter ({len(classes)} classes, {filters})")
        reno = [c for c in calls if c[2:4] == ["exec", ns] and "tcp_congestion_control" in c[-1]]
        check(len(reno) == 1 and reno[0][-1].split()[:2] == ["echo", "reno"],
              f"{queue}: node {i} uses TCP reno ({[c[-1] for c in reno]})")

# An exception in the body: still torn down.
recorder = Recorder()


def failing_body():
    with netns.Cluster(2, RATE, prefix="gct"):
        raise RuntimeError("the job failed")


raised = raised_by(failing_body, recorder)
check(isinstance(raised, RuntimeError) and all_deleted(recorder.calls, 3),
      f"an exception in the body passes on ({raised!r}) after deleting all 3 namespaces "
      f"({deleted(recorder.calls)})")


class InterruptedAfter(Recorder):
    """A signal that arrives as the n-th checked command returns: it ran."""

    def run(self, argv, check=False, **kwargs):
        done = super().run(argv, check=False, **kwargs)
        if check:
            self.checked += 1
            if self.checked == self.fail_at:
                raise self.error
        return done


# A failure half-way through building: what was made is deleted (one that
# may have been made too: deleting one that was not is harmless), nothing
# else, and the error passes on. Commands 1, 5 and 22 add namespaces.
# An `ip` that exits 1 made nothing; one killed by a signal (-15) may have.
for error in (subprocess.CalledProcessError(1, ["ip"], b"", b"RTNETLINK answers: File exists"),
              subprocess.CalledProcessError(-15, ["ip"], b"", b""),
              KeyboardInterrupt("signal 15")):
    refused = isinstance(error, subprocess.CalledProcessError) and error.returncode > 0
    for kind in (Recorder, InterruptedAfter):
        if kind is InterruptedAfter and refused:
            continue  # a refused command made nothing
        for fail_at in (1, 5, 12, 22, 25):
            recorder = kind(fail_at, error)
            raised = raised_by(lambda: netns.Cluster(3, RATE, prefix="gct").__enter__(), recorder)
            made, gone = added(recorder.calls), deleted(recorder.calls)
            own = {"gct-br", "gct-n0", "gct-n1", "gct-n2"}
            # A failed command comes as one line naming it (ClusterError).
            passed_on = raised is error or (isinstance(raised, netns.ClusterError)
                                            and raised.__cause__ is error)
            check(passed_on and set(made) <= set(gone) <= own
                  and (not refused or set(gone) == set(made)),
                  f"{type(error).__name__} at command {fail_at} of building "
                  f"({'after' if kind is InterruptedAfter else 'before'} it ran): passed on "
                  f"({raised!r}), the {len(made)} namespaces made so far deleted ({gone})")


# A namespace of the same name left by a run that was killed (SIGKILL: no
# teardown) stopped the next run of that process id with a traceback.
exists = subprocess.CalledProcessError(
    1, ["ip", "netns", "add", "gct-br"], b"",
    b'Cannot create namespace file "/run/netns/gct-br": File exists\n')
raised = raised_by(lambda: netns.Cluster(3, RATE, prefix="gct").__enter__(), Recorder(1, exists))
check(isinstance(raised, netns.ClusterError) and str(raised) == (
    '`ip netns add gct-br` failed: Cannot create namespace file "/run/netns/gct-br": File exists '
    "(left by a run that was killed? if none is running, `ip netns del gct-br`)"),
      f"a namespace already there: one line naming it and how to delete it ({raised})")

# A second signal during the teardown (run.py makes SIGTERM a
# KeyboardInterrupt): it is raised once every namespace is deleted.
class SignalledDuringTeardown(Recorder):
    signalled = False

    def run(self, argv, check=False, **kwargs):
        if list(argv[:3]) == ["ip", "netns", "del"] and not self.signalled:
            self.signalled = True
            os.kill(os.getpid(), signal.SIGTERM)
        return super().run(argv, check, **kwargs)


def stop(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


previous = signal.signal(signal.SIGTERM, stop)
recorder = SignalledDuringTeardown()
raised = raised_by(lambda: netns.Cluster(3, RATE, prefix="gct").__enter__().down(), recorder)
signal.signal(signal.SIGTERM, previous)
check(isinstance(raised, KeyboardInterrupt) and all_deleted(recorder.calls, 4),
      f"SIGTERM during the teardown: all 4 namespaces deleted ({deleted(recorder.calls)}), "
      f"then the interrupt passes on ({raised!r})")

# can_create_namespaces: why not, and no probe left.


class Missing(Recorder):
    def run(self, argv, check=False, **_):
        raise FileNotFoundError(2, "No such file or directory", "ip")


for recorder, needle in ((Missing(), "`ip` command is missing"),
                         (Recorder(1, subprocess.CalledProcessError(
                             1, ["ip"], b"", b"mount --make-shared /run/netns failed: "
                             b"Operation not permitted")), "Operation not permitted (run as root)")):
    ok, why = recorded(netns.can_create_namespaces, recorder)
    check(not ok and needle in why, f"can_create_namespaces refused: {needle!r} in {why!r}")
recorder = Recorder()
ok, why = recorded(netns.can_create_namespaces, recorder)
check(ok and why == "" and added(recorder.calls) == deleted(recorder.calls) != [],
      f"can_create_namespaces: ({ok}, {why!r}), its probe deleted ({recorder.calls})")

# The limits, before any command.
for nodes, rate in ((4, 1001), (4, 0), (1, 100), (17, 100)):
    recorder = Recorder()
    try:
        recorded(lambda: netns.Cluster(nodes, rate).__enter__(), recorder)
        refused = False
    except ValueError:
        refused = True
    check(refused and not recorder.calls,
          f"Cluster({nodes} nodes, {rate} Mbit/s): refused before any command ({recorder.calls[:2]})")

check.finish()
