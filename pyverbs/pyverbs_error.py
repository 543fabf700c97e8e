# pyverbs.pyverbs_error: the exceptions every pyverbs module raises.
import os


class PyverbsError(Exception):
    """Any pyverbs failure. With an errno, the message ends in
    '. Errno: <n>, <strerror(n)>'."""

    def __init__(self, msg, error_code=-1):
        if error_code != -1:
            msg = f'{msg}. Errno: {error_code}, {os.strerror(error_code)}'
        super().__init__(msg)


class PyverbsRDMAError(PyverbsError):
    """A call into rdma-core failed; error_code is its errno (-1: none)."""

    def __init__(self, msg, error_code=-1):
        super().__init__(msg, error_code)
        self._error_code = error_code

    @property
    def error_code(self):
        return self._error_code


class PyverbsUserError(PyverbsError):
    """pyverbs refused the caller's input before calling rdma-core."""

    def __init__(self, msg):
        super().__init__(msg)
