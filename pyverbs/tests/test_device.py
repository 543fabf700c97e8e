# Devices, contexts and their queries through pyverbs.
import re
import unittest

from pyverbs import device as d
from pyverbs.addr import GID
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from pyverbs.libibverbs_enums import IBV_PORT_ACTIVE

from base import device_name


class DeviceTest(unittest.TestCase):
    def test_device_list(self):
        devs = d.get_device_list()
        self.assertIn(device_name(), [dev.name.decode() for dev in devs])
        for dev in devs:
            self.assertIsInstance(dev.name, bytes)
            self.assertRegex(str(dev), r'^Device \S+, node type \S+, transport type \S+, guid [0-9a-f]+, index -?\d+$')

    def test_queries(self):
        with d.Context(name=device_name()) as ctx:
            self.assertEqual(ctx.name, device_name())
            attr = ctx.query_device()
            self.assertGreaterEqual(attr.phys_port_cnt, 1)
            self.assertGreater(attr.max_qp, 0)
            self.assertRegex(attr.fw_version, r'^\d+\.\d+\.\d+$')
            self.assertIn('FW version            : ', str(attr))
            ex = ctx.query_device_ex()
            self.assertEqual(ex.orig_attr.max_qp, attr.max_qp)
            port = ctx.query_port(1)
            self.assertEqual(port.state, IBV_PORT_ACTIVE)
            self.assertIn('Port state              : Active (4)', str(port))
            gid = ctx.query_gid(1, 0)
            self.assertIsInstance(gid, GID)
            self.assertRegex(gid.gid, r'^([0-9a-f]{4}:){7}[0-9a-f]{4}$')
            self.assertEqual(ctx.query_pkey(1, 0), 0xffff)
            self.assertGreater(ctx.num_comp_vectors, 0)
            self.assertGreaterEqual(ctx.cmd_fd, 0)

    def test_errors(self):
        with self.assertRaisesRegex(PyverbsRDMAError, '^Failed to find device no_such_dev$'):
            d.Context(name='no_such_dev')
        with self.assertRaisesRegex(PyverbsUserError, 'Device name must be provided'):
            d.Context()
        with d.Context(name=device_name()) as ctx:
            with self.assertRaises(PyverbsRDMAError) as cm:
                ctx.query_port(77)
            self.assertEqual(cm.exception.error_code, 22)
            self.assertRegex(str(cm.exception), r'^Failed to query port 77\. Errno: 22, Invalid argument$')
        # after the with block the context is closed: use fails cleanly
        with self.assertRaises(PyverbsUserError):
            ctx.query_device()

    def test_helpers(self):
        self.assertEqual(d.translate_mtu(3), '1024 (3)')
        self.assertEqual(d.width_to_str(2), '4X (2)')
        self.assertEqual(d.port_state_to_str(4), 'Active (4)')
        self.assertEqual(d.guid_format(0x00b0a00003f6ceb8), 'b8ce:f603:00a0:b000')
        self.assertEqual(d.translate_link_layer(2), 'Ethernet')
        self.assertEqual(d.str_from_flags(5, {1: 'A', 2: 'B', 4: 'C'}), '\n  A\n  C\n  ')


if __name__ == '__main__':
    unittest.main()
