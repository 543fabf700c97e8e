# pyverbs.utils: formatting helpers shared by the modules' __str__ and tests.
import struct
import sys

from .pyverbs_error import PyverbsUserError
from .libibverbs_enums import ibv_access_flags as _access
from .libibverbs_enums import ibv_rereg_mr_err_code as _rereg


def be64toh(num):
    """The value of the big-endian 64-bit field `num` (read as host order)."""
    return int.from_bytes(num.to_bytes(8, sys.byteorder), 'big')


def gid_str(subnet_prefix, interface_id):
    """A GID as 8 colon-separated groups, from its two 64-bit halves as
    they lie in memory (big-endian fields read in host order)."""
    raw = struct.pack('=QQ', subnet_prefix, interface_id)
    return ':'.join(raw[i:i + 2].hex() for i in range(0, 16, 2))


def gid_str_to_array(val):
    """'fe80:0000:...' (8 groups of 4 digits) -> the GID's 16 bytes as
    two-digit hex strings."""
    groups = val.split(':')
    if len(groups) != 8 or any(len(g) != 4 for g in groups):
        raise PyverbsUserError(f'Invalid GID value ({groups})')
    return [g[i:i + 2] for g in groups for i in (0, 2)]


_QP_TYPES = {2: 'RC', 3: 'UC', 4: 'UD', 8: 'Raw Packet', 9: 'XRCD_SEND',
             10: 'XRCD_RECV', 0xff: 'Driver QP'}
_QP_STATES = {0: 'Reset', 1: 'Init', 2: 'RTR', 3: 'RTS', 4: 'SQD', 5: 'SQE',
              6: 'Error', 7: 'Unknown'}
_MIG_STATES = {0: 'Migrated', 1: 'Re-arm', 2: 'Armed'}
_ACCESS_NAMES = [('IBV_ACCESS_LOCAL_WRITE', 'Local write'),
                 ('IBV_ACCESS_REMOTE_WRITE', 'Remote write'),
                 ('IBV_ACCESS_REMOTE_READ', 'Remote read'),
                 ('IBV_ACCESS_REMOTE_ATOMIC', 'Remote atomic'),
                 ('IBV_ACCESS_MW_BIND', 'MW bind'),
                 ('IBV_ACCESS_ZERO_BASED', 'Zero based'),
                 ('IBV_ACCESS_ON_DEMAND', 'On demand')]


def qp_type_to_str(qp_type):
    return _QP_TYPES.get(qp_type, f'Unknown ({qp_type})')


def qp_state_to_str(qp_state):
    return _QP_STATES.get(qp_state, f'Unknown ({qp_state})')


def mtu_to_str(mtu):
    """An ibv_mtu value as bytes (0 for a value that is none)."""
    return 128 << mtu if 1 <= mtu <= 5 else 0


def access_flags_to_str(flags):
    """The names of the set access flags, each followed by a space."""
    return ''.join(name + ' ' for flag, name in _ACCESS_NAMES
                   if flags & getattr(_access, flag))


def mig_state_to_str(mig):
    return _MIG_STATES.get(mig, f'Unknown ({mig})')


def rereg_error_to_str(error):
    try:
        return _rereg(error).name
    except ValueError:
        return f'Unknown error ({error})'
