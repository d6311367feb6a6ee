#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""netprobe.py: plain traffic for the multi-host tests' network checks.
Numbered UDP datagrams, to measure what the underlay does to them (loss,
reordering, duplicates), and a TCP transfer checked end to end.

  netprobe.py send DST PORT COUNT [GAP_US]  COUNT datagrams "seq N" to DST:PORT
  netprobe.py recv PORT SECONDS             counts until SECONDS of silence
                                           (after the first) or 60 s in all;
                                           prints "received R unique U
                                           duplicates D late L max M"
A late datagram is one whose number is below the highest seen before it.
Each datagram is padded to 256 bytes; the receiver checks the padding.

  netprobe.py tcpserve PORT [BYTES]         accepts one connection, reads to
                                            its end (or BYTES), answers the SHA-256
  netprobe.py tcpput HOST PORT BYTES        sends BYTES random bytes, closes,
                                            prints "sha256 HEX" of them
  netprobe.py tcpsend HOST PORT BYTES       sends BYTES random bytes, checks
                                            the answer: "tcp ok N bytes"
"""
import hashlib
import os
import socket
import sys
import time

PAD = 256


def send(dst, port, count, gap_us):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for n in range(count):
        msg = ("seq %d " % n).encode()
        s.sendto(msg + bytes((n + i) & 0xff for i in range(PAD - len(msg))), (dst, port))
        if gap_us:
            time.sleep(gap_us / 1e6)
    print("sent %d" % count)


def recv(port, quiet_s):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", port))
    print("listening %d" % port, flush=True)
    seen = {}
    received = late = bad = 0
    top = -1
    start = time.monotonic()
    s.settimeout(60)
    while time.monotonic() - start < 60:
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        s.settimeout(quiet_s)
        try:
            head = data.split(b" ")
            n = int(head[1])
            msg = ("seq %d " % n).encode()
            if len(data) != PAD or data[len(msg):] != bytes((n + i) & 0xff for i in range(PAD - len(msg))):
                bad += 1
                continue
        except (IndexError, ValueError):
            bad += 1
            continue
        received += 1
        seen[n] = seen.get(n, 0) + 1
        if n < top:
            late += 1
        top = max(top, n)
    dups = sum(c - 1 for c in seen.values())
    print("received %d unique %d duplicates %d late %d max %d bad %d" %
          (received, len(seen), dups, late, top, bad))


def tcpserve(port, limit):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    s.settimeout(60)
    c, peer = s.accept()
    c.settimeout(30)
    h = hashlib.sha256()
    n = 0
    while limit is None or n < limit:
        d = c.recv(65536 if limit is None else min(65536, limit - n))
        if not d:
            break
        h.update(d)
        n += len(d)
    c.sendall(h.hexdigest().encode())
    c.close()
    print("tcp served %d bytes from %s" % (n, peer[0]))


def tcpput(host, port, count):
    data = os.urandom(count)
    for attempt in range(60):
        try:
            c = socket.create_connection((host, port), timeout=30)
            break
        except OSError:
            if attempt == 59:
                raise
            time.sleep(1)
    c.sendall(data)
    c.close()
    print("sha256 %s" % hashlib.sha256(data).hexdigest())


def tcpsend(host, port, count):
    data = os.urandom(count)
    c = socket.create_connection((host, port), timeout=30)
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        d = c.recv(128)
        if not d:
            break
        got += d
    if got.decode() != hashlib.sha256(data).hexdigest():
        print("tcp MISMATCH: sent %d bytes, the server's digest differs" % count)
        sys.exit(1)
    print("tcp ok %d bytes" % count)


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
             int(sys.argv[5]) if len(sys.argv) > 5 else 0)
    elif len(sys.argv) == 4 and sys.argv[1] == "recv":
        recv(int(sys.argv[2]), float(sys.argv[3]))
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "tcpserve":
        tcpserve(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) == 4 else None)
    elif len(sys.argv) == 5 and sys.argv[1] == "tcpput":
        tcpput(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 5 and sys.argv[1] == "tcpsend":
        tcpsend(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
