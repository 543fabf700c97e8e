# The per-call cost of pyverbs' hot methods, in one process on one device:
# QP.post_send (an 8-byte RDMA write), CQ.poll (one completion), CQ.poll
# (empty), MR.write and MR.read (64 bytes), SendWR construction. Prints
# "name nanoseconds" lines (the median of ROUNDS rounds of N calls each).
import statistics
import sys
import time

from pyverbs import device as d
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.enums import (IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE,
                           IBV_LINK_LAYER_ETHERNET, IBV_QPT_RC, IBV_WR_RDMA_WRITE)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SendWR, SGE

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ

ctx = d.Context(name=d.get_device_list()[0].name.decode())
port = ctx.query_port(1)
pd = PD(ctx)
cq = CQ(ctx, 256)
mr = MR(pd, 4096, ACCESS)
qps = [QP(pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=128, max_recv_wr=1)))
       for _ in range(2)]
for me, peer in ((qps[0], qps[1]), (qps[1], qps[0])):
    attr = QPAttr(port_num=1)
    attr.qp_access_flags = ACCESS
    attr.dest_qp_num = peer.qp_num
    if port.link_layer == IBV_LINK_LAYER_ETHERNET:  # (RoCE: by GID)
        attr.ah_attr = AHAttr(is_global=1, gr=GlobalRoute(dgid=ctx.query_gid(1, 1), sgid_index=1), port_num=1)
    else:
        attr.ah_attr = AHAttr(dlid=port.lid, port_num=1)
    attr.max_dest_rd_atomic = attr.max_rd_atomic = 1
    attr.min_rnr_timer, attr.timeout, attr.retry_cnt, attr.rnr_retry = 12, 14, 7, 7
    me.to_rts(attr)
qp = qps[0]
wr = SendWR(opcode=IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)])
wr.set_wr_rdma(mr.rkey, mr.buf + 2048)
clock = time.perf_counter_ns


def round_post_poll():
    post = poll = 0
    for _ in range(N):
        t = clock()
        qp.post_send(wr)
        post += clock() - t
        while True:
            t = clock()
            n, _ = cq.poll()
            dt = clock() - t
            if n:
                poll += dt
                break
    return post / N, poll / N


def timed(fn):
    t = clock()
    for _ in range(N):
        fn()
    return (clock() - t) / N


results = {}
for _ in range(ROUNDS):
    p, q = round_post_poll()
    for name, v in (('QP.post_send', p), ('CQ.poll (1 CQE)', q), ('CQ.poll (empty)', timed(cq.poll)),
                    ('MR.write 64 B', timed(lambda: mr.write(b'x' * 64, 64))),
                    ('MR.read 64 B', timed(lambda: mr.read(64, 0))),
                    ('SendWR()', timed(lambda: SendWR(num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)])))):
        results.setdefault(name, []).append(v)
for name, v in results.items():
    print(f'{name}\t{statistics.median(v):.0f}')
ctx.close()
