"""A star cluster of network namespaces on one machine.

P node namespaces, each with one veth ("eth0", 10.77.0.<i+1>/24) whose peer
sits on a Linux bridge inside a namespace of its own. Both ends of every veth
are rate-limited with an htb qdisc, so every node has a full-duplex NIC of the
given rate behind a non-blocking switch: the `star` topology of
platforms/README.md. This kernel has no netem, so no latency is added; the
latency is whatever the stack gives and the benchmark measures it.

A node's own side shares its rate fairly among the peers it sends to
(`node_queue="fair"`, the default): one htb class per destination. A Linux
host sends through fq_codel (systemd's default qdisc) and so shares its NIC
fairly among its flows; this kernel has neither fq_codel nor sfq, and with a
single FIFO class two TCP reno connections from one node (two processes)
do not share its link: the first takes 80% or more until it is done, at 1
Gbit/s and at 100 Mbit/s alike (scheduling_check.py flows). `node_queue="fifo"` is that single
class, the mini-cluster of the runs published before 2026-12-02. The bridge
port's side, the switch, stays one FIFO.

Nothing here touches the host's interfaces, routes or addresses: links are
created inside the bridge namespace and their peers moved straight into the
node namespaces. Cluster is a context manager that always tears down (and
stop_signals_raise() turns SIGINT/SIGTERM into an exception so that it
does); a command that fails while it builds comes out as a ClusterError, one
line naming it.
"""

import os
import signal
import subprocess

SUBNET = "10.77.0"


def stop_signals_raise():
    """SIGINT and SIGTERM raise KeyboardInterrupt("signal N") from here on, so
    that a Cluster's `with` tears it down: SIGTERM's default action ends the
    process at once and leaves the namespaces (the caller catches the
    exception and says it was stopped)."""
    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


class ClusterError(RuntimeError):
    """A command that builds the cluster failed: one line saying which and
    why (its __cause__ is the CalledProcessError). run.py and
    scheduling_check.py print it, exit 1."""


def _failure(error):
    """The ClusterError of a failed command, a hint where a namespace of
    that name is already there (a run killed by SIGKILL cannot delete its
    own, and a later process of the same id then cannot build)."""
    said = (error.stderr or b"").decode(errors="replace").strip().splitlines()
    line = f"`{' '.join(error.cmd)}` failed: {said[-1] if said else f'status {error.returncode}'}"
    if error.cmd[:3] == ["ip", "netns", "add"] and "exists" in line:
        line += (f" (left by a run that was killed? if none is running, `ip netns del "
                 f"{error.cmd[3]}`)")
    return ClusterError(line)


def _ip(*args):
    subprocess.run(["ip", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def _in_ns(ns, *argv):
    subprocess.run(["ip", "netns", "exec", ns, *argv], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _limit(ns, dev, rate_mbit):
    # htb rather than tbf: one class, default traffic in it, burst sized by tc.
    _in_ns(ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
    _in_ns(ns, "tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb",
           "rate", f"{rate_mbit}mbit", "ceil", f"{rate_mbit}mbit")


def _limit_fair(ns, dev, rate_mbit, destinations):
    """The node's rate under one parent class, shared by a child class per
    destination address (and one for the rest: ARP, other addresses). Equal
    guaranteed rates give equal quanta, so backlogged children share the
    parent's rate equally, each free to take all of it alone."""
    _in_ns(ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
    _in_ns(ns, "tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb",
           "rate", f"{rate_mbit}mbit", "ceil", f"{rate_mbit}mbit")
    share = f"{rate_mbit / (len(destinations) + 1):g}mbit"
    children = [("10", None)] + [(f"{0x20 + j:x}", address) for j, address in enumerate(destinations)]
    for minor, address in children:
        _in_ns(ns, "tc", "class", "add", "dev", dev, "parent", "1:1", "classid", f"1:{minor}", "htb",
               "rate", share, "ceil", f"{rate_mbit}mbit")
        if address is not None:
            _in_ns(ns, "tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio",
                   "1", "u32", "match", "ip", "dst", f"{address}/32", "flowid", f"1:{minor}")


class Cluster:
    def __init__(self, nodes, rate_mbit, prefix=None, rate_limited=True, node_queue="fair"):
        """rate_limited=False leaves out the htb qdiscs (a diagnostic: the bare
        veths and bridge, scheduling_check.py --no-limit); node_queue is "fair"
        or "fifo" (module docstring)."""
        if not 2 <= nodes <= 16:
            raise ValueError("nodes must be 2..16")
        if not 0 < rate_mbit <= 1000:
            raise ValueError("rate must be in (0, 1000] Mbit/s: faster, two cores measure the CPU")
        if node_queue not in ("fair", "fifo"):
            raise ValueError("node_queue must be fair or fifo")
        self.node_queue = node_queue
        self.nodes = nodes
        self.rate_mbit = rate_mbit
        self.rate_limited = rate_limited
        self.prefix = prefix or f"gcv{os.getpid()}"
        self.bridge_ns = f"{self.prefix}-br"
        self.node_ns = [f"{self.prefix}-n{i}" for i in range(nodes)]
        self.addresses = [f"{SUBNET}.{i + 1}" for i in range(nodes)]
        self.interface = "eth0"
        self._created = []

    def __enter__(self):
        try:
            self._up()
        except subprocess.CalledProcessError as error:
            self.down()
            raise _failure(error) from error
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    def _add_ns(self, name):
        # Noted first: a signal can end `ip netns add` after it made the namespace.
        self._created.append(name)
        try:
            _ip("netns", "add", name)
        except subprocess.CalledProcessError as error:
            if error.returncode > 0:  # refused: not made (one of that name was there: not ours)
                self._created.pop()
            raise
        _ip("-n", name, "link", "set", "lo", "up")

    def _up(self):
        self._add_ns(self.bridge_ns)
        _ip("-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.bridge_ns, "link", "set", "br0", "up")
        for i, ns in enumerate(self.node_ns):
            self._add_ns(ns)
            port = f"p{i}"
            _ip("-n", self.bridge_ns, "link", "add", port, "type", "veth", "peer", "name",
                self.interface, "netns", ns)
            _ip("-n", self.bridge_ns, "link", "set", port, "master", "br0")
            _ip("-n", self.bridge_ns, "link", "set", port, "up")
            _ip("-n", ns, "addr", "add", f"{self.addresses[i]}/24", "dev", self.interface)
            _ip("-n", ns, "link", "set", self.interface, "up")
            # The node's sending side and its receiving side (the bridge port's egress).
            if self.rate_limited:
                if self.node_queue == "fair":
                    peers = [a for a in self.addresses if a != self.addresses[i]]
                    _limit_fair(ns, self.interface, self.rate_mbit, peers)
                else:
                    _limit(ns, self.interface, self.rate_mbit)
                _limit(self.bridge_ns, port, self.rate_mbit)
            _in_ns(ns, "sh", "-c", "echo reno > /proc/sys/net/ipv4/tcp_congestion_control")

    def down(self):
        # A second Ctrl-C or SIGTERM (stop_signals_raise makes each a KeyboardInterrupt)
        # does not cut the teardown short: it is raised once every namespace
        # is gone. (Blocking the signals instead can itself raise a pending
        # one, with the mask left blocked.)
        interrupted = None
        while self._created:
            name = self._created[-1]
            try:
                # Deleting a namespace deletes its veth ends, and with them the peers.
                subprocess.run(["ip", "netns", "pids", name], capture_output=True)
                subprocess.run(["ip", "netns", "del", name], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                self._created.pop()
            except KeyboardInterrupt as interrupt:
                interrupted = interrupt  # and delete it again: harmless if it is gone
        if interrupted is not None:
            raise interrupted

    def exec_argv(self, rank, argv):
        return ["ip", "netns", "exec", self.node_ns[rank], *argv]


def can_create_namespaces():
    """(True, "") when this process may create namespaces, else (False, why)."""
    probe = f"gcvprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except FileNotFoundError:
        return False, "the `ip` command is missing (apt-get install iproute2)"
    except subprocess.CalledProcessError as error:
        return False, f"`ip netns add` failed: {error.stderr.decode().strip()} (run as root)"
    subprocess.run(["ip", "netns", "del", probe], stderr=subprocess.DEVNULL)
    return True, ""
