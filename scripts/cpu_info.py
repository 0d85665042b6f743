"""This machine and its CPU as the scripts record them in what they write: its name
and, since a virtual machine may call every AMD generation "AMD EPYC", its
family, model and stepping (family 25 model 1 is a Zen 3, models from 0x10
Zen 4; family 26 Zen 5). The ranks' compute differs by several times
between them."""

import os
import socket


def machine_identity():
    """{"host", "cpus", "cpu", "cpuid"}: where a measurement ran (the last two
    as cpu_identity gives them)."""
    return dict(host=socket.gethostname(), cpus=os.cpu_count(), **cpu_identity())


def cpu_identity():
    """{"cpu": name, "cpuid": "family F model M stepping S"}, or {} where
    /proc/cpuinfo cannot be read or names no model."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model", "stepping") and key not in fields:
                    fields[key] = value.strip()
    except OSError:
        return {}
    if "model name" not in fields:
        return {}
    return dict(cpu=fields["model name"],
                cpuid=f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')} "
                      f"stepping {fields.get('stepping', '?')}")
