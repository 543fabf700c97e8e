#!/usr/bin/env python3
# rc_loopback.py [DEVICE [MESSAGE]]: two RC queue pairs on one port of one
# device, connected to each other; the first sends MESSAGE to the second,
# then writes it into the second's memory with an RDMA write and reads it
# back with an RDMA read. Prints what arrived. The smallest complete
# pyverbs program: device, PD, MR, CQ, QP state machine, posting, polling.
import sys

import pyverbs.device as d
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
try:
    import pyverbs.libibverbs_enums as e
except ImportError:  # (releases before the module was renamed)
    import pyverbs.enums as e
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


def wait(cq):
    """Busy-polls one completion and checks it succeeded."""
    while True:
        n, wcs = cq.poll()
        if n:
            if wcs[0].status != e.IBV_WC_SUCCESS:
                sys.exit(f'completion failed: {wcs[0]}')
            return wcs[0]


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else d.get_device_list()[0].name.decode()
    message = (sys.argv[2] if len(sys.argv) > 2 else 'hello from pyverbs').encode()
    # Everything made on the context is closed with it at the end of the block.
    with d.Context(name=name) as ctx:
        port = ctx.query_port(1)
        pd = PD(ctx)
        cq = CQ(ctx, 16)
        mrs = [MR(pd, 4096, ACCESS) for _ in range(2)]
        qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
               for _ in range(2)]
        # The path to this very port: by LID on InfiniBand, by GID on RoCE.
        if port.link_layer == e.IBV_LINK_LAYER_ETHERNET:
            path = AHAttr(is_global=1, gr=GlobalRoute(dgid=ctx.query_gid(1, 1), sgid_index=1), port_num=1)
        else:
            path = AHAttr(dlid=port.lid, port_num=1)
        for me, peer in ((qps[0], qps[1]), (qps[1], qps[0])):
            attr = QPAttr(port_num=1)
            attr.qp_access_flags = ACCESS
            attr.dest_qp_num = peer.qp_num
            attr.ah_attr = path
            attr.max_dest_rd_atomic = attr.max_rd_atomic = 1
            attr.min_rnr_timer, attr.timeout, attr.retry_cnt, attr.rnr_retry = 12, 14, 7, 7
            me.to_rts(attr)  # RESET -> INIT -> RTR -> RTS

        # send / receive
        qps[1].post_recv(RecvWR(num_sge=1, sg=[SGE(mrs[1].buf, 4096, mrs[1].lkey)]))
        mrs[0].write(message, len(message))
        qps[0].post_send(SendWR(num_sge=1, sg=[SGE(mrs[0].buf, len(message), mrs[0].lkey)]))
        wait(cq)
        wc = wait(cq)
        print(f'received {wc.byte_len} bytes: {mrs[1].read(wc.byte_len, 0).decode()}')

        # RDMA write into the peer's memory, then read it back elsewhere
        wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mrs[0].buf, len(message), mrs[0].lkey)])
        wr.set_wr_rdma(mrs[1].rkey, mrs[1].buf + 1024)
        qps[0].post_send(wr)
        wait(cq)
        wr = SendWR(opcode=e.IBV_WR_RDMA_READ, num_sge=1, sg=[SGE(mrs[0].buf + 2048, len(message), mrs[0].lkey)])
        wr.set_wr_rdma(mrs[1].rkey, mrs[1].buf + 1024)
        qps[0].post_send(wr)
        wait(cq)
        print(f'read back: {mrs[0].read(len(message), 2048).decode()}')


if __name__ == '__main__':
    main()
