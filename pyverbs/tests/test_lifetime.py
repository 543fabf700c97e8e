# Object lifetime: parents close their children first, children keep their
# parents alive, close() twice is harmless, use after close raises, and
# thousands of objects leave no fd or kernel object behind.
import gc
import os
import unittest

from pyverbs import device as d
from pyverbs.cq import CQ, CompChannel
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.libibverbs_enums import IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_QPT_RC

from base import device_name


def open_fds():
    return len(os.listdir('/proc/self/fd'))


class LifetimeTest(unittest.TestCase):
    def test_context_closes_children(self):
        ctx = d.Context(name=device_name())
        pd = PD(ctx)
        mr = MR(pd, 4096, IBV_ACCESS_LOCAL_WRITE)
        cc = CompChannel(ctx)
        cq = CQ(ctx, 8, channel=cc)
        qp = QP(pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap()))
        ctx.close()
        for obj in (qp, cq, cc, mr, pd, ctx):
            self.assertTrue(obj.closed, type(obj).__name__)
        for obj in (qp, cq, cc, mr, pd, ctx):
            obj.close()  # harmless the second time
        with self.assertRaises(PyverbsUserError):
            mr.read(1, 0)
        with self.assertRaises(PyverbsUserError):
            PD(ctx)

    def test_pd_closes_its_mrs_and_qps_first(self):
        with d.Context(name=device_name()) as ctx:
            cq = CQ(ctx, 8)
            pd = PD(ctx)
            mr = MR(pd, 4096, IBV_ACCESS_LOCAL_WRITE)
            qp = QP(pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap()))
            pd.close()  # no EBUSY: the QP and the MR went first
            self.assertTrue(mr.closed and qp.closed)
            # the CQ a closed QP used is free to go
            cq.close()

    def test_cq_with_qp_closes_qp(self):
        with d.Context(name=device_name()) as ctx:
            pd = PD(ctx)
            cq = CQ(ctx, 8)
            qp = QP(pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap()))
            cq.close()
            self.assertTrue(qp.closed)
            self.assertFalse(pd.closed)

    def test_child_keeps_parent(self):
        mr = MR(PD(d.Context(name=device_name())), 64, IBV_ACCESS_LOCAL_WRITE)
        gc.collect()
        mr.write(b'still here', 10)
        self.assertEqual(mr.read(10, 0), b'still here')
        del mr
        gc.collect()

    def test_no_leak(self):
        ctx = d.Context(name=device_name())
        ctx.close()
        before = open_fds()
        for i in range(200):
            with d.Context(name=device_name()) as ctx:
                pd = PD(ctx)
                for _ in range(10):
                    MR(pd, 4096, IBV_ACCESS_LOCAL_WRITE)
                CQ(ctx, 4)
                if i % 2:
                    ctx.close()
        gc.collect()
        self.assertEqual(open_fds(), before)
        # 10 000 MRs on one PD, freed by the garbage collector as they go
        with d.Context(name=device_name()) as ctx:
            pd = PD(ctx)
            for _ in range(10000):
                MR(pd, 64, IBV_ACCESS_LOCAL_WRITE)
        gc.collect()
        self.assertEqual(open_fds(), before)

    def test_bad_arguments(self):
        with d.Context(name=device_name()) as ctx:
            with self.assertRaises(TypeError):
                PD(None)
            with self.assertRaises(TypeError):
                MR(ctx, 64, 0)  # an MR needs a PD
            pd = PD(ctx)
            with self.assertRaises(PyverbsRDMAError) as cm:
                MR(pd, 64, IBV_ACCESS_REMOTE_WRITE)  # needs local write too
            self.assertEqual(cm.exception.error_code, 22)
            mr = MR(pd, 64, IBV_ACCESS_LOCAL_WRITE)
            with self.assertRaises(PyverbsUserError):
                mr.read(65, 0)
            with self.assertRaises(PyverbsUserError):
                mr.write(b'x' * 10, 10, 60)


if __name__ == '__main__':
    unittest.main()
