# Data through pyverbs: two QPs move verified bytes with every operation.
import struct
import unittest

from pyverbs.addr import AH
from pyverbs.libibverbs_enums import (IBV_QPS_RTS, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_WC_COMP_SWAP,
                                      IBV_WC_FETCH_ADD, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE, IBV_WC_RECV,
                                      IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_SEND, IBV_WC_SUCCESS, IBV_WC_WITH_IMM,
                                      IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_RDMA_READ,
                                      IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
                                      IBV_WR_SEND_WITH_IMM, IBV_SEND_INLINE, IBV_SEND_SIGNALED)
from pyverbs.qp import QPAttr
from pyverbs.wr import RecvWR, SendWR, SGE

from base import PairTestCase, poll

MSG = bytes(range(256)) * 4


class RCTraffic(PairTestCase):
    qp_type = IBV_QPT_RC

    def setUp(self):
        super().setUp()
        self.connect(self.a, self.b)
        self.connect(self.b, self.a)

    def recv(self, side, length, wr_id=7):
        side.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(side.mr.buf, length, side.mr.lkey)]))

    def test_states(self):
        self.assertEqual(self.a.qp.qp_state, IBV_QPS_RTS)
        attr, init = self.a.qp.query(0x1fffff)
        self.assertEqual(attr.qp_state, IBV_QPS_RTS)
        self.assertEqual(attr.dest_qp_num, self.b.qp.qp_num)
        self.assertGreaterEqual(init.cap.max_send_wr, 16)

    def test_send(self):
        self.recv(self.b, len(MSG))
        self.a.mr.write(MSG, len(MSG))
        self.a.qp.post_send(SendWR(wr_id=3, opcode=IBV_WR_SEND, num_sge=1,
                                   sg=[SGE(self.a.mr.buf, len(MSG), self.a.mr.lkey)]))
        wcs = poll(self.a.cq) + poll(self.b.cq)
        by_op = {wc.opcode: wc for wc in wcs}
        self.assertEqual(by_op[IBV_WC_SEND].status, IBV_WC_SUCCESS)
        self.assertEqual(by_op[IBV_WC_SEND].wr_id, 3)
        recv = by_op[IBV_WC_RECV]
        self.assertEqual((recv.status, recv.wr_id, recv.byte_len), (IBV_WC_SUCCESS, 7, len(MSG)))
        self.assertEqual(recv.qp_num, self.b.qp.qp_num)
        self.assertEqual(self.b.mr.read(len(MSG), 0), MSG)

    def test_send_imm_inline_chain(self):
        self.recv(self.b, 64, wr_id=1)
        self.recv(self.b, 64, wr_id=2)
        self.a.mr.write(b'first', 5)
        self.a.mr.write(b'second', 6, 100)
        second = SendWR(wr_id=12, opcode=IBV_WR_SEND_WITH_IMM, num_sge=1, imm_data=0x12345678,
                        sg=[SGE(self.a.mr.buf + 100, 6, self.a.mr.lkey)])
        first = SendWR(wr_id=11, num_sge=1, sg=[SGE(self.a.mr.buf, 5, self.a.mr.lkey)],
                       send_flags=IBV_SEND_SIGNALED | IBV_SEND_INLINE, next_wr=second)
        self.a.qp.post_send(first)
        sends = poll(self.a.cq, 2)
        self.assertEqual([wc.wr_id for wc in sends], [11, 12])
        recvs = poll(self.b.cq, 2)
        self.assertEqual([(wc.wr_id, wc.byte_len) for wc in recvs], [(1, 5), (2, 6)])
        self.assertTrue(recvs[1].wc_flags & IBV_WC_WITH_IMM)
        self.assertEqual(recvs[1].imm_data, 0x12345678)
        self.assertEqual(self.b.mr.read(6, 0), b'second')

    def test_rdma_write_read(self):
        self.a.mr.write(MSG, len(MSG))
        wr = SendWR(wr_id=5, opcode=IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(self.a.mr.buf, 512, self.a.mr.lkey)])
        wr.set_wr_rdma(self.b.mr.rkey, self.b.mr.buf + 1024)
        self.a.qp.post_send(wr)
        self.assertEqual(poll(self.a.cq)[0].opcode, IBV_WC_RDMA_WRITE)
        self.assertEqual(self.b.mr.read(512, 1024), MSG[:512])
        # read it back into another place of a's buffer
        wr = SendWR(wr_id=6, opcode=IBV_WR_RDMA_READ, num_sge=1, sg=[SGE(self.a.mr.buf + 2048, 512, self.a.mr.lkey)])
        wr.set_wr_rdma(self.b.mr.rkey, self.b.mr.buf + 1024)
        self.a.qp.post_send(wr)
        wc = poll(self.a.cq)[0]
        self.assertEqual((wc.opcode, wc.status, wc.byte_len), (IBV_WC_RDMA_READ, IBV_WC_SUCCESS, 512))
        self.assertEqual(self.a.mr.read(512, 2048), MSG[:512])

    def test_write_with_imm(self):
        self.recv(self.b, 0)
        self.a.mr.write(b'xyz', 3)
        wr = SendWR(opcode=IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1, imm_data=99,
                    sg=[SGE(self.a.mr.buf, 3, self.a.mr.lkey)])
        wr.set_wr_rdma(self.b.mr.rkey, self.b.mr.buf + 8)
        self.a.qp.post_send(wr)
        poll(self.a.cq)
        wc = poll(self.b.cq)[0]
        self.assertEqual((wc.opcode, wc.imm_data, wc.byte_len), (IBV_WC_RECV_RDMA_WITH_IMM, 99, 3))
        self.assertEqual(self.b.mr.read(3, 8), b'xyz')

    def test_atomics(self):
        self.b.mr.write(struct.pack('=Q', 40), 8, 64)
        wr = SendWR(opcode=IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1, sg=[SGE(self.a.mr.buf, 8, self.a.mr.lkey)])
        wr.set_wr_atomic(self.b.mr.rkey, self.b.mr.buf + 64, 2)
        self.a.qp.post_send(wr)
        self.assertEqual(poll(self.a.cq)[0].opcode, IBV_WC_FETCH_ADD)
        self.assertEqual(struct.unpack('=Q', self.a.mr.read(8, 0))[0], 40)
        self.assertEqual(struct.unpack('=Q', self.b.mr.read(8, 64))[0], 42)
        wr = SendWR(opcode=IBV_WR_ATOMIC_CMP_AND_SWP, num_sge=1, sg=[SGE(self.a.mr.buf + 8, 8, self.a.mr.lkey)])
        wr.set_wr_atomic(self.b.mr.rkey, self.b.mr.buf + 64, 42, 7)
        self.a.qp.post_send(wr)
        self.assertEqual(poll(self.a.cq)[0].opcode, IBV_WC_COMP_SWAP)
        self.assertEqual(struct.unpack('=Q', self.b.mr.read(8, 64))[0], 7)

    def test_remote_access_error(self):
        wr = SendWR(opcode=IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(self.a.mr.buf, 8, self.a.mr.lkey)])
        wr.set_wr_rdma(self.b.mr.rkey ^ 0xff00, self.b.mr.buf)
        self.a.qp.post_send(wr)
        self.assertNotEqual(poll(self.a.cq)[0].status, IBV_WC_SUCCESS)


class UCTraffic(RCTraffic):
    qp_type = IBV_QPT_UC

    def test_rdma_write_read(self):
        self.skipTest('UC has no RDMA read')

    def test_atomics(self):
        self.skipTest('UC has no atomics')

    def test_remote_access_error(self):
        self.skipTest('UC reports no remote errors to the sender')


class UDTraffic(PairTestCase):
    qp_type = IBV_QPT_UD

    def test_send(self):
        for side in (self.a, self.b):
            attr = QPAttr(port_num=1)
            attr.qkey = 0x11111111
            side.qp.to_rts(attr)
        self.assertEqual(self.a.qp.qp_state, IBV_QPS_RTS)
        self.b.qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(self.b.mr.buf, 40 + 100, self.b.mr.lkey)]))
        ah = AH(self.pd, attr=self.path())
        self.a.mr.write(MSG[:100], 100)
        wr = SendWR(wr_id=2, num_sge=1, sg=[SGE(self.a.mr.buf, 100, self.a.mr.lkey)])
        wr.set_wr_ud(ah, self.b.qp.qp_num, 0x11111111)
        self.a.qp.post_send(wr)
        self.assertEqual(poll(self.a.cq)[0].status, IBV_WC_SUCCESS)
        wc = poll(self.b.cq)[0]
        self.assertEqual((wc.status, wc.byte_len, wc.src_qp), (IBV_WC_SUCCESS, 140, self.a.qp.qp_num))
        # the first 40 bytes are the GRH's place
        self.assertEqual(self.b.mr.read(100, 40), MSG[:100])


if __name__ == '__main__':
    unittest.main()
