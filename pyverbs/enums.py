# pyverbs.enums: the old name of pyverbs.libibverbs_enums, kept for older code.
from .libibverbs_enums import *  # noqa: F401,F403
# Without it `from pyverbs.enums import *` would skip the '_'-named macros.
from .libibverbs_enums import __all__  # noqa: F401
