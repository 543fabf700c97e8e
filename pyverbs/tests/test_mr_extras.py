# The rest of pyverbs.mr (memory window binds, device memory, registration
# by attributes, provider buffers, dma-bufs, DMA handles), device memory and
# the device module's extras, and addr's GRH.
import ctypes
import errno
import os
import unittest

import pyverbs.device as d
from pyverbs.addr import AH, GID, GRH
from pyverbs.cq import WC
from pyverbs.device import DM, AllocDmAttr, CompCntrCaps, FdArr
from pyverbs.libibverbs_enums import (IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_MW_BIND, IBV_ACCESS_REMOTE_WRITE,
                                      IBV_ACCESS_ZERO_BASED, IBV_SEND_SIGNALED, IBV_WC_GRH)
from pyverbs.mr import (MR, MREx, MWBind, MWBindInfo, DMMR, Buf, BufMR, DMAHandle, DmaBufMR,
                        DmaHandleInitAttr)
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError

from base import device_name

GID_A = 'fe80:0000:0000:0000:0202:c9ff:fe01:0203'
GID_B = 'fe80:0000:0000:0000:0202:c9ff:fe01:0204'


class GRHTest(unittest.TestCase):
    """Device-less: the strings are the reference's, byte for byte."""

    def test_default_str(self):
        zero = '0000:0000:0000:0000:0000:0000:0000:0000'
        self.assertEqual(str(GRH()),
                         f'DGID                  : {zero}\n'
                         f'SGID                  : {zero}\n'
                         'version tclass flow   : 0                   \n'
                         'paylen                : 0                   \n'
                         'next header           : 0                   \n'
                         'hop limit             : 1                   \n')

    def test_fields(self):
        g = GRH(GID(GID_A), GID(GID_B), 0x12345, 100, 27, 64)
        self.assertEqual(str(g),
                         f'DGID                  : {GID_B}\nSGID                  : {GID_A}\n'
                         'version tclass flow   : 74565               \npaylen                : 100                 \n'
                         'next header           : 27                  \nhop limit             : 64                  \n')
        self.assertEqual((g.sgid, g.dgid, g.version_tclass_flow, g.paylen, g.next_hdr, g.hop_limit),
                         (GID_A, GID_B, 0x12345, 100, 27, 64))
        g.sgid = GID_B  # a GID string, as the reference's setter takes
        g.dgid = GID(GID_A)  # or a GID
        g.version_tclass_flow, g.paylen, g.next_hdr, g.hop_limit = 2**32 - 1, 65535, 255, 255
        self.assertEqual((g.sgid, g.dgid, g.version_tclass_flow, g.paylen, g.next_hdr, g.hop_limit),
                         (GID_B, GID_A, 2**32 - 1, 65535, 255, 255))
        with self.assertRaises((OverflowError, TypeError)):
            g.paylen = 65536
        with self.assertRaises(TypeError):
            GRH(sgid='not a GID object')
        with self.assertRaises(PyverbsUserError):
            g.sgid = '1:2'


class AttrObjects(unittest.TestCase):
    """Device-less attribute classes."""

    def test_alloc_dm_attr(self):
        a = AllocDmAttr(100)
        self.assertEqual((a.length, a.log_align_req, a.comp_mask), (100, 0, 0))
        a.length, a.log_align_req, a.comp_mask = 5, 2, 1
        self.assertEqual((a.length, a.log_align_req, a.comp_mask), (5, 2, 1))
        self.assertEqual(AllocDmAttr(64, 3, 0).log_align_req, 3)
        with self.assertRaises((OverflowError, TypeError)):
            AllocDmAttr(-1)

    def test_dmah_init_attr(self):
        a = DmaHandleInitAttr(comp_mask=7, cpu_id=3, ph=2, tph_mem_type=1)
        self.assertEqual((a.comp_mask, a.cpu_id, a.ph, a.tph_mem_type), (7, 3, 2, 1))
        a.ph = 0
        self.assertEqual(str(DmaHandleInitAttr()),
                         'DmaHandleInitAttr:\ncomp_mask             : 0                   \n'
                         'cpu_id                : 0                   \nph                    : 0                   \n'
                         'tph_mem_type          : 0                   \n')

    def test_fd_arr(self):
        f = FdArr([3, 4, 5], 2)
        self.assertEqual((f.arr, f.count), ([3, 4], 2))
        self.assertEqual(str(f), 'Number of fd in arr : 2                   \nFDs in arr          : [3, 4]              \n')
        self.assertEqual((FdArr().arr, FdArr().count), ([], 0))
        with self.assertRaises(IndexError):
            FdArr([1], 2)

    def test_comp_cntr_caps(self):
        c = CompCntrCaps()
        self.assertEqual((c.max_value, c.max_counters, c.supported_qp_attach_ops), (0, 0, 0))


class DeviceTestCase(unittest.TestCase):
    def setUp(self):
        self.ctx = d.Context(name=device_name())
        self.pd = PD(self.ctx)

    def tearDown(self):
        self.ctx.close()

    def unsupported_or(self, make):
        """make(), or None when our library or the device answers EOPNOTSUPP."""
        try:
            return make()
        except PyverbsRDMAError as ex:
            self.assertEqual(ex.error_code, errno.EOPNOTSUPP, str(ex))
            return None


class MWBindTest(DeviceTestCase):
    def test_bind_info(self):
        mr = MR(self.pd, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)
        info = MWBindInfo(mr, mr.buf, 100, IBV_ACCESS_REMOTE_WRITE)
        self.assertEqual((info.addr, info.length, info.mw_access_flags), (mr.buf, 100, IBV_ACCESS_REMOTE_WRITE))
        self.assertEqual(str(info), f'MWBindInfo:\nAddr                  : {mr.buf:<20}\n'
                                    'Length                : 100                 \n'
                                    'MW access flags       : 2                   \n')
        with self.assertRaises(AttributeError):
            info.addr = 5
        bind = MWBind(info, IBV_SEND_SIGNALED, 9)
        self.assertEqual(str(bind), 'MWBind:\nWR id                 : 9                   \n'
                                    'Send flags            : 2                   \n')
        self.assertIn('WR id                 : 0 ', str(MWBind(info, 0)))
        with self.assertRaises(TypeError):
            MWBind(None, 0)
        with self.assertRaises(TypeError):
            MWBindInfo(None, 0, 0, 0)
        mr.close()
        with self.assertRaises(PyverbsUserError):
            MWBindInfo(mr, 0, 0, 0)


class DMTest(DeviceTestCase):
    def test_no_dm(self):
        """The emulated device has no device memory (max_dm_size 0)."""
        if self.ctx.query_device_ex().max_dm_size:
            raise unittest.SkipTest('the device has device memory')
        with self.assertRaisesRegex(PyverbsUserError, "Device doesn't support dm allocation"):
            DM(self.ctx, AllocDmAttr(64))
        with self.assertRaisesRegex(PyverbsUserError, "Device doesn't support dm allocation"):
            DM(self.ctx)
        with self.assertRaises(PyverbsRDMAError) as cm:
            DM(self.ctx, handle=5)
        self.assertTrue(str(cm.exception).startswith('Failed to import DM. Errno: '))
        self.assertNotEqual(cm.exception.error_code, -1)
        with self.assertRaises(TypeError):
            DMMR(self.pd, 64, IBV_ACCESS_LOCAL_WRITE, None, 0)

    def test_dm_traffic(self):
        """Through a DMMR when the device has device memory."""
        if not self.ctx.query_device_ex().max_dm_size:
            raise unittest.SkipTest('the device has no device memory')
        dm = DM(self.ctx, AllocDmAttr(64, 3))
        dm.copy_to_dm(0, b'12345678', 8)
        self.assertEqual(dm.copy_from_dm(0, 8), b'12345678')
        mr = DMMR(self.pd, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED, dm, 0)
        mr.write('abcd', 4)
        self.assertEqual(mr.read(4, 0), b'abcd')
        dm.close()  # its MRs first
        with self.assertRaises(PyverbsUserError):
            mr.read(4, 0)


class OdpTest(DeviceTestCase):
    """On-demand paging: MRs that pin nothing, the implicit MR and
    PD.advise_mr (the emulated ConnectX has page faults; rxe on 6.1 has
    none, so there it skips)."""

    def setUp(self):
        super().setUp()
        if not self.ctx.query_device_ex().odp_caps.general_caps:
            raise unittest.SkipTest('the device has no on-demand paging')

    def test_advise(self):
        from pyverbs.libibverbs_enums import (IBV_ACCESS_ON_DEMAND, _IBV_ADVISE_MR_ADVICE_PREFETCH,
                                              _IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, _IBV_ADVISE_MR_FLAG_FLUSH)
        from pyverbs.wr import SGE
        access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND
        odp = MR(self.pd, 8192, access)
        odp.write(b'paged', 5)
        self.assertEqual(odp.read(5, 0), b'paged')
        sge = SGE(odp.buf, 4096, odp.lkey)
        self.assertEqual(self.pd.advise_mr(_IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, _IBV_ADVISE_MR_FLAG_FLUSH, [sge]), 0)
        self.assertEqual(self.pd.advise_mr(_IBV_ADVISE_MR_ADVICE_PREFETCH, 0, [sge]), 0)
        pinned = MR(self.pd, 4096, IBV_ACCESS_LOCAL_WRITE)
        with self.assertRaises(PyverbsRDMAError) as cm:
            self.pd.advise_mr(_IBV_ADVISE_MR_ADVICE_PREFETCH, _IBV_ADVISE_MR_FLAG_FLUSH,
                              [SGE(pinned.buf, 64, pinned.lkey)])
        self.assertEqual(cm.exception.error_code, errno.ENOENT)
        self.assertTrue(str(cm.exception).startswith('Failed to advise MR'))
        with self.assertRaises(PyverbsRDMAError) as cm:
            self.pd.advise_mr(_IBV_ADVISE_MR_ADVICE_PREFETCH, 0, [])
        self.assertEqual(cm.exception.error_code, errno.EINVAL)
        with self.assertRaises(TypeError):
            self.pd.advise_mr(_IBV_ADVISE_MR_ADVICE_PREFETCH, 0, [sge, 'not an SGE'])

    def test_implicit(self):
        from pyverbs.libibverbs_enums import IBV_ACCESS_ON_DEMAND, IBV_ODP_SUPPORT_IMPLICIT
        if not self.ctx.query_device_ex().odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT:
            raise unittest.SkipTest('no implicit on-demand MR')
        mr = MR(self.pd, 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, implicit=True)
        self.assertEqual(mr.length, 2**64 - 1)
        mr.close()


class RegistrationExtras(DeviceTestCase):
    """Each answers EOPNOTSUPP on our library and emulated device (see the
    man pages); where one works, it is exercised."""

    def test_mrex(self):
        mr = self.unsupported_or(lambda: MREx(self.pd, 4096, IBV_ACCESS_LOCAL_WRITE))
        if mr is None:
            with self.assertRaisesRegex(PyverbsRDMAError, '^Failed to register MR using extended API'):
                MREx(self.pd, 4096, IBV_ACCESS_LOCAL_WRITE, iova=0x10000)
            return
        mr.write(b'hello', 5)
        self.assertEqual(mr.read(5, 0), b'hello')
        self.assertTrue(str(mr).startswith('MREx:\nlkey'))

    def test_dma_handle(self):
        h = self.unsupported_or(lambda: DMAHandle(self.ctx, DmaHandleInitAttr()))
        if h is not None:
            mr = self.unsupported_or(lambda: MREx(self.pd, 4096, IBV_ACCESS_LOCAL_WRITE, dmah=h))
            h.close()  # its MRs first
            if mr is not None:
                with self.assertRaises(PyverbsUserError):
                    mr.lkey
        with self.assertRaises(TypeError):
            DMAHandle(self.ctx, None)

    def test_buf(self):
        buf = self.unsupported_or(lambda: Buf(self.pd, 8192))
        if buf is None:
            return
        self.assertTrue(str(buf).startswith('Buf:\naddr'))
        mr = BufMR(self.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE, offset=4096)
        self.assertEqual(mr.buf, buf.buf + 4096)
        mr.write(b'xy', 2)
        self.assertEqual(mr.read(2, 0), b'xy')
        with self.assertRaises(PyverbsUserError):
            mr.rereg(0)
        buf.close()  # its MRs first
        with self.assertRaises(PyverbsUserError):
            mr.lkey

    def test_dmabuf_mr(self):
        fd = os.memfd_create('not-a-dmabuf')
        try:
            with self.assertRaises(PyverbsRDMAError) as cm:
                DmaBufMR(self.pd, 4096, IBV_ACCESS_LOCAL_WRITE, fd)
            self.assertTrue(str(cm.exception).startswith(
                'Failed to register a dma-buf MR. length: 4096, access flags: 1. Errno: '))
        finally:
            os.close(fd)

    def test_comp_cntr_caps(self):
        caps = self.unsupported_or(self.ctx.query_comp_cntr_caps)
        if caps is not None:
            self.assertIsInstance(caps, CompCntrCaps)


class DeviceExtras(DeviceTestCase):
    def test_rdma_get_devices(self):
        verbs = {(x.name, x.guid, x.node_type) for x in d.get_device_list()}
        cm = {(x.name, x.guid, x.node_type) for x in d.rdma_get_devices()}
        self.assertEqual(cm, verbs)

    def test_ah_from_wc_grh(self):
        """AH from a WC with a GRH: a GRH object or its address."""
        local = self.ctx.query_gid(1, 0)
        grh = GRH(sgid=GID(GID_A), dgid=local)
        wc = WC(wc_flags=IBV_WC_GRH, slid=self.ctx.query_port(1).lid, sl=0)
        AH(self.pd, wc=wc, grh=grh, port_num=1).close()
        raw = ctypes.create_string_buffer(40)
        raw[8:24] = bytes.fromhex(GID_A.replace(':', ''))
        raw[24:40] = bytes.fromhex(str(local).replace(':', ''))
        AH(self.pd, wc=wc, grh=ctypes.addressof(raw), port_num=1).close()
        with self.assertRaises(PyverbsUserError):
            AH(self.pd, wc=wc, port_num=1)


if __name__ == '__main__':
    unittest.main()
