# pyverbs.cm_enums: the old name of pyverbs.librdmacm_enums, kept for older code.
from .librdmacm_enums import *  # noqa: F401,F403
# Without it `from pyverbs.cm_enums import *` would not re-export everything.
from .librdmacm_enums import __all__  # noqa: F401
