#!/usr/bin/env python3
"""Prints a TCP port free on 127.0.0.1 now, below the kernel's ephemeral range, and not handed
out by this script in the last 10 minutes.

The test servers (scripts/test-broker.sh, scripts/test-postgres.sh) bind the port a moment
later. A port from bind(0) is an ephemeral one, which the kernel may meanwhile give an outgoing
connection as its local port (another node's, a test's): a node of a starting test cluster once
failed with eaddrinuse that way. Ports below the range are never handed out like that, and the
record in /tmp/pc-free-ports (under a lock) keeps two nodes started together from drawing the
same one.
"""
import fcntl
import random
import socket
import time

RECORD = "/tmp/pc-free-ports"
HOLD_SECONDS = 600

high = 32767
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        high = min(high, int(f.read().split()[0]) - 1)
except (OSError, ValueError, IndexError):
    pass


def pick(recent):
    """A random port below `high` that binds now and is not in `recent`."""
    for _ in range(500):
        port = random.randint(20000, high)
        if port in recent:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        return port
    raise SystemExit(f"free-port: no free port between 20000 and {high}")


try:
    record = open(RECORD, "a+")
except OSError:  # another user's record: do without it
    print(pick({}))
    raise SystemExit(0)
with record:
    fcntl.flock(record, fcntl.LOCK_EX)
    record.seek(0)
    now = time.time()
    recent = {}
    for line in record:
        try:
            port, when = line.split()
            if now - float(when) < HOLD_SECONDS:
                recent[int(port)] = float(when)
        except ValueError:
            continue
    port = pick(recent)
    recent[port] = now
    record.seek(0)
    record.truncate()
    record.writelines(f"{p} {w}\n" for p, w in recent.items())
    print(port)
