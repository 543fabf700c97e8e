# The same script through Debian's pyverbs and through ours on one emulated
# device (compare.sh): what it prints must be identical. It prints the
# __str__ of every class both packages have, the answers of the queries and
# the messages of the errors, one item per block.
import re
import sys

from pyverbs import device as d
from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ, WC, CompChannel
from pyverbs.enums import (IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_QPT_RC, IBV_QPT_UD, IBV_WR_SEND,
                           IBV_WC_RECV)
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import RecvWR, SendWR, SGE


def show(title, value):
    print(f'--- {title}')
    print(value)


def error(title, fn):
    try:
        fn()
    except PyverbsError as e:
        show(title, f'{type(e).__name__}: {e}')
    else:
        show(title, 'no error')


def masked(text):
    """Pointers and kernel handles differ from run to run."""
    text = re.sub(r'(buf\s*: )\d+ *', r'\1<addr>', text)
    text = re.sub(r'((?:lkey|rkey)\s*: )\d+ *', r'\1<key>', text)
    text = re.sub(r'(Key\s*: )0x[0-9a-f]+ *', r'\1<key>', text)
    return re.sub(r'(Address\s*: )0x[0-9a-f]+ *', r'\1<addr>', text)


for dev in d.get_device_list():
    show('device', dev)
ctx = d.Context(name=sys.argv[1] if len(sys.argv) > 1 else 'mlx5_0')
attr = ctx.query_device()
show('query_device', attr)
ex = ctx.query_device_ex()
show('odp_caps', ex.odp_caps)
for name in ('completion_timestamp_mask', 'hca_core_clock', 'device_cap_flags_ex', 'max_dm_size', 'raw_packet_caps',
             'max_wq_type_rq', 'phys_port_cnt_ex'):
    show(f'ex.{name}', getattr(ex, name))
for cap, fields in (('tso_caps', ('max_tso', 'supported_qpts')),
                    ('rss_caps', ('supported_qpts', 'max_rwq_indirection_tables', 'rx_hash_fields_mask',
                                  'rx_hash_function', 'max_rwq_indirection_table_size')),
                    ('cq_mod_caps', ('max_cq_count', 'max_cq_period')),
                    ('packet_pacing_caps', ('qp_rate_limit_min', 'qp_rate_limit_max', 'supported_qpts'))):
    show(f'ex.{cap}', [getattr(getattr(ex, cap), f) for f in fields])
for port in range(1, attr.phys_port_cnt + 1):
    show(f'port {port}', ctx.query_port(port))
    show(f'gid {port}/0', ctx.query_gid(port, 0))
    show(f'pkey {port}/0', ctx.query_pkey(port, 0))
    show(f'gid type {port}/0', ctx.query_gid_type(port, 0))
    show(f'gid ex {port}/0', ctx.query_gid_ex(port, 0))
for e in ctx.query_gid_table(8):
    show('gid table entry', e)
show('num_comp_vectors', ctx.num_comp_vectors)
error('query_port 9', lambda: ctx.query_port(9))
error('query_gid 1/500', lambda: ctx.query_gid(1, 500))
error('no such device', lambda: d.Context(name='mlx5_77'))
error('no name', lambda: d.Context())

pd = PD(ctx)
mr = MR(pd, 4096, IBV_ACCESS_LOCAL_WRITE)
show('mr', masked(str(mr)))
error('mr remote write alone', lambda: MR(pd, 64, IBV_ACCESS_REMOTE_WRITE))
mr.write('text', 4)
show('mr read', mr.read(4, 0))
cc = CompChannel(ctx)
cq = CQ(ctx, 100, None, cc, 0)
show('cq', cq)
show('empty poll', cq.poll())
error('cq too big', lambda: CQ(ctx, 1 << 30))
show('qpcap', QPCap())
show('qpcap custom', QPCap(max_send_wr=7, max_inline_data=64))
qp = QP(pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap()))
show('rc qp', re.sub(r'number\s*: \d+ *', 'number: <n>', str(qp)))
error('to_rtr without a path', lambda: qp.to_rtr(QPAttr()))
ud = QP(pd, QPInitAttr(qp_type=IBV_QPT_UD, scq=cq, rcq=cq, cap=QPCap()), QPAttr())
show('ud state', ud.qp_state)
error('too many send sges', lambda: QP(pd, QPInitAttr(qp_type=IBV_QPT_RC, scq=cq, rcq=cq,
                                                     cap=QPCap(max_send_sge=1000))))
show('wc', WC(wr_id=5, opcode=IBV_WC_RECV, wc_flags=3, byte_len=77, status=5))
show('sge', masked(str(SGE(mr.buf, 64, mr.lkey))))
show('recv wr', RecvWR(wr_id=9, num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)]))
error('recv wr without sges', lambda: RecvWR())
show('gid', GID('fe80:0000:0000:0000:0202:c9ff:fe01:0203'))
error('bad gid', lambda: GID('1:2'))
gr = GlobalRoute(dgid=GID('fe80:0000:0000:0000:0202:c9ff:fe01:0203'), flow_label=3, sgid_index=0, hop_limit=64)
show('global route', gr)
show('ah attr', AHAttr(dlid=1, sl=2, port_num=1))
show('ah attr global', AHAttr(is_global=1, gr=gr, port_num=1))
error('global ah attr without gr', lambda: AHAttr(is_global=1))
port = ctx.query_port(1)
# (refused on a RoCE port, which needs a GRH)
error('ah without grh', lambda: AH(pd, attr=AHAttr(dlid=port.lid, port_num=1)))
ctx.close()
ctx.close()
# (a PD on the closed context: Debian's pyverbs crashes there, ours raises;
# test_lifetime.py has that case)
