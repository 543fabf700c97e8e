# pyverbs.mem_alloc, dma_util and fork: raw memory, MMIO-style writes, and
# an MR over memory the test allocated itself.
import errno
import struct
import subprocess
import sys
import unittest

from pyverbs import dma_util, fork
from pyverbs import mem_alloc as mem
from pyverbs import device as d
from pyverbs.libibverbs_enums import IBV_ACCESS_LOCAL_WRITE, IBV_FORK_DISABLED, IBV_FORK_ENABLED, IBV_FORK_UNNEEDED
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError

from base import device_name


class MemAllocTest(unittest.TestCase):
    def test_malloc_read_write(self):
        p = mem.malloc(64)
        mem.write(p, b'hello world', 11)
        mem.write(p, 'str', 3, 20)
        self.assertEqual(mem.read(p, 5), b'hello')
        self.assertEqual(mem.read(p, 3, 20), b'str')
        mem.free(p)

    def test_posix_memalign(self):
        p = mem.posix_memalign(8192, 4096)
        self.assertEqual(p % 4096, 0)
        self.assertEqual(mem.read(p, 8192), bytes(8192))
        mem.writebe32(p, 0x01020304, 1)
        self.assertEqual(mem.read(p, 4, 4), b'\x01\x02\x03\x04')
        self.assertEqual(mem.read32(p, 1), struct.unpack('=I', b'\x01\x02\x03\x04')[0])
        mem.writebe64(p, 0x0102030405060708, 2)
        self.assertEqual(mem.read(p, 8, 16), bytes(range(1, 9)))
        self.assertEqual(mem.read64(p, 2), struct.unpack('=Q', bytes(range(1, 9)))[0])
        mem.free(p)

    def test_mmap(self):
        p = mem.mmap(length=4096)
        self.assertEqual(p % 4096, 0)
        mem.write(p, b'x' * 10, 10, 4000)
        self.assertEqual(mem.read(p, 10, 4000), b'x' * 10)
        mem.madvise(p, 4096)
        mem.munmap(p, 4096)
        with self.assertRaises(MemoryError):
            mem.mmap(length=4096, flags=mem.MAP_SHARED_ | mem.MAP_FIXED_, addr=1)

    def test_write_past_data(self):
        p = mem.malloc(16)
        with self.assertRaises(Exception):
            mem.write(p, b'ab', 10)
        mem.free(p)

    def test_dma_util(self):
        p = mem.posix_memalign(64, 64)
        dma_util.udma_to_dev_barrier()
        dma_util.mmio_write32_as_be(p, 0xa0b0c0d0)
        dma_util.mmio_write64_as_be(p + 8, 1)
        dma_util.udma_from_dev_barrier()
        self.assertEqual(mem.read(p, 4), b'\xa0\xb0\xc0\xd0')
        self.assertEqual(mem.read(p, 8, 8), b'\x00' * 7 + b'\x01')
        mem.free(p)

    def test_mr_on_own_memory(self):
        p = mem.posix_memalign(4096, 4096)
        with d.Context(name=device_name()) as ctx:
            mr = MR(PD(ctx), 4096, IBV_ACCESS_LOCAL_WRITE, address=p)
            self.assertEqual(mr.buf, p)
            mr.write(b'via mr', 6)
            self.assertEqual(mem.read(p, 6), b'via mr')
        # the MR did not own the memory: it is still ours to free
        mem.free(p)


class ForkTest(unittest.TestCase):
    def test_fork_state(self):
        # A fresh process: fork support must be asked for before any memory
        # is registered (afterwards libibverbs refuses with EINVAL).
        code = ('from pyverbs import fork; a = fork.is_fork_initialized(); fork.fork_init(); '
                'print(a, fork.is_fork_initialized())')
        out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
        before, after = map(int, out.split())
        self.assertIn(before, (IBV_FORK_DISABLED, IBV_FORK_UNNEEDED))
        self.assertIn(after, (IBV_FORK_ENABLED, IBV_FORK_UNNEEDED))

    def test_fork_init_after_registration(self):
        with d.Context(name=device_name()) as ctx:
            MR(PD(ctx), 64, IBV_ACCESS_LOCAL_WRITE)
            if fork.is_fork_initialized() == IBV_FORK_DISABLED:
                with self.assertRaises(PyverbsRDMAError) as cm:
                    fork.fork_init()
                self.assertEqual(cm.exception.error_code, errno.EINVAL)


if __name__ == '__main__':
    unittest.main()
