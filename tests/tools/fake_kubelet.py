#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""fake_kubelet.py: kubelet's side of the device plugin API v1beta1, over
Debian's real gRPC stack (python3-grpcio), for tests/integration/devplugin.sh.

  serve DIR EVENTS          be kubelet's device manager on DIR: remove the
                            sockets in DIR (kubelet does so when it starts),
                            serve DIR/kubelet.sock (Registration).  On each
                            Register, as kubelet: check the version, dial the
                            plugin's endpoint, call GetDevicePluginOptions
                            before answering, then follow ListAndWatch.
                            Every event is a JSON line appended to EVENTS.
                            Runs until SIGTERM.
  wait EVENTS RESOURCE LIST [--since T] [--within S]
                            wait for a ListAndWatch message of RESOURCE after
                            time T (default: now) that lists exactly LIST
                            ("id:Health id:Health ...", "" for none), at
                            most S seconds after T (default 2)
  wait-register EVENTS RESOURCE [--since T] [--within S]
                            wait for a registration of RESOURCE; prints it
  call SOCKET METHOD ARGS   one call, as kubelet makes it; prints the answer
                            as lines, or "error CODE: details" (exit 3):
                              options | allocate IDS... (one container
                              request per argument, IDs comma-separated) |
                              preferred AVAILABLE MUST SIZE | prestart IDS |
                              raw METHOD HEX (the bytes as the request)
  abuse SOCKET              hostile bytes on the plugin's socket (below the
                            gRPC library: raw HTTP/2 through python3-h2):
                            each must get an error status or a closed
                            connection, and the plugin must answer a good
                            call afterwards; prints ok/FAIL lines
  seeds DIR                 write seed inputs for k8s/fuzz/fuzz_devplugin
                            (a method number, then a gRPC message) into DIR

The stubs are compiled from deviceplugin.proto (beside this file) with
python3-grpc-tools into $FAKE_KUBELET_GEN (default: a temporary directory).
"""
import json
import os
import signal
import socket
import stat
import struct
import sys
import tempfile
import threading
import time

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))


def load_stubs():
    gen = os.environ.get("FAKE_KUBELET_GEN") or tempfile.mkdtemp(prefix="fake-kubelet-")
    os.makedirs(gen, exist_ok=True)
    if not os.path.exists(os.path.join(gen, "deviceplugin_pb2_grpc.py")):
        from grpc_tools import protoc

        rc = protoc.main(["protoc", "-I" + HERE, "--python_out=" + gen, "--grpc_python_out=" + gen,
                          os.path.join(HERE, "deviceplugin.proto")])
        if rc != 0:
            sys.exit("fake_kubelet: protoc failed on deviceplugin.proto")
    sys.path.insert(0, gen)
    import deviceplugin_pb2 as pb
    import deviceplugin_pb2_grpc as pbg
    return pb, pbg


pb, pbg = load_stubs()


# ---------------------------------------------------------------- serve

class Kubelet(pbg.RegistrationServicer):
    def __init__(self, sockdir, events):
        self.dir = sockdir
        self.events = open(events, "a", buffering=1)
        self.lock = threading.Lock()
        self.channels = {}

    def ev(self, kind, **kw):
        rec = {"ev": kind, "t": time.time()}
        rec.update(kw)
        with self.lock:
            self.events.write(json.dumps(rec) + "\n")

    def Register(self, req, ctx):
        opts = {"pre_start_required": req.options.pre_start_required,
                "get_preferred_allocation_available": req.options.get_preferred_allocation_available}
        self.ev("register", version=req.version, endpoint=req.endpoint, resource=req.resource_name,
                options=opts)
        if req.version != "v1beta1":
            ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "unsupported version %r" % req.version)
        if "/" in req.endpoint or not req.endpoint:
            ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "endpoint must be a file name in " + self.dir)
        path = os.path.join(self.dir, req.endpoint)
        old = self.channels.pop(req.resource_name, None)
        if old:
            old.close()     # as kubelet: a new registration replaces the endpoint
        ch = grpc.insecure_channel("unix:" + path)
        stub = pbg.DevicePluginStub(ch)
        try:
            # kubelet asks for the options before it answers Register: the
            # plugin must serve while its Register call is in flight
            o = stub.GetDevicePluginOptions(pb.Empty(), timeout=5)
        except grpc.RpcError as e:
            ch.close()
            self.ev("options_failed", resource=req.resource_name, code=e.code().name)
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "cannot reach the plugin: " + e.code().name)
        self.ev("options", resource=req.resource_name, pre_start_required=o.pre_start_required,
                get_preferred_allocation_available=o.get_preferred_allocation_available)
        self.channels[req.resource_name] = ch
        threading.Thread(target=self.watch, args=(stub, req.resource_name), daemon=True).start()
        return pb.Empty()

    def watch(self, stub, resource):
        code = "OK"
        try:
            for resp in stub.ListAndWatch(pb.Empty()):
                self.ev("list", resource=resource, devices=[[d.ID, d.health] for d in resp.devices])
        except grpc.RpcError as e:
            code = e.code().name
        self.ev("stream_end", resource=resource, code=code)


def cmd_serve(args):
    sockdir, events = args[0], args[1]
    os.makedirs(sockdir, exist_ok=True)
    for name in os.listdir(sockdir):    # kubelet's start: plugins must register again
        p = os.path.join(sockdir, name)
        if stat.S_ISSOCK(os.lstat(p).st_mode):
            os.unlink(p)
    from concurrent import futures
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    k = Kubelet(sockdir, events)
    pbg.add_RegistrationServicer_to_server(k, server)
    server.add_insecure_port("unix:" + os.path.join(sockdir, "kubelet.sock"))
    server.start()
    k.ev("kubelet_started")
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    done.wait()
    for ch in list(k.channels.values()):
        ch.close()
    server.stop(0)
    return 0


# ---------------------------------------------------------------- wait

def read_events(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []


def opt_args(args):
    since, within, rest = None, 2.0, []
    i = 0
    while i < len(args):
        if args[i] == "--since":
            since = float(args[i + 1])
            i += 2
        elif args[i] == "--within":
            within = float(args[i + 1])
            i += 2
        else:
            rest.append(args[i])
            i += 1
    return (time.time() if since is None else since), within, rest


def fmt_list(devs):
    return " ".join("%s:%s" % (d[0], d[1]) for d in sorted(devs)) or "(none)"


def cmd_wait(args):
    since, within, rest = opt_args(args)
    events, resource, want = rest[0], rest[1], " ".join(sorted(rest[2].split())) or "(none)"
    last = None
    while True:
        for e in read_events(events):
            if e["ev"] != "list" or e["resource"] != resource or e["t"] < since:
                continue
            last = e
            if fmt_list(e["devices"]) == want:
                took = e["t"] - since
                print("  %s listed %s %.2f s after the change" % (resource, want, took))
                if took > within:
                    print("  ... later than %.1f s" % within)
                    return 1
                return 0
        if time.time() > since + within + 1:
            print("  %s: no list %s within %.1f s; the last: %s" %
                  (resource, want, within, fmt_list(last["devices"]) if last else "none after the change"))
            return 1
        time.sleep(0.05)


def cmd_wait_register(args):
    since, within, rest = opt_args(args)
    events, resource = rest[0], rest[1]
    while True:
        for e in read_events(events):
            if e["ev"] == "register" and e["resource"] == resource and e["t"] >= since:
                print("register version=%s endpoint=%s resource=%s preferred=%s after=%.2f" %
                      (e["version"], e["endpoint"], e["resource"],
                       e["options"]["get_preferred_allocation_available"], e["t"] - since))
                return 0
        if time.time() > since + within:
            print("no registration of %s within %.1f s" % (resource, within))
            return 1
        time.sleep(0.05)


# ---------------------------------------------------------------- call

def cmd_call(args):
    sock, method, rest = args[0], args[1], args[2:]
    ch = grpc.insecure_channel("unix:" + sock)
    stub = pbg.DevicePluginStub(ch)
    try:
        if method == "options":
            o = stub.GetDevicePluginOptions(pb.Empty(), timeout=5)
            print("pre_start_required=%s get_preferred_allocation_available=%s" %
                  (o.pre_start_required, o.get_preferred_allocation_available))
        elif method == "allocate":
            req = pb.AllocateRequest(container_requests=[
                pb.ContainerAllocateRequest(devices_ids=[i for i in a.split(",") if i]) for a in rest])
            resp = stub.Allocate(req, timeout=5)
            for n, c in enumerate(resp.container_responses):
                print("container %d cdi %s" % (n, " ".join(d.name for d in c.cdi_devices)))
                for k, v in sorted(c.annotations.items()):
                    print("container %d annotation %s=%s" % (n, k, v))
                print("container %d envs %d mounts %d devices %d" % (n, len(c.envs), len(c.mounts), len(c.devices)))
        elif method == "preferred":
            req = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
                available_deviceIDs=[i for i in rest[0].split(",") if i],
                must_include_deviceIDs=[i for i in rest[1].split(",") if i],
                allocation_size=int(rest[2]))])
            resp = stub.GetPreferredAllocation(req, timeout=5)
            for c in resp.container_responses:
                print("preferred %s" % ",".join(c.deviceIDs))
        elif method == "prestart":
            stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=rest[0].split(",")), timeout=5)
            print("prestart ok")
        elif method == "raw":
            call = ch.unary_unary(rest[0], request_serializer=None, response_deserializer=None)
            out = call(bytes.fromhex(rest[1]), timeout=5)
            print("raw ok %s" % out.hex())
        else:
            sys.exit("fake_kubelet: unknown method " + method)
    except grpc.RpcError as e:
        print("error %s: %s" % (e.code().name, e.details()))
        return 3
    finally:
        ch.close()
    return 0


# ---------------------------------------------------------------- abuse

def h2_exchange(sock_path, headers, body, chunks=None, timeout=5):
    """One request over raw HTTP/2: returns (http status, grpc-status or None, closed)."""
    import h2.config
    import h2.connection
    import h2.events

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock_path)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    s.sendall(conn.data_to_send())
    sid = conn.get_next_available_stream_id()
    conn.send_headers(sid, headers, end_stream=body is None)
    s.sendall(conn.data_to_send())
    status = grpc_status = None
    ended = closed = False
    pending = body or b""
    while not ended:
        while pending and conn.local_flow_control_window(sid) > 0:
            n = min(len(pending), conn.local_flow_control_window(sid), conn.max_outbound_frame_size)
            conn.send_data(sid, pending[:n], end_stream=len(pending) == n)
            pending = pending[n:]
            s.sendall(conn.data_to_send())
        try:
            data = s.recv(65536)
        except socket.timeout:
            break
        if not data:
            closed = True
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                for k, v in ev.headers:
                    if k == ":status":
                        status = int(v)
                    elif k == "grpc-status":
                        grpc_status = int(v)
            elif isinstance(ev, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended = True
            elif isinstance(ev, h2.events.ConnectionTerminated):
                ended = closed = True
            elif isinstance(ev, h2.events.DataReceived):
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
        s.sendall(conn.data_to_send())
    s.close()
    return status, grpc_status, closed


def grpc_headers(path, ctype="application/grpc", extra=()):
    return [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost"),
            ("content-type", ctype), ("te", "trailers")] + list(extra)


def frame(msg, flag=0, length=None):
    return struct.pack(">BI", flag, len(msg) if length is None else length) + msg


def raw_bytes(sock_path, data):
    """Sends bytes, reads until the plugin closes or 2 s pass: True if it closed."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(sock_path)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
        return True
    except (socket.timeout, ConnectionResetError, BrokenPipeError):
        return False
    finally:
        s.close()


def cmd_abuse(args):
    sock = args[0]
    alloc = "/v1beta1.DevicePlugin/Allocate"
    fails = 0

    def still_serves():
        ch = grpc.insecure_channel("unix:" + sock)
        try:
            pbg.DevicePluginStub(ch).GetDevicePluginOptions(pb.Empty(), timeout=5)
            return True
        except grpc.RpcError:
            return False
        finally:
            ch.close()

    def check(desc, ok):
        nonlocal fails
        alive = still_serves()
        print("  %s: %s%s" % ("ok" if ok and alive else "FAIL", desc, "" if alive else " (the plugin no longer answers)"))
        fails += not (ok and alive)

    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    check("garbage instead of the HTTP/2 preface: connection closed", raw_bytes(sock, os.urandom(300)))
    check("preface, then a frame header cut short", raw_bytes(sock, preface + b"\x00\x00\x12\x04\x00"))
    check("preface, then a HEADERS frame of garbage HPACK",
          raw_bytes(sock, preface + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" +
                    b"\x00\x00\x08\x01\x05\x00\x00\x00\x01" + b"\xff\xff\xff\xff\xff\xff\xff\xff"))
    valid = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=["x"])]).SerializeToString()
    cases = [
        ("gRPC length prefix larger than the body", grpc_headers(alloc), frame(valid, length=len(valid) + 100), 13),
        ("a body shorter than the 5-byte prefix", grpc_headers(alloc), b"\x00\x00", 13),
        ("no request message at all", grpc_headers(alloc), None, 13),
        ("two request messages", grpc_headers(alloc), frame(valid) + frame(valid), 13),
        ("compressed flag set", grpc_headers(alloc), frame(valid, flag=1), 13),
        ("grpc-encoding gzip", grpc_headers(alloc, extra=[("grpc-encoding", "gzip")]), frame(valid, flag=1), 12),
        ("protobuf: a varint that never ends", grpc_headers(alloc), frame(b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), 13),
        ("protobuf: a length beyond the message", grpc_headers(alloc), frame(b"\x0a\x10\x0a\x01x"), 13),
        ("protobuf: wire type 7", grpc_headers(alloc), frame(b"\x0f\x00"), 13),
        ("protobuf: a group (wire type 3)", grpc_headers(alloc), frame(b"\x0b\x0c"), 13),
        ("protobuf: field number 0", grpc_headers(alloc), frame(b"\x02\x00"), 13),
        ("protobuf: a device ID of invalid UTF-8", grpc_headers(alloc), frame(b"\x0a\x04\x0a\x02\xc3\x28"), 13),
        ("protobuf: container_requests as a varint", grpc_headers(alloc), frame(b"\x08\x01"), 13),
        ("a request over 64 KiB", grpc_headers(alloc), frame(b"\x0a\x00" * 40000), 8),
        ("an unknown method", grpc_headers("/v1beta1.DevicePlugin/Nope"), frame(b""), 12),
        ("a path of 10000 bytes", grpc_headers("/" + "x" * 10000), frame(b""), 12),
        ("negative allocation_size", grpc_headers("/v1beta1.DevicePlugin/GetPreferredAllocation"),
         frame(pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
             allocation_size=-1)]).SerializeToString()), 3),
    ]
    for desc, hdrs, body, want in cases:
        status, gs, closed = h2_exchange(sock, hdrs, body)
        print("    %s: HTTP %s, grpc-status %s%s" % (desc, status, gs, ", closed" if closed else ""))
        check("%s: grpc-status %d" % (desc, want), status == 200 and gs == want)
    status, gs, closed = h2_exchange(sock, grpc_headers(alloc, ctype="application/json"), frame(valid))
    check("content-type application/json: HTTP 415 (HTTP %s)" % status, status == 415 and gs is None)
    status, gs, closed = h2_exchange(sock, [(":method", "GET"), (":scheme", "http"), (":path", alloc),
                                            (":authority", "localhost"), ("content-type", "application/grpc")], None)
    check("GET instead of POST: HTTP 405 (HTTP %s)" % status, status == 405)
    # headers beyond what the plugin takes: the stream is reset, the connection lives on
    status, gs, closed = h2_exchange(sock, grpc_headers(alloc, extra=[("x-big", "y" * 20000)]), frame(valid))
    check("20 kB of headers: refused (HTTP %s, grpc-status %s%s)" % (status, gs, ", closed" if closed else ""),
          status is None or gs not in (None, 0))
    # many connections at once, none of which says anything
    idle = []
    for _ in range(40):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(sock)
        except OSError:
            s.close()
            continue
        idle.append(s)
    time.sleep(0.3)
    for s in idle:
        s.close()
    time.sleep(0.3)
    check("40 silent connections, then closed", True)
    return 1 if fails else 0


# ---------------------------------------------------------------- seeds

def cmd_seeds(args):
    d = args[0]
    os.makedirs(d, exist_ok=True)
    cpr = pb.ContainerPreferredAllocationRequest
    seeds = {
        "options": (1, pb.Empty()),
        "watch": (2, pb.Empty()),
        "preferred": (3, pb.PreferredAllocationRequest(container_requests=[
            cpr(available_deviceIDs=["a1", "a2", "b1"], must_include_deviceIDs=["b1"], allocation_size=2)])),
        "allocate": (4, pb.AllocateRequest(container_requests=[
            pb.ContainerAllocateRequest(devices_ids=["a1", "a2"]), pb.ContainerAllocateRequest(devices_ids=["b1"])])),
        "allocate1": (4, pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=["a1"])])),
        "prestart": (5, pb.PreStartContainerRequest(devices_ids=["a1"])),
    }
    for name, (method, msg) in seeds.items():
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(bytes([method]) + frame(msg.SerializeToString()))
    with open(os.path.join(d, "seed-raw-settings"), "wb") as f:
        f.write(b"\x00" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    return 0


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"serve": cmd_serve, "wait": cmd_wait, "wait-register": cmd_wait_register,
          "call": cmd_call, "abuse": cmd_abuse, "seeds": cmd_seeds}.get(cmd)
    if not fn:
        print(__doc__)
        return 2
    return fn(args)


if __name__ == "__main__":
    sys.exit(main())
