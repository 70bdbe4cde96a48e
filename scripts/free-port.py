#!/usr/bin/env python3
"""Prints a TCP port free on 127.0.0.1 now, below the kernel's ephemeral range.

The test servers (scripts/test-broker.sh, scripts/test-postgres.sh) bind the port a moment
later. A port from bind(0) is an ephemeral one, which the kernel may meanwhile give an outgoing
connection as its local port (another node's, a test's): a node of a starting test cluster once
failed with eaddrinuse that way. Ports below the range are never handed out like that.
"""
import random
import socket

high = 32767
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        high = min(high, int(f.read().split()[0]) - 1)
except (OSError, ValueError, IndexError):
    pass
for _ in range(500):
    port = random.randint(20000, high)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
else:
    raise SystemExit(f"free-port: no free port between 20000 and {high}")
