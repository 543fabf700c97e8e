# Extended QPs: created on a Context with QPInitAttrEx, sends built with the
# ibv_wr_* interface (QPEx), and the QP extras (ECE, data in order).
import struct
import unittest

from pyverbs import device as d
from pyverbs.cq import CQ
from pyverbs.libibverbs_enums import (IBV_QP_INIT_ATTR_PD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, IBV_QPT_RC,
                                      IBV_QPT_UD, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_QP_EX_WITH_RDMA_READ,
                                      IBV_QP_EX_WITH_RDMA_WRITE, IBV_QP_EX_WITH_SEND, IBV_QP_EX_WITH_SEND_WITH_IMM,
                                      IBV_SEND_SIGNALED, IBV_WC_FETCH_ADD, IBV_WC_RDMA_READ, IBV_WC_RECV,
                                      IBV_WC_SUCCESS, IBV_WC_WITH_IMM, IBV_WR_SEND)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from pyverbs.qp import (ECE, DataBuffer, QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx, _copy_caps)
from pyverbs.wr import RecvWR, SGE

from base import ALL_ACCESS, PairTestCase, poll

OPS = (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)


class ExSide:
    def __init__(self, ctx, pd, qp_type=IBV_QPT_RC):
        self.cq = CQ(ctx, 64)
        self.mr = MR(pd, 4096, ALL_ACCESS)
        attr = QPInitAttrEx(qp_type=qp_type, scq=self.cq, rcq=self.cq, cap=QPCap(max_send_wr=16, max_recv_wr=16,
                                                                                  max_inline_data=64),
                            comp_mask=IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, pd=pd,
                            send_ops_flags=OPS)
        self.qp = QPEx(ctx, attr)


class QPExTraffic(PairTestCase):
    def setUp(self):
        super().setUp()
        self.a = ExSide(self.ctx, self.pd)
        self.b = ExSide(self.ctx, self.pd)
        self.connect(self.a, self.b)
        self.connect(self.b, self.a)

    def test_send_and_imm(self):
        for i in range(2):
            self.b.qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(self.b.mr.buf + 64 * i, 64, self.b.mr.lkey)]))
        self.a.mr.write(b'through wr_send', 15)
        qp = self.a.qp
        qp.wr_start()
        qp.wr_id = 21
        qp.wr_flags = IBV_SEND_SIGNALED
        qp.wr_send()
        qp.wr_set_sge(SGE(self.a.mr.buf, 15, self.a.mr.lkey))
        qp.wr_id = 22
        qp.wr_send_imm(0xabcdef01)
        qp.wr_set_inline_data(self.a.mr.buf, 7)
        qp.wr_complete()
        self.assertEqual([wc.wr_id for wc in poll(self.a.cq, 2)], [21, 22])
        recvs = poll(self.b.cq, 2)
        self.assertEqual([(wc.opcode, wc.byte_len) for wc in recvs], [(IBV_WC_RECV, 15), (IBV_WC_RECV, 7)])
        self.assertTrue(recvs[1].wc_flags & IBV_WC_WITH_IMM)
        # wr_send_imm takes host order, as the reference's
        self.assertEqual(recvs[1].imm_data, struct.unpack('<I', struct.pack('>I', 0xabcdef01))[0])
        self.assertEqual(self.b.mr.read(15, 0), b'through wr_send')
        self.assertEqual(self.b.mr.read(7, 64), b'through')

    def test_rdma_and_atomic(self):
        qp = self.a.qp
        self.a.mr.write(b'0123456789', 10)
        qp.wr_start()
        qp.wr_flags = IBV_SEND_SIGNALED
        qp.wr_rdma_write(self.b.mr.rkey, self.b.mr.buf + 100)
        qp.wr_set_sge_list(1, [SGE(self.a.mr.buf, 10, self.a.mr.lkey)])
        qp.wr_complete()
        poll(self.a.cq)
        self.assertEqual(self.b.mr.read(10, 100), b'0123456789')
        self.b.mr.write(struct.pack('=Q', 5), 8, 200)
        qp.wr_start()
        qp.wr_flags = IBV_SEND_SIGNALED
        qp.wr_atomic_fetch_add(self.b.mr.rkey, self.b.mr.buf + 200, 10)
        qp.wr_set_sge(SGE(self.a.mr.buf + 512, 8, self.a.mr.lkey))
        qp.wr_rdma_read(self.b.mr.rkey, self.b.mr.buf + 100)
        qp.wr_set_sge(SGE(self.a.mr.buf + 1024, 10, self.a.mr.lkey))
        qp.wr_complete()
        wcs = poll(self.a.cq, 2)
        self.assertEqual([wc.opcode for wc in wcs], [IBV_WC_FETCH_ADD, IBV_WC_RDMA_READ])
        self.assertTrue(all(wc.status == IBV_WC_SUCCESS for wc in wcs))
        self.assertEqual(struct.unpack('=Q', self.a.mr.read(8, 512))[0], 5)
        self.assertEqual(struct.unpack('=Q', self.b.mr.read(8, 200))[0], 15)
        self.assertEqual(self.a.mr.read(10, 1024), b'0123456789')

    def test_abort_posts_nothing(self):
        qp = self.a.qp
        qp.wr_start()
        qp.wr_flags = IBV_SEND_SIGNALED
        qp.wr_send()
        qp.wr_set_sge(SGE(self.a.mr.buf, 1, self.a.mr.lkey))
        qp.wr_abort()
        self.assertEqual(self.a.cq.poll(), (0, []))

    def test_inline_list(self):
        self.b.qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(self.b.mr.buf, 64, self.b.mr.lkey)]))
        self.a.mr.write(b'abcdefgh', 8)
        qp = self.a.qp
        qp.wr_start()
        qp.wr_flags = IBV_SEND_SIGNALED
        qp.wr_send()
        qp.wr_set_inline_data_list(2, [DataBuffer(self.a.mr.buf + 4, 4), DataBuffer(self.a.mr.buf, 4)])
        qp.wr_complete()
        poll(self.a.cq)
        self.assertEqual(poll(self.b.cq)[0].byte_len, 8)
        self.assertEqual(self.b.mr.read(8, 0), b'efghabcd')


class QPExtras(unittest.TestCase):
    def setUp(self):
        from base import device_name
        self.ctx = d.Context(name=device_name())
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 8)

    def tearDown(self):
        self.ctx.close()

    def test_qpex_without_send_ops(self):
        qp = QPEx(self.ctx, QPInitAttrEx(qp_type=IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=QPCap(),
                                          comp_mask=IBV_QP_INIT_ATTR_PD, pd=self.pd))
        with self.assertRaises(PyverbsUserError):
            qp.wr_start()

    def test_wrong_creators(self):
        with self.assertRaises(PyverbsUserError):
            QP(self.cq, QPInitAttr())
        with self.assertRaises(TypeError):
            QP(self.pd, QPInitAttrEx())
        with self.assertRaises(PyverbsUserError):
            QPInitAttrEx(scq=self.pd)

    def test_ud_qpex_to_rts(self):
        attr = QPInitAttrEx(qp_type=IBV_QPT_UD, scq=self.cq, rcq=self.cq, cap=QPCap(),
                            comp_mask=IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, pd=self.pd,
                            send_ops_flags=IBV_QP_EX_WITH_SEND)
        qp = QPEx(self.ctx, attr, QPAttr())
        self.assertEqual(qp.qp_state, 3)  # RTS
        self.pd.close()
        self.assertTrue(qp.closed)

    def test_ece(self):
        qp = QP(self.pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=QPCap()))
        qp.set_ece(ECE())  # vendor id 0: nothing to set
        try:
            ece = qp.query_ece()
        except PyverbsRDMAError as e:
            self.assertEqual(e.error_code, 95)  # EOPNOTSUPP: the device has no ECE
        else:
            self.assertIsInstance(ece, ECE)

    def test_copy_caps(self):
        attr = QPInitAttr()
        _copy_caps(QPCap(max_send_wr=9, max_inline_data=3), attr)
        self.assertEqual((attr.max_send_wr, attr.max_inline_data), (9, 3))
        qa = QPAttr()
        _copy_caps(QPCap(max_recv_wr=4), qa)
        self.assertEqual(qa.cap.max_recv_wr, 4)


if __name__ == '__main__':
    unittest.main()
