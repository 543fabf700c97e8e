# Extended CQs: RC traffic whose completions are read through CQEX's
# start_poll/poll_next/end_poll and read_* calls.
import errno
import select
import time
import unittest

from pyverbs.cq import CQEX, CompChannel, CqInitAttrEx, PollCqAttr, WcTmInfo
from pyverbs.libibverbs_enums import (IBV_QPT_RC, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, IBV_WC_RECV,
                                      IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_RDMA_WRITE, IBV_WC_SEND,
                                      IBV_WC_STANDARD_FLAGS, IBV_WC_SUCCESS, IBV_WC_WITH_IMM,
                                      IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM)
from pyverbs.mr import MR
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE

from base import ALL_ACCESS, PairTestCase

MSG = bytes(range(256)) * 2


class CQEXSide:
    """One end as base.Side, its completions on an extended CQ."""

    def __init__(self, ctx, pd, wc_flags=IBV_WC_STANDARD_FLAGS):
        self.cq = CQEX(ctx, CqInitAttrEx(cqe=64, wc_flags=wc_flags))
        self.mr = MR(pd, 4096, ALL_ACCESS)
        self.qp = QP(pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                    cap=QPCap(max_send_wr=16, max_recv_wr=16)))


def poll_ex(cq, count=1, timeout=10.0):
    """The next `count` completions of an extended CQ, each as a dict of
    what the read_* calls say."""
    fields = ('opcode', 'byte_len', 'imm_data', 'qp_num', 'src_qp', 'wc_flags', 'vendor_err', 'sl',
              'slid', 'dlid_path_bits')
    got = []
    end = time.monotonic() + timeout
    while len(got) < count:
        rc = cq.start_poll(PollCqAttr())
        if rc == errno.ENOENT:
            if time.monotonic() > end:
                raise AssertionError(f'{len(got)} of {count} completions after {timeout} s')
            continue
        assert rc == 0, rc
        while True:
            wc = {f: getattr(cq, 'read_' + f)() for f in fields}
            wc.update(status=cq.status, wr_id=cq.wr_id)
            got.append(wc)
            if len(got) == count or cq.poll_next() == errno.ENOENT:
                break
        cq.end_poll()
    return got


class CQEXTraffic(PairTestCase):
    qp_type = IBV_QPT_RC

    def setUp(self):
        super().setUp()
        self.a = CQEXSide(self.ctx, self.pd)
        self.b = CQEXSide(self.ctx, self.pd)
        self.connect(self.a, self.b)
        self.connect(self.b, self.a)

    def recv(self, side, length, wr_id=7):
        side.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(side.mr.buf, length, side.mr.lkey)]))

    def test_empty_poll(self):
        self.assertEqual(self.a.cq.start_poll(PollCqAttr()), errno.ENOENT)
        self.assertEqual(self.a.cq.start_poll(None), errno.ENOENT)
        self.assertEqual(self.a.cq.start_poll(), errno.ENOENT)

    def test_send(self):
        self.recv(self.b, len(MSG))
        self.a.mr.write(MSG, len(MSG))
        self.a.qp.post_send(SendWR(wr_id=3, opcode=IBV_WR_SEND, num_sge=1,
                                   sg=[SGE(self.a.mr.buf, len(MSG), self.a.mr.lkey)]))
        send, = poll_ex(self.a.cq)
        self.assertEqual((send['status'], send['wr_id'], send['opcode']), (IBV_WC_SUCCESS, 3, IBV_WC_SEND))
        self.assertEqual(send['qp_num'], self.a.qp.qp_num)
        recv, = poll_ex(self.b.cq)
        self.assertEqual((recv['status'], recv['wr_id'], recv['opcode'], recv['byte_len']),
                         (IBV_WC_SUCCESS, 7, IBV_WC_RECV, len(MSG)))
        self.assertEqual(recv['qp_num'], self.b.qp.qp_num)
        self.assertFalse(recv['wc_flags'] & IBV_WC_WITH_IMM)
        self.assertEqual(self.b.mr.read(len(MSG), 0), MSG)

    def test_send_imm_batch(self):
        """Three receives completed, read in one start_poll/poll_next batch."""
        for i in range(3):
            self.recv(self.b, 64, wr_id=10 + i)
        self.a.mr.write(b'abcdef', 6)
        for i in range(3):
            self.a.qp.post_send(SendWR(wr_id=20 + i, opcode=IBV_WR_SEND_WITH_IMM, num_sge=1, imm_data=0x1000 + i,
                                       sg=[SGE(self.a.mr.buf, 2 + i, self.a.mr.lkey)]))
        sends = poll_ex(self.a.cq, 3)
        self.assertEqual([wc['wr_id'] for wc in sends], [20, 21, 22])
        recvs = poll_ex(self.b.cq, 3)
        self.assertEqual([(wc['wr_id'], wc['byte_len'], wc['imm_data']) for wc in recvs],
                         [(10, 2, 0x1000), (11, 3, 0x1001), (12, 4, 0x1002)])
        for wc in recvs:
            self.assertEqual(wc['opcode'], IBV_WC_RECV)
            self.assertTrue(wc['wc_flags'] & IBV_WC_WITH_IMM)
        self.assertEqual(self.b.cq.start_poll(), errno.ENOENT)

    def test_write_with_imm(self):
        self.recv(self.b, 0, wr_id=5)
        self.a.mr.write(b'xyz', 3)
        wr = SendWR(wr_id=4, opcode=IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1, imm_data=99,
                    sg=[SGE(self.a.mr.buf, 3, self.a.mr.lkey)])
        wr.set_wr_rdma(self.b.mr.rkey, self.b.mr.buf + 8)
        self.a.qp.post_send(wr)
        send, = poll_ex(self.a.cq)
        self.assertEqual((send['wr_id'], send['opcode']), (4, IBV_WC_RDMA_WRITE))
        recv, = poll_ex(self.b.cq)
        self.assertEqual((recv['opcode'], recv['imm_data'], recv['byte_len'], recv['wr_id']),
                         (IBV_WC_RECV_RDMA_WITH_IMM, 99, 3, 5))
        self.assertEqual(self.b.mr.read(3, 8), b'xyz')

    def test_read_outside_poll(self):
        cq = self.a.cq
        with self.assertRaises(PyverbsUserError):
            cq.read_opcode()
        with self.assertRaises(PyverbsUserError):
            cq.poll_next()
        with self.assertRaises(PyverbsUserError):
            cq.end_poll()
        self.recv(self.b, 16)
        self.a.qp.post_send(SendWR(wr_id=1, num_sge=1, sg=[SGE(self.a.mr.buf, 16, self.a.mr.lkey)]))
        poll_ex(self.a.cq)
        # after end_poll, and after an empty start_poll, nothing is readable
        with self.assertRaises(PyverbsUserError):
            cq.read_byte_len()
        self.assertEqual(cq.start_poll(), errno.ENOENT)
        for name in ('read_qp_num', 'read_wc_flags', 'read_tm_info', 'read_cvlan', 'read_timestamp'):
            with self.assertRaises(PyverbsUserError, msg=name):
                getattr(cq, name)()
        # an open poll must be ended before another starts
        self.recv(self.b, 16)
        self.a.qp.post_send(SendWR(wr_id=2, num_sge=1, sg=[SGE(self.a.mr.buf, 16, self.a.mr.lkey)]))
        deadline = time.monotonic() + 10
        while cq.start_poll() == errno.ENOENT:
            self.assertLess(time.monotonic(), deadline)
        try:
            with self.assertRaises(PyverbsUserError):
                cq.start_poll()
            # the hooks our provider leaves out answer EOPNOTSUPP, not a crash
            for name in ('read_cvlan', 'read_flow_tag', 'read_tm_info'):
                try:
                    val = getattr(cq, name)()
                except PyverbsRDMAError as ex:
                    self.assertEqual(ex.error_code, errno.EOPNOTSUPP)
                else:
                    self.assertIsInstance(val, (int, WcTmInfo))
        finally:
            cq.end_poll()

    def test_closed(self):
        cq = self.b.cq
        self.b.qp.close()
        cq.close()
        cq.close()
        with self.assertRaises(PyverbsUserError):
            cq.start_poll()
        with self.assertRaises(PyverbsUserError):
            cq.read_opcode()
        with self.assertRaises(PyverbsUserError):
            str(cq)

    def test_context_closes_cqex(self):
        """Closing the Context closes its QPs and CQEXs first."""
        cq = self.a.cq
        self.ctx.close()
        with self.assertRaises(PyverbsUserError):
            cq.start_poll()


class CQEXObjects(PairTestCase):
    """CQEX attributes and lifetime without traffic."""

    def test_str_and_attrs(self):
        cq = CQEX(self.ctx, CqInitAttrEx(cqe=10))
        text = str(cq)
        self.assertTrue(text.startswith('Extended CQ:\nHandle                : '))
        self.assertIn('\nCQEs                  : ', text)
        self.assertEqual(cq.status, 0)
        cq.wr_id = 5
        self.assertEqual(cq.wr_id, 5)
        self.assertEqual(CQEX(self.ctx).start_poll(), errno.ENOENT)
        self.assertEqual(CQEX(self.ctx, None).start_poll(), errno.ENOENT)

    def test_wc_flags(self):
        flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP
        try:
            cq = CQEX(self.ctx, CqInitAttrEx(wc_flags=flags))
        except PyverbsRDMAError as e:
            # (soft-RoCE has no completion timestamps)
            if e.error_code != errno.EOPNOTSUPP:
                raise
            cq = CQEX(self.ctx, CqInitAttrEx(wc_flags=IBV_WC_STANDARD_FLAGS))
        self.assertEqual(cq.start_poll(), errno.ENOENT)
        with self.assertRaises(PyverbsRDMAError):
            CQEX(self.ctx, CqInitAttrEx(wc_flags=1 << 40))

    def test_channel(self):
        cc = CompChannel(self.ctx)
        cq = CQEX(self.ctx, CqInitAttrEx(channel=cc))
        self.assertEqual(cq.start_poll(), errno.ENOENT)
        cc.close()  # the CQ on the channel goes first
        with self.assertRaises(PyverbsUserError):
            cq.start_poll()

    def test_channel_event(self):
        """get_cq_event takes a CQEX (req_notify and ack_events are ours)."""
        cc = CompChannel(self.ctx)
        cq = CQEX(self.ctx, CqInitAttrEx(channel=cc, wc_flags=IBV_WC_STANDARD_FLAGS))
        other = CQEX(self.ctx, CqInitAttrEx(channel=cc))
        self.a.cq = cq
        self.a.qp = QP(self.pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq,
                                           cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        self.connect(self.a, self.b)
        self.connect(self.b, self.a)
        self.b.mr.write(b'ping', 4)
        for expected in (cq, other):
            cq.req_notify()
            self.a.qp.post_recv(RecvWR(wr_id=9, num_sge=1, sg=[SGE(self.a.mr.buf, 4, self.a.mr.lkey)]))
            self.b.qp.post_send(SendWR(num_sge=1, sg=[SGE(self.b.mr.buf, 4, self.b.mr.lkey)]))
            ready, _, _ = select.select([cc.fd], [], [], 10)
            self.assertTrue(ready, 'no completion event in 10 s')
            if expected is cq:
                cc.get_cq_event(cq)
                cq.ack_events(1)
            else:
                with self.assertRaises(PyverbsRDMAError):
                    cc.get_cq_event(other)  # the event is cq's
            recv, = poll_ex(cq)
            self.assertEqual((recv['wr_id'], recv['byte_len'], recv['opcode']), (9, 4, IBV_WC_RECV))

    def test_parent_domain_attr(self):
        attr = CqInitAttrEx(parent_domain=self.pd)
        self.assertIs(attr.parent_domain, self.pd)
        self.assertEqual(attr.comp_mask, 0)
        attr.parent_domain = None
        self.assertIsNone(attr.parent_domain)
        with self.assertRaises(TypeError):
            CqInitAttrEx(parent_domain=5)


if __name__ == '__main__':
    unittest.main()
