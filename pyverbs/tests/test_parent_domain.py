# Parent domains: queues whose memory comes from Python allocators.
import ctypes
import errno
import mmap
import unittest

from pyverbs.libibverbs_enums import _IBV_ALLOCATOR_USE_DEFAULT, IBV_QPT_RC, IBV_WC_RECV
from pyverbs.pd import PD, ParentDomain, ParentDomainContext, ParentDomainInitAttr
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE

from base import PairTestCase, Side, poll


class Allocator:
    """Page-aligned anonymous mappings, remembered until freed."""

    def __init__(self, default=False):
        self.default = default
        self.maps = {}
        self.calls = []

    def alloc(self, pd, pd_ctx, size, alignment, resource_type):
        self.calls.append(('alloc', size, resource_type))
        if self.default:
            return _IBV_ALLOCATOR_USE_DEFAULT
        m = mmap.mmap(-1, max(size, mmap.PAGESIZE))
        addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
        self.maps[addr] = m
        return addr

    def free(self, pd, pd_ctx, ptr, resource_type):
        self.calls.append(('free', ptr, resource_type))
        self.maps.pop(ptr, None)  # (the mapping goes with the last reference)


class ParentDomainTest(PairTestCase):
    def setUp(self):
        super().setUp()
        try:
            ParentDomain(self.ctx, ParentDomainInitAttr(pd=self.pd)).close()
        except PyverbsRDMAError as e:
            # (soft-RoCE has no parent domains)
            if e.error_code == errno.EOPNOTSUPP:
                self.skipTest('the device has no parent domains')
            raise

    def parent(self, allocator):
        ctx = ParentDomainContext(self.pd, allocator.alloc, allocator.free, user_data='mine')
        self.assertEqual(ctx.user_data, 'mine')
        attr = ParentDomainInitAttr(pd=self.pd, pd_context=ctx)
        self.assertNotEqual(attr.comp_mask, 0)
        return ParentDomain(self.ctx, attr)

    def test_qp_on_python_memory(self):
        allocator = Allocator()
        pdom = self.parent(allocator)
        self.b.qp.close()
        self.b.qp = QP(pdom, QPInitAttr(qp_type=IBV_QPT_RC, scq=self.b.cq, rcq=self.b.cq,
                                        cap=QPCap(max_send_wr=8, max_recv_wr=8)))
        self.assertTrue(any(c[0] == 'alloc' for c in allocator.calls))
        self.connect(self.a, self.b)
        self.connect(self.b, self.a)
        self.b.qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(self.b.mr.buf, 64, self.b.mr.lkey)]))
        self.a.mr.write(b'parent domain', 13)
        self.a.qp.post_send(SendWR(num_sge=1, sg=[SGE(self.a.mr.buf, 13, self.a.mr.lkey)]))
        poll(self.a.cq)
        wc = poll(self.b.cq)[0]
        self.assertEqual((wc.opcode, wc.byte_len), (IBV_WC_RECV, 13))
        self.assertEqual(self.b.mr.read(13, 0), b'parent domain')
        self.b.qp.close()
        self.assertTrue(any(c[0] == 'free' for c in allocator.calls))

    def test_default_allocation(self):
        allocator = Allocator(default=True)
        pdom = self.parent(allocator)
        qp = QP(pdom, QPInitAttr(qp_type=IBV_QPT_RC, scq=self.a.cq, rcq=self.a.cq, cap=QPCap()))
        self.assertTrue(allocator.calls)
        qp.close()

    def test_failing_allocator_fails_the_verb(self):
        def refuse(*args):
            raise MemoryError('no memory for you')
        attr = ParentDomainInitAttr(pd=self.pd, pd_context=ParentDomainContext(self.pd, refuse, refuse))
        pdom = ParentDomain(self.ctx, attr)
        with self.assertRaises(PyverbsRDMAError):
            QP(pdom, QPInitAttr(qp_type=IBV_QPT_RC, scq=self.a.cq, rcq=self.a.cq, cap=QPCap()))

    def test_close_order(self):
        pdom = ParentDomain(self.ctx, ParentDomainInitAttr(pd=self.pd))
        qp = QP(pdom, QPInitAttr(qp_type=IBV_QPT_RC, scq=self.a.cq, rcq=self.a.cq, cap=QPCap()))
        self.pd.close()  # its parent domain and that domain's QP go first
        self.assertTrue(pdom.closed and qp.closed)


if __name__ == '__main__':
    unittest.main()
