# Completion counters: the attributes, and creation, which the emulated
# ConnectX refuses (no device of our stack has completion counters yet:
# EOPNOTSUPP), with the argument checks and the lifetime around it.
import errno
import os
import unittest

from pyverbs import device as d
from pyverbs import comp_cntr, qp
from pyverbs.comp_cntr import CompCntr, CompCntrInitAttr, QPAttachCompCntrAttr
from pyverbs.libibverbs_enums import IBV_QP_ATTACH_COMP_CNTR_OP_RECV, IBV_QP_ATTACH_COMP_CNTR_OP_SEND
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError

from base import device_name

# enum ibv_comp_cntr_type
TYPE_WRS, TYPE_BYTES = 0, 1


class CompCntrTest(unittest.TestCase):
    def setUp(self):
        self.ctx = d.Context(name=device_name())

    def tearDown(self):
        self.ctx.close()

    def test_init_attr(self):
        attr = CompCntrInitAttr()
        self.assertEqual((attr.comp_mask, attr.cntr_type, attr.flags), (0, TYPE_WRS, 0))
        attr = CompCntrInitAttr(comp_mask=0, cntr_type=TYPE_BYTES, flags=0)
        self.assertEqual(attr.cntr_type, TYPE_BYTES)
        with self.assertRaises(AttributeError):
            attr.flags = 1  # read-only, as in the reference

    def test_attach_attr_is_the_qp_modules(self):
        self.assertIs(comp_cntr.QPAttachCompCntrAttr, qp.QPAttachCompCntrAttr)
        ops = IBV_QP_ATTACH_COMP_CNTR_OP_SEND | IBV_QP_ATTACH_COMP_CNTR_OP_RECV
        self.assertEqual(QPAttachCompCntrAttr(op_mask=ops).op_mask, ops)

    def test_create_refused(self):
        for cntr_type in (TYPE_WRS, TYPE_BYTES):
            with self.assertRaises(PyverbsRDMAError) as cm:
                CompCntr(self.ctx, CompCntrInitAttr(cntr_type=cntr_type))
            self.assertEqual(cm.exception.error_code, errno.EOPNOTSUPP)
            self.assertEqual(str(cm.exception),
                             f'Failed to create comp_cntr. Errno: {errno.EOPNOTSUPP}, {os.strerror(errno.EOPNOTSUPP)}')
        # The device reports no counters either.
        if hasattr(self.ctx, 'query_comp_cntr_caps'):
            with self.assertRaises(PyverbsRDMAError) as cm:
                self.ctx.query_comp_cntr_caps()
            self.assertEqual(cm.exception.error_code, errno.EOPNOTSUPP)
        # A refused counter is no child of the Context: it closes as usual.
        pd = PD(self.ctx)
        self.ctx.close()
        self.assertTrue(pd.closed)

    def test_arguments(self):
        attr = CompCntrInitAttr()
        with self.assertRaises(TypeError):
            CompCntr(None, attr)
        with self.assertRaises(TypeError):
            CompCntr(self.ctx, None)
        with self.assertRaises(TypeError):
            CompCntr(PD(self.ctx), attr)
        self.ctx.close()
        with self.assertRaises(PyverbsUserError):
            CompCntr(self.ctx, attr)


if __name__ == '__main__':
    unittest.main()
