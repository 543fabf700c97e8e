#!/usr/bin/env python3
"""A stand-in for ibacm on its UNIX socket, for testing rdma_getaddrinfo's
ibacm client: logs every request (hex, one line each) and answers a resolve
with one path record, the way ibacm does.

    fake_ibacm.py SOCKET LOG
"""
import os
import socket
import struct
import sys

sock_path, log_path = sys.argv[1], sys.argv[2]
try:
    os.unlink(sock_path)
except FileNotFoundError:
    pass
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sock_path)
srv.listen(8)
print("ready", flush=True)

HDR = struct.Struct("=BBB3sHQ")  # version opcode status data[3] length tid (host order)
EP_LEN = 72


def path_record():
    """A 64-byte path record: service id 0, dgid/sgid ::ffff:10.78.0.1,
    dlid/slid 0, hop limit 1, traffic class 0, reversible, pkey 0xffff,
    sl 0, mtu 1024 (3), rate 40 Gb/s (7), packet life 0x12."""
    gid = bytes(10) + b"\xff\xff" + bytes([10, 78, 0, 1])
    rec = struct.pack("!Q16s16sHHIBBHHBBBB6x",
                      0, gid, gid, 0, 0, 1, 0, 0x80, 0xffff, 0,
                      0x80 | 3, 0x80 | 7, 0x80 | 0x12, 0)
    assert len(rec) == 64
    return rec


while True:
    conn, _ = srv.accept()
    with conn:
        data = b""
        while len(data) < HDR.size:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        if len(data) < HDR.size:
            continue
        ver, op, status, _, length, tid = HDR.unpack_from(data)
        conn.settimeout(5)
        while len(data) < length:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        with open(log_path, "a") as log:
            log.write(data[:length].hex() + "\n")
        # As ibacm answers a resolve: the request's place taken by one path
        # entry, flagged GMP | PRIMARY | BIDIRECTIONAL.
        body = struct.pack("=IHH", 0x2b, 0x10, 0) + path_record()
        reply = HDR.pack(ver, op | 0x80, 0, b"\0\0\0", HDR.size + len(body), tid) + body
        conn.sendall(reply)
