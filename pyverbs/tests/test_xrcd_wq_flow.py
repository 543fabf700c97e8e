# XRC domains, receive WQs and RSS tables, steering flows and their specs,
# and GPU dma-bufs. XRC runs on the emulated ConnectX: domains (private and
# shared by inode), XRC SRQs and an initiator's sends landing in the SRQ
# each names; receive WQs and their tables on its Ethernet ports. Where a
# device has none of these (InfiniBand ports, soft-RoCE) the tests check
# the exact refusal and that a refused object leaves its Context and PD as
# they were; the specs are checked byte for byte against the C layout.
import ctypes
import errno
import os
import tempfile
import unittest

from pyverbs import device as d
from pyverbs.cq import CQ
from pyverbs.dmabuf import DmaBuf
from pyverbs.flow import Flow, FlowAction, FlowAttr
from pyverbs.libibverbs_enums import (IBV_FLOW_ATTR_NORMAL, IBV_FLOW_ATTR_SNIFFER, IBV_FLOW_SPEC_ETH,
                                      IBV_FLOW_SPEC_INNER, IBV_FLOW_SPEC_IPV4, IBV_FLOW_SPEC_IPV4_EXT,
                                      IBV_FLOW_SPEC_IPV6, IBV_FLOW_SPEC_TCP, IBV_FLOW_SPEC_UDP, IBV_QPT_UD,
                                      IBV_RX_HASH_FUNC_TOEPLITZ, IBV_RX_HASH_SRC_IPV4, IBV_WQ_ATTR_STATE, IBV_WQS_RDY,
                                      IBV_WQT_RQ, IBV_XRCD_INIT_ATTR_FD, IBV_XRCD_INIT_ATTR_OFLAGS,
                                      IBV_QP_INIT_ATTR_PD, IBV_QP_INIT_ATTR_XRCD, IBV_QPT_XRC_RECV,
                                      IBV_QPT_XRC_SEND, IBV_SRQ_INIT_ATTR_CQ, IBV_SRQ_INIT_ATTR_PD,
                                      IBV_SRQ_INIT_ATTR_TYPE, IBV_SRQ_INIT_ATTR_XRCD, IBV_SRQT_XRC, IBV_WC_RECV,
                                      IBV_WC_SUCCESS)
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError, PyverbsUserError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqInitAttrEx
from pyverbs.mr import MR
from pyverbs.wr import RecvWR, SendWR, SGE
from pyverbs.spec import U32_MASK, EthSpec, Ipv4ExtSpec, Ipv6Spec, Spec, TcpUdpSpec
from pyverbs.wq import WQ, RwqIndTable, RwqIndTableInitAttr, RxHashConf, WQAttr, WQInitAttr
from pyverbs.xrcd import XRCD, XRCDInitAttr

from base import ALL_ACCESS, device_name, poll, port1_path

XRCD_MASK = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS


class DeviceCase(unittest.TestCase):
    def setUp(self):
        self.ctx = d.Context(name=device_name())
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 16)

    def tearDown(self):
        self.ctx.close()

    def assert_refused(self, make, msg, err=errno.EOPNOTSUPP):
        with self.assertRaises(PyverbsRDMAError) as cm:
            make()
        self.assertEqual(cm.exception.error_code, err)
        self.assertEqual(str(cm.exception), f'{msg}. Errno: {err}, {os.strerror(err)}')

    def assert_still_usable(self):
        """A refused object left the Context and PD open and closable."""
        self.assertFalse(self.ctx.closed)
        self.assertFalse(self.pd.closed)
        CQ(self.ctx, 4).close()
        self.ctx.close()
        self.assertTrue(self.pd.closed and self.cq.closed)


class XRCDTest(DeviceCase):
    def test_init_attr(self):
        attr = XRCDInitAttr(XRCD_MASK, os.O_CREAT, 7)
        self.assertEqual((attr.comp_mask, attr.oflags, attr.fd), (XRCD_MASK, os.O_CREAT, 7))
        attr.fd, attr.oflags, attr.comp_mask = -1, 0, IBV_XRCD_INIT_ATTR_FD
        self.assertEqual((attr.comp_mask, attr.oflags, attr.fd), (IBV_XRCD_INIT_ATTR_FD, 0, -1))
        with self.assertRaises(TypeError):
            XRCDInitAttr()  # all three are required

    def xrc_or_skip(self):
        """A private domain; on a device without XRC (soft-RoCE) the exact
        refusal, the Context and PD left usable, and the test skipped."""
        try:
            return XRCD(self.ctx, XRCDInitAttr(XRCD_MASK, os.O_CREAT, -1))
        except PyverbsRDMAError as ex:
            self.assertEqual(ex.error_code, errno.EOPNOTSUPP)
            self.assertEqual(str(ex), f'Failed to allocate XRCD. Errno: {errno.EOPNOTSUPP}, '
                             f'{os.strerror(errno.EOPNOTSUPP)}')
            self.assert_still_usable()
            raise unittest.SkipTest('the device has no XRC (refused as it should)')

    def test_open_and_close(self):
        # A private domain, and one named by a file's inode, which a second
        # open shares (O_EXCL then refuses); a fresh inode without O_CREAT
        # has none to open.
        self.xrc_or_skip().close()
        with tempfile.NamedTemporaryFile() as f:
            x = XRCD(self.ctx, XRCDInitAttr(XRCD_MASK, os.O_CREAT, f.fileno()))
            x2 = XRCD(self.ctx, XRCDInitAttr(XRCD_MASK, os.O_CREAT, f.fileno()))
            self.assert_refused(lambda: XRCD(self.ctx, XRCDInitAttr(XRCD_MASK, os.O_CREAT | os.O_EXCL, f.fileno())),
                                'Failed to allocate XRCD', errno.EINVAL)
            x2.close()
            x.close()
        with tempfile.NamedTemporaryFile() as f:
            self.assert_refused(lambda: XRCD(self.ctx, XRCDInitAttr(XRCD_MASK, 0, f.fileno())),
                                'Failed to allocate XRCD', errno.EAGAIN)
        # both mask bits are needed
        self.assert_refused(lambda: XRCD(self.ctx, XRCDInitAttr(IBV_XRCD_INIT_ATTR_FD, os.O_CREAT, -1)),
                            'Failed to allocate XRCD', errno.EINVAL)
        self.assert_still_usable()

    def xrc_srq(self, xrcd, max_wr=16):
        attr = SrqInitAttrEx(max_wr=max_wr)
        attr.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ
        attr.srq_type = IBV_SRQT_XRC
        attr.pd = self.pd
        attr.xrcd = xrcd
        attr.cq = self.cq
        return SRQ(self.ctx, attr)

    def test_xrc_send(self):
        """An initiator QP's sends land in the SRQ each one names."""
        xrcd = self.xrc_or_skip()
        srqs = [self.xrc_srq(xrcd), self.xrc_srq(xrcd)]
        nums = [s.get_srq_num() for s in srqs]
        self.assertNotEqual(nums[0], nums[1])
        tgt = QP(self.ctx, QPInitAttrEx(qp_type=IBV_QPT_XRC_RECV, comp_mask=IBV_QP_INIT_ATTR_XRCD, xrcd=xrcd))
        ini = QP(self.ctx, QPInitAttrEx(qp_type=IBV_QPT_XRC_SEND, comp_mask=IBV_QP_INIT_ATTR_PD, pd=self.pd,
                                        scq=self.cq, rcq=self.cq, cap=QPCap(max_send_wr=8, max_recv_wr=0,
                                                                            max_recv_sge=0)))
        path = port1_path(self.ctx, self.ctx.query_port(1))
        for src, dst in ((ini, tgt), (tgt, ini)):
            attr = QPAttr(port_num=1)
            attr.qp_access_flags = ALL_ACCESS
            attr.dest_qp_num = dst.qp_num
            attr.ah_attr = path
            attr.max_dest_rd_atomic = attr.max_rd_atomic = 1
            attr.min_rnr_timer, attr.timeout, attr.retry_cnt, attr.rnr_retry = 12, 14, 7, 7
            src.to_rts(attr)
        mr = MR(self.pd, 4096, ALL_ACCESS)
        for i, srq in enumerate(srqs):
            srq.post_recv(RecvWR(wr_id=100 + i, num_sge=1, sg=[SGE(mr.buf + 2048 + 1024 * i, 1024, mr.lkey)]))
        # to the second SRQ first: the device follows the number, not the order
        for i in (1, 0):
            mr.write(bytes([0x41 + i]) * 64, 64, 64 * i)
            wr = SendWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + 64 * i, 64, mr.lkey)])
            wr.set_qp_type_xrc(nums[i])
            ini.post_send(wr)
        wcs = poll(self.cq, 4)
        recv = {w.wr_id: w for w in wcs if w.opcode == IBV_WC_RECV}
        self.assertEqual(sorted(w.wr_id for w in wcs), [0, 1, 100, 101])
        for i in (0, 1):
            w = recv[100 + i]
            self.assertEqual((w.status, w.byte_len, w.qp_num), (IBV_WC_SUCCESS, 64, tgt.qp_num))
            self.assertEqual(mr.read(64, 2048 + 1024 * i), bytes([0x41 + i]) * 64)
        # closing the domain closes what was opened in it first
        xrcd.close()
        self.assertTrue(tgt.closed and srqs[0].closed and srqs[1].closed)
        self.assertFalse(ini.closed)

    def test_arguments(self):
        attr = XRCDInitAttr(XRCD_MASK, os.O_CREAT, -1)
        with self.assertRaises(TypeError):
            XRCD(None, attr)
        with self.assertRaises(TypeError):
            XRCD(self.ctx, None)
        with self.assertRaises(TypeError):
            XRCD(self.pd, attr)
        self.ctx.close()
        with self.assertRaises(PyverbsUserError):
            XRCD(self.ctx, attr)


class WQTest(DeviceCase):
    def test_init_attr(self):
        attr = WQInitAttr()
        self.assertEqual((attr.wq_type, attr.pd, attr.cq), (IBV_WQT_RQ, None, None))
        attr = WQInitAttr(wq_context=self, wq_pd=self.pd, wq_cq=self.cq, max_wr=8, max_sge=2)
        self.assertIs(attr.pd, self.pd)
        self.assertIs(attr.cq, self.cq)
        pd2 = PD(self.ctx)
        attr.pd = pd2
        attr.wq_type = IBV_WQT_RQ
        self.assertIs(attr.pd, pd2)
        with self.assertRaises(TypeError):
            WQInitAttr(wq_pd=3)
        with self.assertRaises(TypeError):
            WQInitAttr(wq_cq=self.pd)
        with self.assertRaises(TypeError):
            attr.pd = None
        pd2.close()
        with self.assertRaises(PyverbsUserError):
            attr.pd = pd2  # closed

    def test_attr(self):
        attr = WQAttr()
        self.assertEqual((attr.attr_mask, attr.wq_state, attr.curr_wq_state, attr.flags, attr.flags_mask),
                         (0, 0, 0, 0, 0))
        attr = WQAttr(attr_mask=IBV_WQ_ATTR_STATE, wq_state=IBV_WQS_RDY, flags=1, flags_mask=3)
        self.assertEqual((attr.attr_mask, attr.wq_state, attr.flags, attr.flags_mask),
                         (IBV_WQ_ATTR_STATE, IBV_WQS_RDY, 1, 3))
        attr.curr_wq_state = IBV_WQS_RDY
        self.assertEqual(attr.curr_wq_state, IBV_WQS_RDY)

    def test_create(self):
        # Receive WQs exist on an Ethernet port of the emulated ConnectX;
        # an InfiniBand port (and soft-RoCE) refuses them exactly, leaving
        # the Context and PD usable.
        attr = WQInitAttr(wq_pd=self.pd, wq_cq=self.cq, max_wr=8, max_sge=1)
        try:
            wq = WQ(self.ctx, attr)
        except PyverbsRDMAError:
            self.assert_refused(lambda: WQ(self.ctx, attr), 'Failed to create WQ')
            self.assert_still_usable()
            return
        self.assertGreater(wq.wqn, 0)
        wq.modify(WQAttr(attr_mask=IBV_WQ_ATTR_STATE, wq_state=IBV_WQS_RDY))
        mr = MR(self.pd, 64, ALL_ACCESS)
        wq.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
        table = RwqIndTable(self.ctx, RwqIndTableInitAttr(log_ind_tbl_size=1, wqs_list=[wq, wq]))
        table.close()
        wq.close()
        self.assertTrue(wq.closed)

    def test_create_arguments(self):
        with self.assertRaisesRegex(PyverbsUserError, 'needs a PD and a CQ'):
            WQ(self.ctx, WQInitAttr(wq_cq=self.cq))
        with self.assertRaises(TypeError):
            WQ(self.ctx, WQAttr())
        attr = WQInitAttr(wq_pd=self.pd, wq_cq=self.cq)
        self.cq.close()
        with self.assertRaises(PyverbsUserError):
            WQ(self.ctx, attr)  # its CQ was closed since

    def test_ind_table_init_attr(self):
        with self.assertRaisesRegex(PyverbsUserError, r'^Invalid indirection table size\. Log size must be > 0$'):
            RwqIndTableInitAttr(log_ind_tbl_size=0, wqs_list=[])
        with self.assertRaisesRegex(PyverbsUserError,
                                    r'^Requested table size \(2\) is smaller than the number of wqs \(3\)$'):
            RwqIndTableInitAttr(log_ind_tbl_size=1, wqs_list=[1, 2, 3])
        with self.assertRaises(TypeError):
            RwqIndTableInitAttr()  # no list: no length
        with self.assertRaises(TypeError):
            RwqIndTableInitAttr(log_ind_tbl_size=2, wqs_list=[self.pd])
        attr = RwqIndTableInitAttr(log_ind_tbl_size=1, wqs_list=[])
        with self.assertRaisesRegex(PyverbsUserError, 'at least one WQ'):
            RwqIndTable(self.ctx, attr)

    def test_hash_conf(self):
        conf = RxHashConf()
        self.assertEqual((conf.rx_hash_function, conf.rx_hash_key_len, conf.rx_hash_fields_mask, conf.rx_hash_key),
                         (0, 0, 0, []))
        key = list(range(40))
        conf = RxHashConf(rx_hash_function=IBV_RX_HASH_FUNC_TOEPLITZ, rx_hash_key_len=40, rx_hash_key=key,
                          rx_hash_fields_mask=IBV_RX_HASH_SRC_IPV4)
        self.assertEqual((conf.rx_hash_function, conf.rx_hash_key_len, conf.rx_hash_fields_mask, conf.rx_hash_key),
                         (IBV_RX_HASH_FUNC_TOEPLITZ, 40, IBV_RX_HASH_SRC_IPV4, key))
        conf.rx_hash_key = b'\x01\x02\x03'
        self.assertEqual((conf.rx_hash_key, conf.rx_hash_key_len), ([1, 2, 3], 3))
        conf.rx_hash_key_len = 8
        self.assertEqual(conf.rx_hash_key_len, 8)
        with self.assertRaisesRegex(PyverbsUserError, r'^Invalid rx_hash_key_len\. Must be greater then 0$'):
            conf.rx_hash_key_len = 0
        with self.assertRaisesRegex(PyverbsUserError, r'^Length of rx_hash_key not equal to rx_hash_key_len$'):
            RxHashConf(rx_hash_key_len=3, rx_hash_key=[1, 2])
        with self.assertRaises(OverflowError):
            conf.rx_hash_key = [256]


def c_bytes(spec):
    buf = ctypes.create_string_buffer(spec.size)
    spec._copy_data(ctypes.addressof(buf))
    return buf.raw.hex()


class SpecTest(unittest.TestCase):
    # The C structs and the text are those Debian's pyverbs gives for the
    # same specs.
    def test_eth(self):
        s = EthSpec(dst_mac='aa:bb:12:13:14:fe', ether_type=0x800, vlan_tag=3, is_inner=1)
        self.assertEqual((s.size, s.dst_mac, s.dst_mac_mask, s.src_mac, s.src_mac_mask),
                         (40, 'aa:bb:12:13:14:fe', 'ff:ff:ff:ff:ff:ff', '', ''))
        self.assertEqual((s.ether_type, s.ether_type_mask, s.vlan_tag, s.vlan_tag_mask), (0x800, 0xffff, 3, 0xffff))
        self.assertEqual(c_bytes(s), '200100002800aabb121314fe00000000000008000003ffffffffffff000000000000ffffffff0000')
        self.assertEqual(str(s), 'Spec type       : IBV_FLOW_SPEC_INNER IBV_FLOW_SPEC_ETH\n'
                                 'Size            : 40                  \n'
                                 'Src mac         :                                          \n'
                                 'Dst mac         : aa:bb:12:13:14:fe    ff:ff:ff:ff:ff:ff   \n'
                                 'Ether type      : 8                    65535               \n'
                                 'Vlan tag        : 768                  65535               \n')
        s.src_mac = '01:02:03:04:05:06'
        s.src_mac_mask = 'ff:ff:ff:00:00:00'
        s.vlan_tag_mask = 0xfff
        self.assertEqual((s.src_mac, s.src_mac_mask, s.vlan_tag_mask), ('01:02:03:04:05:06', 'ff:ff:ff:00:00:00', 0xfff))
        self.assertEqual(s._set_mac('0a:1b:2c:3c:4d:5e'), [0xa, 0x1b, 0x2c, 0x3c, 0x4d, 0x5e])
        self.assertEqual((EthSpec.MAC_LEN, EthSpec.MAC_MASK, EthSpec.ZERO_MAC), (6, 'ff:ff:ff:ff:ff:ff', [0] * 6))
        with self.assertRaises(IndexError):
            EthSpec(dst_mac='aa:bb')
        with self.assertRaises(ValueError):
            EthSpec(dst_mac='aa:bb:cc:dd:ee:zz')
        with self.assertRaises(OverflowError):
            EthSpec(dst_mac='aa:bb:cc:dd:ee:1ff')
        with self.assertRaises(OverflowError):
            s.ether_type = 0x10000

    def test_ipv4_ext(self):
        s = Ipv4ExtSpec(dst_ip='1.2.3.4', src_ip='5.6.7.8', src_ip_mask='255.255.0.0', proto=6, ttl=3)
        self.assertEqual((s.size, s.dst_ip, s.dst_ip_mask, s.src_ip, s.src_ip_mask),
                         (32, '1.2.3.4', '255.255.255.255', '5.6.7.8', '255.255.0.0'))
        self.assertEqual((s.proto, s.proto_mask, s.tos, s.tos_mask, s.ttl, s.ttl_mask, s.flags, s.flags_mask),
                         (6, 255, 0, 0, 3, 255, 0, 0))
        self.assertEqual(c_bytes(s), '3200000020000000050607080102030406000300ffff0000ffffffffff00ff00')
        self.assertEqual(str(s), 'Spec type       : IBV_FLOW_SPEC_IPV4_EXT\n'
                                 'Size            : 32                  \n'
                                 'Src IP          : 5.6.7.8              255.255.0.0         \n'
                                 'Dst IP          : 1.2.3.4              255.255.255.255     \n'
                                 'Proto           : 6                    255                 \n'
                                 'ToS             : 0                    0                   \n'
                                 'TTL             : 3                    255                 \n'
                                 'Flags           : 0                    0                   \n')
        s.dst_ip = '10.0.0.1'
        s.tos, s.tos_mask = 4, 0xfc
        self.assertEqual((s.dst_ip, s.tos, s.tos_mask), ('10.0.0.1', 4, 0xfc))
        self.assertEqual((Ipv4ExtSpec._str_to_ip('1.2.3.4'), Ipv4ExtSpec._ip_to_str(0x01020304)),
                         (0x01020304, '1.2.3.4'))
        self.assertIsNone(Ipv4ExtSpec._str_to_ip(None))
        self.assertEqual(U32_MASK, 0xffffffff)
        with self.assertRaises(TypeError):
            s.dst_ip = None
        with self.assertRaises(OverflowError):
            s.proto = 256
        with self.assertRaises(OSError):
            Ipv4ExtSpec(dst_ip='1.2.3.4.5')

    def test_tcp_udp(self):
        s = TcpUdpSpec(IBV_FLOW_SPEC_UDP, dst_port=4791)
        self.assertEqual((s.size, s.dst_port, s.dst_port_mask, s.src_port, s.src_port_mask), (16, 4791, 0xffff, 0, 0))
        self.assertEqual(c_bytes(s), '41000000100012b70000ffff00000000')
        self.assertEqual(str(s), 'Spec type       : IBV_FLOW_SPEC_UDP   \n'
                                 'Size            : 16                  \n'
                                 'Src port        : 0                    0                   \n'
                                 'Dst port        : 4791                 65535               \n')
        s = TcpUdpSpec(IBV_FLOW_SPEC_TCP, src_port=1, src_port_mask=0xf, is_inner=True)
        self.assertEqual((s.src_port, s.src_port_mask), (1, 0xf))
        self.assertEqual(Spec.type_to_str(IBV_FLOW_SPEC_TCP | IBV_FLOW_SPEC_INNER),
                         'IBV_FLOW_SPEC_INNER IBV_FLOW_SPEC_TCP')
        with self.assertRaisesRegex(PyverbsError, r'^Spec type must be IBV_FLOW_SPEC_TCP or IBV_FLOW_SPEC_UDP$'):
            TcpUdpSpec(IBV_FLOW_SPEC_ETH)

    def test_ipv6(self):
        s = Ipv6Spec(dst_ip='a0a1::a2a3:a4a5:a6a7:a8a9', src_ip='::1', flow_label=5, next_hdr=6, hop_limit=64)
        self.assertEqual((s.size, s.dst_ip, s.src_ip, s.dst_ip_mask),
                         (88, 'a0a1::a2a3:a4a5:a6a7:a8a9', '::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'))
        self.assertEqual((s.flow_label, s.flow_label_mask, s.next_hdr, s.next_hdr_mask, s.hop_limit, s.hop_limit_mask,
                          s.traffic_class, s.traffic_class_mask), (5, 0xfffff, 6, 255, 64, 255, 0, 0))
        self.assertEqual(c_bytes(s),
                         '310000005800000000000000000000000000000000000001a0a1000000000000a2a3a4a5a6a7a8a900000005'
                         '06004000ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff000fffffff00ff00')
        self.assertEqual(str(s).splitlines()[2:5], [
            'Src IP          : ::1                  ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
            'Dst IP          : a0a1::a2a3:a4a5:a6a7:a8a9 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
            'Flow label      : 5                    1048575             '])
        # No address: nothing to match on (the reference cannot build this one).
        empty = Ipv6Spec()
        self.assertEqual((empty.dst_ip, empty.dst_ip_mask), ('::', '::'))
        empty.traffic_class = 3
        self.assertEqual(empty.traffic_class, 3)
        self.assertEqual((Ipv6Spec.IPV6_MASK, Ipv6Spec.FLOW_LABEL_MASK, Ipv6Spec.EMPTY_IPV6),
                         ('ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 0xfffff, [0] * 16))
        with self.assertRaises(OSError):
            s.src_ip = 'not an address'

    def test_abstract(self):
        with self.assertRaisesRegex(NotImplementedError, 'This class is abstract.'):
            Spec()
        with self.assertRaises(KeyError):
            Spec.type_to_str(IBV_FLOW_SPEC_IPV4)  # no text for plain IPv4
        self.assertEqual(Spec.type_to_str(IBV_FLOW_SPEC_IPV6), 'IBV_FLOW_SPEC_IPV6')
        self.assertEqual(Spec.type_to_str(IBV_FLOW_SPEC_IPV4_EXT), 'IBV_FLOW_SPEC_IPV4_EXT')
        self.assertEqual((Spec._set_val_mask(5, 1), Spec._set_val_mask(5, 1, 2), Spec._set_val_mask(5)),
                         ((1, 5), (1, 2), (0, 0)))


class FlowTest(DeviceCase):
    def setUp(self):
        super().setUp()
        self.qp = QP(self.pd, QPInitAttr(qp_type=IBV_QPT_UD, scq=self.cq, rcq=self.cq, cap=QPCap()))

    def create(self, attr):
        return Flow(self.qp, attr)

    def test_attr(self):
        attr = FlowAttr()
        self.assertEqual((attr.type, attr.priority, attr.num_of_specs, attr.port, attr.flags, attr.specs),
                         (IBV_FLOW_ATTR_NORMAL, 0, 0, 1, 0, []))
        attr = FlowAttr(num_of_specs=2, flow_type=IBV_FLOW_ATTR_SNIFFER, priority=3, port=1, flags=0)
        attr.specs.append(EthSpec())
        attr.specs.append(TcpUdpSpec(IBV_FLOW_SPEC_TCP, dst_port=80))
        self.assertEqual(len(attr.specs), 2)
        attr.priority, attr.port, attr.type = 5, 2, IBV_FLOW_ATTR_NORMAL
        self.assertEqual((attr.priority, attr.port, attr.type), (5, 2, IBV_FLOW_ATTR_NORMAL))
        self.assertIsNotNone(FlowAction())

    def test_create_refused(self):
        # No steering on the emulated ConnectX (raw packet QPs are refused
        # too), whatever the rule.
        attr = FlowAttr(num_of_specs=1)
        attr.specs.append(EthSpec(dst_mac='01:02:03:04:05:06'))
        try:
            self.assert_refused(lambda: self.create(attr), 'Flow creation failed')
        finally:
            self.assertFalse(self.qp.closed)
        self.assert_refused(lambda: self.create(FlowAttr()), 'Flow creation failed')
        self.assert_still_usable()
        self.assertTrue(self.qp.closed)

    def test_spec_count_warning(self):
        attr = FlowAttr(num_of_specs=2)
        attr.specs.append(EthSpec())
        with self.assertLogs('Flow', 'WARNING') as logs:
            with self.assertRaises(PyverbsError):
                self.create(attr)
        self.assertIn('The number of appended specs (1) is not equal to the number of declared specs (2)',
                      logs.output[0])

    def test_arguments(self):
        with self.assertRaises(TypeError):
            Flow(self.pd, FlowAttr())
        with self.assertRaises(TypeError):
            Flow(self.qp, None)
        self.qp.close()
        with self.assertRaises(PyverbsUserError):
            Flow(self.qp, FlowAttr())


class DmaBufTest(unittest.TestCase):
    def test_no_render_node(self):
        # Without /dev/dri/renderD<128 + gpu> (no GPU here) opening the
        # render node fails: ENOENT.
        gpu = 7
        if os.path.exists(f'/dev/dri/renderD{128 + gpu}'):
            self.skipTest('this machine has that render node')
        with self.assertRaises(PyverbsRDMAError) as cm:
            DmaBuf(4096, gpu=gpu)
        self.assertEqual(cm.exception.error_code, errno.ENOENT)
        self.assertTrue(str(cm.exception).startswith(f'Failed to allocate dmabuf of size 4096 on gpu {gpu}. Errno: 2'))


if __name__ == '__main__':
    unittest.main()
