# Shared set-up of the pyverbs tests: a device (PYVERBS_DEVICE, else the
# first one), and pairs of connected QPs on its port 1 in one process.
import os
import time
import unittest

from pyverbs import device as d
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_READ,
                                      IBV_ACCESS_REMOTE_WRITE, IBV_LINK_LAYER_ETHERNET, IBV_QPT_RC)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

ALL_ACCESS = (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
              IBV_ACCESS_REMOTE_ATOMIC)


def device_name():
    name = os.environ.get('PYVERBS_DEVICE')
    if name:
        return name
    devs = d.get_device_list()
    if not devs:
        raise unittest.SkipTest('no RDMA device')
    return devs[0].name.decode()


def poll(cq, count=1, timeout=10.0):
    """The next `count` completions of cq, or a failure after timeout."""
    wcs = []
    end = time.monotonic() + timeout
    while len(wcs) < count:
        n, got = cq.poll(count - len(wcs))
        wcs.extend(got)
        if not n and time.monotonic() > end:
            raise AssertionError(f'{len(wcs)} of {count} completions after {timeout} s')
    return wcs


def port1_path(ctx, port):
    """An address of port 1 of ctx (port: its query_port answer) to itself."""
    if port.link_layer == IBV_LINK_LAYER_ETHERNET:
        gr = GlobalRoute(dgid=ctx.query_gid(1, 1), sgid_index=1)
        return AHAttr(is_global=1, gr=gr, port_num=1)
    return AHAttr(dlid=port.lid, port_num=1)


class Side:
    """One end: PD, CQ, an MR and a QP."""

    def __init__(self, ctx, pd, qp_type, size=4096, cap=None):
        self.cq = CQ(ctx, 64)
        self.mr = MR(pd, size, ALL_ACCESS)
        self.qp = QP(pd, QPInitAttr(qp_type=qp_type, scq=self.cq, rcq=self.cq,
                                    cap=cap or QPCap(max_send_wr=16, max_recv_wr=16)))


class PairTestCase(unittest.TestCase):
    """Two QPs of one type, connected to each other through port 1."""
    qp_type = IBV_QPT_RC

    def setUp(self):
        self.ctx = d.Context(name=device_name())
        self.port = self.ctx.query_port(1)
        self.pd = PD(self.ctx)
        self.a = Side(self.ctx, self.pd, self.qp_type)
        self.b = Side(self.ctx, self.pd, self.qp_type)

    def tearDown(self):
        self.ctx.close()

    def path(self):
        """The address of port 1 itself (both QPs live there)."""
        return port1_path(self.ctx, self.port)

    def connect(self, src, dst):
        attr = QPAttr(port_num=1)
        attr.qp_access_flags = ALL_ACCESS
        attr.dest_qp_num = dst.qp.qp_num
        attr.ah_attr = self.path()
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        src.qp.to_rts(attr)
        return attr
