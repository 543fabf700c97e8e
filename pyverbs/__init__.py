# pyverbs: Python bindings of libibverbs and librdmacm (pybind11 modules).
from .__version__ import __version__  # noqa: F401
