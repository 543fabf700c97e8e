# pyverbs.cmid through a real rdma_cm (the soft-RoCE VM's rxe0): both ends
# of each connection run in this process, the passive one in a thread (the
# calls that wait leave the GIL to the other end). Synchronous RC connections
# (AddrInfo, listen/get_request/accept, connect) with sends, receives and
# RDMA read/write through the CMID's own QP; event-driven connections
# (CMEventChannel, CMEvent) over RC, UD and an external QP; multicast;
# errors with the errno librdmacm gives; what closing a CMID closes.
#
# Skipped where there is no rdma_cm device or no Ethernet port with an IPv4
# address to use (the emulated ConnectX). PYVERBS_CM_ADDR names the address;
# else 10.78.0.1 in the VM (RDMA_VM=1), else the first IPv4 address of the
# netdev behind PYVERBS_DEVICE's (or the first device's) port 1.
import errno
import fcntl
import itertools
import os
import socket
import struct
import threading
import unittest

try:
    import pyverbs.cmid  # noqa: F401
    import pyverbs.cm_enums as ce
    from pyverbs.addr import AH
    from pyverbs.cmid import AddrInfo, CMEvent, CMEventChannel, CMID, ConnParam, JoinMCAttrEx, UDParam
    from pyverbs.cq import CQ
    from pyverbs.device import Context
    from pyverbs.libibverbs_enums import (IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_ATOMIC, IBV_QP_STATE,
                                          IBV_QP_CAP, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPT_RC,
                                          IBV_QPT_UD, IBV_WC_RECV, IBV_WC_RDMA_READ, IBV_WC_RDMA_WRITE,
                                          IBV_WC_SEND, IBV_WC_SUCCESS, IBV_WR_SEND)
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
    from pyverbs.qp import ECE, QP, QPAttr, QPCap, QPInitAttr
    from pyverbs.wr import SGE, RecvWR, SendWR
    HAVE_CMID = True
except ImportError:
    HAVE_CMID = False

GRH = 40
MSG = 1024
ADDR = None
DEVICE = None
# A different port for each connection: the kernel keeps a port bound a
# little while after its id goes.
_ports = itertools.count(20000 + os.getpid() % 20000)


def next_port():
    return str(next(_ports))


def _ipv4_of(netdev):
    """The (primary) IPv4 address of a netdev, or None."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        req = struct.pack('256s', netdev.encode()[:15])
        return socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24])  # SIOCGIFADDR
    except OSError:
        return None
    finally:
        s.close()


def _device():
    name = os.environ.get('PYVERBS_DEVICE')
    if name:
        return name
    try:
        return sorted(os.listdir('/sys/class/infiniband'))[0]
    except (OSError, IndexError):
        return None


def setUpModule():
    global ADDR, DEVICE
    if not HAVE_CMID:
        raise unittest.SkipTest('pyverbs.cmid is not built')
    if not os.path.exists('/dev/infiniband/rdma_cm'):
        raise unittest.SkipTest('no rdma_cm device (/dev/infiniband/rdma_cm)')
    DEVICE = _device()
    if not DEVICE:
        raise unittest.SkipTest('no RDMA device')
    port = '/sys/class/infiniband/%s/ports/1' % DEVICE
    try:
        with open(port + '/link_layer') as f:
            if f.read().strip() != 'Ethernet':
                raise unittest.SkipTest('%s port 1 is not Ethernet' % DEVICE)
    except OSError:
        raise unittest.SkipTest('no port 1 on %s' % DEVICE)
    ADDR = os.environ.get('PYVERBS_CM_ADDR')
    if not ADDR and os.environ.get('RDMA_VM') == '1':
        ADDR = '10.78.0.1'
    if not ADDR:
        try:
            with open(port + '/gid_attrs/ndevs/1') as f:
                ADDR = _ipv4_of(f.read().strip())
        except OSError:
            ADDR = None
    if not ADDR:
        raise unittest.SkipTest('no IPv4 address on the netdev of %s' % DEVICE)


def passive_ai(port, ps=None):
    return AddrInfo(src=ADDR, src_service=port, port_space=ps or ce.RDMA_PS_TCP, flags=ce.RAI_PASSIVE)


def active_ai(port, ps=None):
    return AddrInfo(src=ADDR, dst=ADDR, dst_service=port, port_space=ps or ce.RDMA_PS_TCP)


def init_attr(qp_type=None, **kw):
    qp_type = IBV_QPT_RC if qp_type is None else qp_type
    cap = dict(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    return QPInitAttr(qp_type=qp_type, cap=QPCap(**cap), **kw)


def expect(channel, event_type):
    """The next event of the channel, which must be of event_type (the
    caller acknowledges it)."""
    ev = CMEvent(channel)
    if ev.event_type != event_type:
        got = ev.event_str()
        ev.ack_cm_event()
        raise AssertionError('expected event %d, got %s' % (event_type, got))
    return ev


def ack(channel, event_type):
    expect(channel, event_type).ack_cm_event()


def poll(cq, timeout=10.0):
    import time
    end = time.monotonic() + timeout
    while True:
        n, wcs = cq.poll(1)
        if n:
            return wcs[0]
        if time.monotonic() > end:
            raise AssertionError('no completion after %s s' % timeout)


class Passive(threading.Thread):
    """The passive end, run beside the test's (active) end."""

    def __init__(self, fn, barrier):
        super().__init__(daemon=True)
        self.fn, self.barrier, self.error = fn, barrier, None

    def run(self):
        try:
            self.fn()
        except BaseException as ex:  # handed to the test
            self.error = ex
            self.barrier.abort()


class CMTestCase(unittest.TestCase):
    def both(self, passive, active, parties=2):
        """Runs passive() in a thread and active() here; both must end well."""
        side = Passive(passive, self.bar)
        side.start()
        try:
            active()
        except BaseException:
            self.bar.abort()
            side.join(30)
            if side.error and not isinstance(side.error, threading.BrokenBarrierError):
                raise side.error
            raise
        side.join(60)
        self.assertFalse(side.is_alive(), 'the passive side did not end')
        if side.error:
            raise side.error

    def setUp(self):
        self.bar = threading.Barrier(2, timeout=60)


class SyncTest(CMTestCase):
    """Synchronous endpoints: rdma_create_ep from an AddrInfo."""

    def test_send_recv(self):
        port = next_port()
        got = {}

        def passive():
            listen = CMID(passive_ai(port), qp_init_attr=init_attr())
            self.assertIsNone(listen.context)
            self.assertIsNone(listen.pd)
            self.assertIsNone(listen.qpn)
            listen.listen()
            self.bar.wait()
            child = listen.get_request()
            got['child'] = child
            # the new connection's device: the listener's now too
            self.assertIsInstance(child.context, Context)
            self.assertIsInstance(child.pd, PD)
            self.assertIs(listen.context, child.context)
            self.assertIs(listen.pd, child.pd)
            self.assertIsNone(child.event_channel)
            self.assertEqual(child.dev_name, DEVICE)
            self.assertIsInstance(child.qpn, int)
            child.accept()
            mr = child.reg_msgs(MSG)
            child.post_recv(mr)
            wc = child.get_recv_comp()
            got['recv'] = (wc.status, wc.opcode, wc.byte_len, mr.read(MSG, 0))
            mr.write(b's' * MSG, MSG)
            child.post_send(mr)
            wc = child.get_send_comp()
            got['send'] = (wc.status, wc.opcode)
            self.bar.wait()
            child.disconnect()
            child.close()
            listen.close()

        def active():
            cmid = CMID(active_ai(port), qp_init_attr=init_attr())
            self.assertIsInstance(cmid.context, Context)
            self.assertEqual(cmid.context.name, DEVICE)
            self.assertIsInstance(cmid.pd, PD)
            self.assertIs(cmid.pd, cmid.pd)
            self.assertEqual(cmid.dev_name, DEVICE)
            self.assertEqual(cmid.port_num, 1)
            self.bar.wait()
            cmid.connect()
            mr = cmid.reg_msgs(MSG)
            reply = cmid.reg_msgs(MSG)
            cmid.post_recv(reply)
            mr.write(b'c' * MSG, MSG)
            cmid.post_send(mr)
            wc = cmid.get_send_comp()
            self.assertEqual((wc.status, wc.opcode, wc.byte_len), (IBV_WC_SUCCESS, IBV_WC_SEND, MSG))
            wc = cmid.get_recv_comp()
            self.assertEqual((wc.status, wc.opcode, wc.byte_len), (IBV_WC_SUCCESS, IBV_WC_RECV, MSG))
            self.assertEqual(reply.read(MSG, 0), b's' * MSG)
            attr, init = cmid.query_qp(IBV_QP_STATE | IBV_QP_CAP)
            self.assertEqual(attr.qp_state, IBV_QPS_RTS)
            self.assertEqual(init.qp_type, IBV_QPT_RC)
            self.assertGreaterEqual(init.max_send_wr, 4)
            self.bar.wait()
            cmid.disconnect()
            cmid.close()

        self.both(passive, active)
        self.assertEqual(got['recv'], (IBV_WC_SUCCESS, IBV_WC_RECV, MSG, b'c' * MSG))
        self.assertEqual(got['send'], (IBV_WC_SUCCESS, IBV_WC_SEND))

    def test_lengths(self):
        """post_send/post_recv of part of an MR."""
        port = next_port()

        def passive():
            listen = CMID(passive_ai(port), qp_init_attr=init_attr())
            listen.listen()
            self.bar.wait()
            child = listen.get_request()
            child.accept()
            mr = child.reg_msgs(64)
            child.post_recv(mr, 16)
            self.bar.wait()
            wc = child.get_recv_comp()
            self.assertEqual(wc.byte_len, 10)
            self.assertEqual(mr.read(16, 0), b'0123456789' + bytes(6))
            self.bar.wait()
            listen.close()

        def active():
            cmid = CMID(active_ai(port), qp_init_attr=init_attr())
            self.bar.wait()
            cmid.connect()
            mr = cmid.reg_msgs(64)
            mr.write(b'0123456789abcdef', 16)
            self.bar.wait()
            cmid.post_send(mr, length=10)
            self.assertEqual(cmid.get_send_comp().status, IBV_WC_SUCCESS)
            self.bar.wait()
            cmid.close()

        self.both(passive, active)

    def test_rdma_write_read(self):
        port = next_port()
        keys = {}

        def passive():
            listen = CMID(passive_ai(port), qp_init_attr=init_attr())
            listen.listen()
            self.bar.wait()
            child = listen.get_request()
            child.accept()
            wmr = child.reg_write(MSG)
            rmr = child.reg_read(MSG)
            rmr.write(b'r' * MSG, MSG)
            keys.update(w=(wmr.buf, wmr.rkey), r=(rmr.buf, rmr.rkey))
            self.bar.wait()  # keys given
            self.bar.wait()  # written and read
            keys['written'] = wmr.read(MSG, 0)
            listen.close()

        def active():
            cmid = CMID(active_ai(port), qp_init_attr=init_attr())
            self.bar.wait()
            cmid.connect()
            mr = cmid.reg_msgs(MSG)
            self.bar.wait()
            mr.write(b'w' * MSG, MSG)
            cmid.post_write(mr, MSG, keys['w'][0], keys['w'][1], flags=0x2)  # IBV_SEND_SIGNALED
            wc = cmid.get_send_comp()
            self.assertEqual((wc.status, wc.opcode), (IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE))
            mr.write(bytes(MSG), MSG)
            cmid.post_read(mr, MSG, keys['r'][0], keys['r'][1], flags=0x2)
            wc = cmid.get_send_comp()
            self.assertEqual((wc.status, wc.opcode), (IBV_WC_SUCCESS, IBV_WC_RDMA_READ))
            self.assertEqual(mr.read(MSG, 0), b'r' * MSG)
            self.bar.wait()
            cmid.close()

        self.both(passive, active)
        self.assertEqual(keys['written'], b'w' * MSG)


class AsyncTest(CMTestCase):
    """Event-driven ids: a CMEventChannel, and CMEvent for every step."""

    def test_rc(self):
        port = next_port()
        seen = {}

        def passive():
            ch = CMEventChannel()
            listen = CMID(ch)
            self.assertIs(listen.event_channel, ch)
            self.assertIsNone(listen.context)
            listen.bind_addr(passive_ai(port))
            self.assertIsInstance(listen.context, Context)
            self.assertIsInstance(listen.pd, PD)
            listen.listen()
            self.bar.wait()
            ev = expect(ch, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
            seen['request'] = (ev.event_str(), ev.private_data)
            child = CMID(creator=ev, listen_id=listen)
            self.assertIs(child.context, listen.context)
            self.assertIs(child.pd, listen.pd)
            self.assertIs(child.event_channel, ch)
            ev.ack_cm_event()
            self.assertEqual(ev.event_str(), '')
            child.create_qp(init_attr())
            mr = child.reg_msgs(MSG)
            child.post_recv(mr)
            param = ConnParam(data_len=8)
            param.set_private_data(b'srv')
            child.accept(param)
            ack(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
            wc = child.get_recv_comp()
            seen['recv'] = (wc.status, mr.read(MSG, 0))
            mr.write(b's' * MSG, MSG)
            child.post_send(mr)
            child.get_send_comp()
            ack(ch, ce.RDMA_CM_EVENT_DISCONNECTED)
            ch.close()
            self.assertTrue(child.closed)
            self.assertTrue(listen.closed)

        def active():
            ch = CMEventChannel()
            cmid = CMID(ch, port_space=ce.RDMA_PS_TCP)
            cmid.resolve_addr(active_ai(port))
            ev = expect(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
            self.assertEqual(ev.event_str(), 'RDMA_CM_EVENT_ADDR_RESOLVED')
            self.assertEqual(ev.private_data, b'')
            ev.ack_cm_event()
            self.bar.wait()
            cmid.resolve_route()
            self.assertIsInstance(cmid.context, Context)
            ack(ch, ce.RDMA_CM_EVENT_ROUTE_RESOLVED)
            cmid.create_qp(init_attr())
            reply = cmid.reg_msgs(MSG)
            cmid.post_recv(reply)
            param = ConnParam(data_len=10)
            param.set_private_data(b'hello')
            cmid.connect(param)
            ev = expect(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
            seen['established'] = ev.private_data
            ev.ack_cm_event()
            mr = cmid.reg_msgs(MSG)
            mr.write(b'c' * MSG, MSG)
            cmid.post_send(mr)
            self.assertEqual(cmid.get_send_comp().status, IBV_WC_SUCCESS)
            self.assertEqual(cmid.get_recv_comp().status, IBV_WC_SUCCESS)
            self.assertEqual(reply.read(MSG, 0), b's' * MSG)
            cmid.disconnect()
            ack(ch, ce.RDMA_CM_EVENT_DISCONNECTED)
            cmid.close()
            ch.close()

        self.both(passive, active)
        name, data = seen['request']
        self.assertEqual(name, 'RDMA_CM_EVENT_CONNECT_REQUEST')
        # (the kernel pads a REQ's private data to its full 56 bytes)
        self.assertEqual(data, b'hello' + bytes(51))
        self.assertTrue(seen['established'].startswith(b'srv\0'))
        self.assertEqual(seen['recv'], (IBV_WC_SUCCESS, b'c' * MSG))

    def test_ud(self):
        port = next_port()
        ps = ce.RDMA_PS_UDP
        seen = {}

        def passive():
            ch = CMEventChannel()
            listen = CMID(ch, port_space=ps)
            listen.bind_addr(passive_ai(port, ps))
            listen.listen()
            self.bar.wait()
            ev = expect(ch, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
            child = CMID(creator=ev, listen_id=listen)
            ev.ack_cm_event()
            child.create_qp(init_attr(IBV_QPT_UD))
            mr = child.reg_msgs(GRH + MSG)
            child.post_recv(mr)
            child.accept(ConnParam(qp_num=child.qpn))
            wc = child.get_recv_comp()
            seen['recv'] = (wc.status, wc.byte_len, mr.read(MSG, GRH))
            ah = AH(child.pd, wc=wc, port_num=1, grh=mr.buf)
            out = child.reg_msgs(MSG)
            out.write(b'u' * MSG, MSG)
            child.post_ud_send(out, ah, rqpn=wc.src_qp, length=MSG)
            self.assertEqual(child.get_send_comp().status, IBV_WC_SUCCESS)
            self.bar.wait()
            ch.close()

        def active():
            ch = CMEventChannel()
            cmid = CMID(ch, port_space=ps)
            self.bar.wait()
            cmid.resolve_addr(active_ai(port, ps))
            ack(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
            cmid.resolve_route()
            ack(ch, ce.RDMA_CM_EVENT_ROUTE_RESOLVED)
            cmid.create_qp(init_attr(IBV_QPT_UD))
            reply = cmid.reg_msgs(GRH + MSG)
            cmid.post_recv(reply)
            cmid.connect(ConnParam(qp_num=cmid.qpn))
            ev = expect(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
            ud = UDParam(ev)
            ev.ack_cm_event()
            self.assertEqual(ud.qkey, 0x01234567)  # RDMA_UDP_QKEY
            self.assertIsInstance(ud.qp_num, int)
            ah = AH(cmid.pd, attr=ud.ah_attr)
            mr = cmid.reg_msgs(MSG)
            mr.write(b'v' * MSG, MSG)
            cmid.post_ud_send(mr, ah, rqpn=ud.qp_num, length=MSG)
            self.assertEqual(cmid.get_send_comp().status, IBV_WC_SUCCESS)
            wc = cmid.get_recv_comp()
            self.assertEqual((wc.status, wc.byte_len), (IBV_WC_SUCCESS, GRH + MSG))
            self.assertEqual(reply.read(MSG, GRH), b'u' * MSG)
            self.bar.wait()
            ch.close()

        self.both(passive, active)
        self.assertEqual(seen['recv'], (IBV_WC_SUCCESS, GRH + MSG, b'v' * MSG))

    def test_external_qp(self):
        """A QP of our own on the CMID's PD and Context, moved through the
        states with init_qp_attr; establish() completes the connection."""
        port = next_port()
        seen = {}

        def own_qp(cmid):
            cq = CQ(cmid.context, 8)
            qp = QP(cmid.pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
            mr = MR(cmid.pd, MSG, IBV_ACCESS_LOCAL_WRITE)
            return cq, qp, mr

        def to_rts(cmid, qp):
            for state in (IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS):
                attr, mask = cmid.init_qp_attr(state)
                self.assertEqual(attr.qp_state, state)
                qp.modify(attr, mask)

        def passive():
            ch = CMEventChannel()
            listen = CMID(ch)
            listen.bind_addr(passive_ai(port))
            listen.listen()
            self.bar.wait()
            ev = expect(ch, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
            child = CMID(creator=ev, listen_id=listen)
            ev.ack_cm_event()
            cq, qp, mr = own_qp(child)
            child.accept(ConnParam(qp_num=qp.qp_num))
            to_rts(child, qp)
            qp.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mr.buf, MSG, mr.lkey)]))
            ack(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
            self.bar.wait()
            wc = poll(cq)
            seen['recv'] = (wc.status, wc.wr_id, mr.read(MSG, 0))
            self.bar.wait()
            ch.close()
            self.assertTrue(qp.closed and cq.closed and mr.closed)

        def active():
            ch = CMEventChannel()
            cmid = CMID(ch)
            self.bar.wait()
            cmid.resolve_addr(active_ai(port))
            ack(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
            cmid.resolve_route()
            ack(ch, ce.RDMA_CM_EVENT_ROUTE_RESOLVED)
            cq, qp, mr = own_qp(cmid)
            self.assertIsNone(cmid.qpn)
            cmid.connect(ConnParam(qp_num=qp.qp_num))
            ack(ch, ce.RDMA_CM_EVENT_CONNECT_RESPONSE)
            to_rts(cmid, qp)
            cmid.establish()
            self.bar.wait()
            mr.write(b'x' * MSG, MSG)
            qp.post_send(SendWR(wr_id=2, opcode=IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, MSG, mr.lkey)]))
            wc = poll(cq)
            self.assertEqual((wc.status, wc.wr_id), (IBV_WC_SUCCESS, 2))
            self.bar.wait()
            ch.close()

        self.both(passive, active)
        self.assertEqual(seen['recv'], (IBV_WC_SUCCESS, 1, b'x' * MSG))

    def test_reject(self):
        port = next_port()

        def passive():
            ch = CMEventChannel()
            listen = CMID(ch)
            listen.bind_addr(passive_ai(port))
            listen.listen()
            self.bar.wait()
            ev = expect(ch, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
            child = CMID(creator=ev, listen_id=listen)
            ev.ack_cm_event()
            child.reject(b'no', 2)
            self.bar.wait()
            ch.close()

        def active():
            ch = CMEventChannel()
            cmid = CMID(ch)
            self.bar.wait()
            cmid.resolve_addr(active_ai(port))
            ack(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
            cmid.resolve_route()
            ack(ch, ce.RDMA_CM_EVENT_ROUTE_RESOLVED)
            cmid.create_qp(init_attr())
            cmid.connect()
            ev = expect(ch, ce.RDMA_CM_EVENT_REJECTED)
            self.assertTrue(ev.private_data.startswith(b'no'))
            ev.close()
            self.bar.wait()
            ch.close()

        self.both(passive, active)

    def test_multicast(self):
        """A UD CMID joins a group (event MULTICAST_JOIN with the group's
        UDParam: QP number 0xffffff) and leaves it."""
        ps = ce.RDMA_PS_UDP
        group = '239.1.2.3'
        for extended in (False, True):
            with self.subTest(extended=extended):
                ch = CMEventChannel()
                cmid = CMID(ch, port_space=ps)
                cmid.bind_addr(passive_ai(next_port(), ps))
                cmid.resolve_addr(AddrInfo(src=ADDR, dst=group, port_space=ps))
                ack(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
                cmid.create_qp(init_attr(IBV_QPT_UD))
                mc = AddrInfo(src=group, port_space=ps, flags=ce.RAI_PASSIVE)
                if extended:
                    attr = JoinMCAttrEx(mc, comp_mask=ce.RDMA_CM_JOIN_MC_ATTR_ADDRESS |
                                        ce.RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
                                        join_flags=ce.RDMA_MC_JOIN_FLAG_FULLMEMBER)
                    self.assertEqual(attr.join_flags, ce.RDMA_MC_JOIN_FLAG_FULLMEMBER)
                    cmid.join_multicast(mc_attr=attr)
                else:
                    cmid.join_multicast(addr=mc)
                ev = expect(ch, ce.RDMA_CM_EVENT_MULTICAST_JOIN)
                ud = UDParam(ev)
                ev.ack_cm_event()
                self.assertEqual(ud.qp_num, 0xffffff)
                self.assertEqual(ud.ah_attr.is_global, 1)
                cmid.leave_multicast(mc)
                ch.close()


class LifetimeTest(unittest.TestCase):
    """What closing a CMID (or its channel, or a PD it uses) closes."""

    def bound(self, ch, ps=None):
        cmid = CMID(ch, port_space=ps or ce.RDMA_PS_TCP)
        cmid.bind_addr(passive_ai(next_port(), ps))
        return cmid

    def test_close_closes_what_was_made_from_it(self):
        ch = CMEventChannel()
        cmid = self.bound(ch)
        ctx, pd = cmid.context, cmid.pd
        self.assertIs(cmid.pd.ctx, ctx)
        msgs = cmid.reg_msgs(64)
        pd_mr = MR(pd, 64, IBV_ACCESS_LOCAL_WRITE)
        cq = CQ(ctx, 4)
        cmid.create_qp(init_attr())
        self.assertIsInstance(cmid.qpn, int)
        cmid.close()
        for obj in (msgs, pd_mr, cq, pd, ctx):
            self.assertTrue(obj.closed, obj)
        with self.assertRaises(PyverbsUserError):
            msgs.lkey
        with self.assertRaises(PyverbsUserError):
            ctx.query_port(1)
        with self.assertRaises(PyverbsUserError):
            cmid.listen()
        with self.assertRaises(PyverbsUserError):
            cmid.qpn
        cmid.close()  # twice: nothing
        self.assertIs(cmid.context, ctx)  # (as the reference keeps it)
        ch.close()

    def test_channel_close_closes_its_cmids(self):
        ch = CMEventChannel()
        a, b = CMID(ch), self.bound(ch)
        ch.close()
        self.assertTrue(a.closed and b.closed)
        with self.assertRaises(PyverbsUserError):
            CMID(ch)
        with self.assertRaises(PyverbsUserError):
            CMEvent(ch)
        ch.close()

    def test_unacknowledged_event(self):
        """A CMID closes with an event of it unacknowledged (acknowledged
        then, instead of waiting for it forever)."""
        ch = CMEventChannel()
        cmid = CMID(ch)
        cmid.resolve_addr(active_ai(next_port()))
        ev = CMEvent(ch)
        self.assertEqual(ev.event_type, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
        cmid.close()
        self.assertEqual(ev.event_str(), '')
        with self.assertRaises(PyverbsUserError):
            ev.event_type
        ev.close()
        ch.close()

    def test_views(self):
        ch = CMEventChannel()
        cmid = self.bound(ch)
        self.assertEqual(cmid.dev_name, DEVICE)
        self.assertEqual(cmid.port_num, 1)
        ctx = Context(cmid=cmid)
        self.assertIs(cmid.context, ctx)
        self.assertEqual(ctx.name, DEVICE)
        pd = PD(cmid)
        self.assertIs(cmid.pd, pd)
        self.assertIs(pd.ctx, ctx)
        # closing the views leaves librdmacm's device and PD alone
        pd.close()
        ctx.close()
        PD(cmid)
        mr = cmid.reg_msgs(64)
        self.assertEqual(mr.length, 64)
        self.assertEqual(cmid.reg_read(8).length, 8)
        self.assertEqual(cmid.reg_write(16).length, 16)
        cmid.close()
        self.assertTrue(mr.closed)
        ch.close()

    def test_user_pd(self):
        """CMID(ai, pd=pd) uses the caller's PD (one of librdmacm's device
        context, as librdmacm requires); closing that PD closes the CMID
        first."""
        ch = CMEventChannel()
        anchor = self.bound(ch)
        pd = PD(anchor.context)
        cmid = CMID(active_ai(next_port()), qp_init_attr=init_attr(), pd=pd)
        self.assertIs(cmid.pd, pd)
        self.assertIsInstance(cmid.qpn, int)
        mr = cmid.reg_msgs(32)
        pd.close()
        self.assertTrue(cmid.closed and mr.closed)
        # a PD of another context of the device: librdmacm refuses it
        ctx = Context(name=DEVICE)
        with self.assertRaises(PyverbsRDMAError) as cm:
            CMID(active_ai(next_port()), qp_init_attr=init_attr(), pd=PD(ctx))
        self.assertEqual(cm.exception.error_code, errno.EINVAL)
        ctx.close()
        ch.close()

    def test_closed_addr_info(self):
        ai = active_ai(next_port())
        ai.close()
        ai.close()
        with self.assertRaises(PyverbsUserError):
            CMID(ai)

    def test_empty_cmid(self):
        cmid = CMID()
        self.assertIsNone(cmid.context)
        self.assertIsNone(cmid.pd)
        self.assertIsNone(cmid.event_channel)
        with self.assertRaises(PyverbsUserError):
            cmid.listen()
        with self.assertRaises(PyverbsUserError):
            cmid.reg_msgs(8)
        cmid.close()


def no_route_to(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((addr, 9))
        return False
    except OSError as ex:
        return ex.errno == errno.ENETUNREACH
    finally:
        s.close()


class ErrorTest(unittest.TestCase):
    """Failures, with the errno librdmacm gives (the same as with Debian's
    pyverbs and librdmacm, where that one does not crash)."""
    UNREACHABLE = '10.99.0.1'

    def assertErrno(self, err, fn, *args, msg=None, **kw):
        with self.assertRaises(PyverbsRDMAError) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.error_code, err, str(cm.exception))
        if msg:
            self.assertTrue(str(cm.exception).startswith(msg), str(cm.exception))
        return cm.exception

    def test_no_route(self):
        if not no_route_to(self.UNREACHABLE):
            self.skipTest('this host has a route to ' + self.UNREACHABLE)
        ai = AddrInfo(dst=self.UNREACHABLE, dst_service=next_port(), port_space=ce.RDMA_PS_TCP)
        self.assertErrno(errno.ENETUNREACH, CMID, ai, msg='Failed to create CM ID. Errno: 101, ')
        ch = CMEventChannel()
        self.assertErrno(errno.ENETUNREACH, CMID(ch).resolve_addr, ai, 500, msg='Failed to Resolve Address')
        ch.close()

    def test_not_local_address(self):
        ai = AddrInfo(src=self.UNREACHABLE, src_service=next_port(), port_space=ce.RDMA_PS_TCP,
                      flags=ce.RAI_PASSIVE)
        self.assertErrno(errno.EADDRNOTAVAIL, CMID, ai, msg='Failed to create CM ID')

    def test_unbound(self):
        ch = CMEventChannel()
        cmid = CMID(ch)
        self.assertErrno(errno.EINVAL, cmid.connect, msg='Failed to Connect')
        self.assertErrno(errno.EINVAL, cmid.disconnect, msg='Failed to Disconnect')
        self.assertErrno(errno.EINVAL, cmid.reject, msg='Failed to Reject Connection')
        self.assertErrno(errno.EINVAL, cmid.establish, msg='Failed to Complete an active connection request')
        self.assertErrno(errno.EINVAL, cmid.init_qp_attr, IBV_QPS_INIT, msg='Failed to get QP attributes')
        self.assertErrno(errno.EINVAL, cmid.create_qp, init_attr(), msg='Failed to Create QP')
        self.assertEqual(cmid.port_num, 0)
        self.assertIsNone(cmid.qpn)
        self.assertIsNone(cmid.context)
        cmid.set_option(ce.RDMA_OPTION_ID, ce.RDMA_OPTION_ID_ACK_TIMEOUT, 14, 1)
        self.assertIsInstance(cmid.get_remote_ece(), ECE)
        cmid.listen()  # (the kernel binds it to any address)
        ch.close()

    def test_bound(self):
        ch = CMEventChannel()
        cmid = CMID(ch)
        cmid.bind_addr(passive_ai(next_port()))
        cmid.listen()
        self.assertErrno(errno.EINVAL, cmid.listen, msg='Listen Failed')
        cmid.set_local_ece(ECE(1, 2, 0))
        self.assertErrno(errno.EINVAL, cmid.reg_msgs, 0, msg='Failed to register a MR. length: 0, access flags: 1')
        with self.assertRaises(PyverbsRDMAError) as cm:
            MR(cmid, 16, IBV_ACCESS_REMOTE_ATOMIC)
        self.assertTrue(str(cm.exception).startswith('Failed to register a MR. length: 16, access flags: 8'))
        ch.close()

    def test_qp_before_connection(self):
        ch = CMEventChannel()
        cmid = CMID(ch)
        cmid.bind_addr(passive_ai(next_port()))
        cmid.create_qp(init_attr())
        attr, init = cmid.query_qp(IBV_QP_STATE)
        self.assertIsInstance(attr, QPAttr)
        self.assertIsInstance(init, QPInitAttr)
        self.assertEqual(attr.qp_state, IBV_QPS_INIT)
        attr, mask = cmid.init_qp_attr(IBV_QPS_INIT)
        self.assertEqual(mask, 57)  # STATE | ACCESS_FLAGS | PKEY_INDEX | PORT
        self.assertEqual(attr.port_num, 1)
        # (before a connection the kernel answers any state with INIT's)
        self.assertEqual(cmid.init_qp_attr(IBV_QPS_RTR)[1], 57)
        self.assertErrno(errno.EINVAL, cmid.post_send, cmid.reg_msgs(16), msg='Failed to Post Send')
        cmid.set_option(ce.RDMA_OPTION_ID, ce.RDMA_OPTION_ID_ACK_TIMEOUT, 14, 1)
        ch.close()

    def test_user_errors(self):
        ch = CMEventChannel()
        cmid = CMID(ch)
        with self.assertRaisesRegex(PyverbsUserError, 'Currently only RDMA_OPTION_ID_ACK_TIMEOUT'):
            cmid.set_option(ce.RDMA_OPTION_ID, 0, 1, 1)  # RDMA_OPTION_ID_TOS
        with self.assertRaisesRegex(PyverbsUserError, 'Join to multicast must have AddrInfo or JoinMCAttrEx'):
            cmid.join_multicast()
        with self.assertRaisesRegex(PyverbsUserError, 'listen ID not provided'):
            ev = None
            cmid.resolve_addr(active_ai(next_port()))
            ev = CMEvent(ch)
            CMID(ev)
        # an event of an id that has its CMID makes no second one
        with self.assertRaisesRegex(PyverbsUserError, "already has its CMID"):
            CMID(ev, listen_id=cmid)
        ev.ack_cm_event()
        with self.assertRaisesRegex(PyverbsRDMAError, r"Cannot create CM ID from <class 'int'>"):
            CMID(5)
        with self.assertRaisesRegex(TypeError, r"Argument 'lai' has incorrect type"):
            cmid.bind_addr(None)
        with self.assertRaisesRegex(TypeError, 'expected bytes, int found'):
            AddrInfo(src=5)
        ch.close()

    def test_conn_param(self):
        p = ConnParam(qp_num=7)
        self.assertEqual(p.qpn, 7)
        p.qpn = 9
        self.assertEqual(str(p), 'Connection parameters: \nresponder resources: 1   \ninitiator depth: 1   \n'
                         'flow control: 0   \nretry count: 5   \nrnr retry count: 5   \nsrq : 0   \nqp number: 9   \n')
        self.assertEqual(p.private_data, b'')
        p.set_private_data(b'abc')
        self.assertEqual(p.private_data, b'')  # no room (data_len 0)
        p = ConnParam(data_len=4)
        p.set_private_data(b'abcdefgh')
        self.assertEqual(p.private_data, b'abcd')
        p.set_private_data([1, 0, 2])
        self.assertEqual(p.private_data, b'\x01\x00\x02')
        with self.assertRaises(OverflowError):
            ConnParam(resources=256)
        with self.assertRaises(ValueError):
            ConnParam(data_len=-1)


if __name__ == '__main__':
    unittest.main()
