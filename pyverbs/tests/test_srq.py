# Shared receive queues: receives of two RC QPs from one SRQ, the extended
# creation on a Context, limits and tag-matching refusals.
import unittest

from pyverbs.libibverbs_enums import (IBV_QPT_RC, IBV_SRQ_INIT_ATTR_PD, IBV_SRQ_INIT_ATTR_TYPE, IBV_SRQ_LIMIT,
                                      IBV_SRQT_BASIC, IBV_WC_RECV, IBV_WC_SUCCESS, IBV_WR_TAG_ADD)
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.srq import SRQ, OpsWr, SrqAttr, SrqInitAttr, SrqInitAttrEx
from pyverbs.wr import RecvWR, SendWR, SGE

from base import PairTestCase, poll


class SRQTest(PairTestCase):
    def setUp(self):
        super().setUp()
        self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=32, max_sge=1)))
        # b receives through the SRQ
        self.b.qp.close()
        self.b.qp = QP(self.pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=self.b.cq, rcq=self.b.cq, srq=self.srq,
                                           cap=QPCap(max_send_wr=4, max_recv_wr=0)))
        self.connect(self.a, self.b)
        self.connect(self.b, self.a)

    def test_receive_through_srq(self):
        for i in range(4):
            self.srq.post_recv(RecvWR(wr_id=100 + i, num_sge=1, sg=[SGE(self.b.mr.buf + 256 * i, 256,
                                                                         self.b.mr.lkey)]))
        for i in range(4):
            self.a.mr.write(bytes([i]) * 16, 16, 16 * i)
            self.a.qp.post_send(SendWR(wr_id=i, num_sge=1, sg=[SGE(self.a.mr.buf + 16 * i, 16, self.a.mr.lkey)]))
        poll(self.a.cq, 4)
        wcs = poll(self.b.cq, 4)
        self.assertEqual([wc.wr_id for wc in wcs], [100, 101, 102, 103])
        self.assertTrue(all(wc.opcode == IBV_WC_RECV and wc.status == IBV_WC_SUCCESS for wc in wcs))
        for i in range(4):
            self.assertEqual(self.b.mr.read(16, 256 * i), bytes([i]) * 16)

    def test_query_modify(self):
        attr = self.srq.query()
        self.assertGreaterEqual(attr.max_wr, 32)
        self.srq.modify(SrqAttr(srq_limit=3), IBV_SRQ_LIMIT)
        self.assertEqual(self.srq.query().srq_limit, 3)

    def test_srq_closes_its_qp(self):
        self.srq.close()
        self.assertTrue(self.b.qp.closed)
        self.assertFalse(self.a.qp.closed)

    def test_extended_creation(self):
        attr = SrqInitAttrEx(max_wr=16)
        attr.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE
        attr.srq_type = IBV_SRQT_BASIC
        attr.pd = self.pd
        srq = SRQ(self.ctx, attr)
        self.assertGreaterEqual(srq.query().max_wr, 16)
        self.pd.close()  # the SRQ depends on the PD
        self.assertTrue(srq.closed)

    def test_ops_on_a_basic_srq(self):
        with self.assertRaises(PyverbsRDMAError):
            self.srq.post_srq_ops(OpsWr(opcode=IBV_WR_TAG_ADD, tag=7, sg_list=[SGE(self.b.mr.buf, 8,
                                                                                  self.b.mr.lkey)]))

    def test_wrong_creator(self):
        with self.assertRaisesRegex(PyverbsRDMAError, 'Srq needs either Context or PD'):
            SRQ(self.a.cq, SrqInitAttr())


if __name__ == '__main__':
    unittest.main()
