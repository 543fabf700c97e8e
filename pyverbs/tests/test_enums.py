# pyverbs/tests/test_enums.py: unit tests of the enum modules, their old names and their generator.
"""Run with the built package on the path:
PYTHONPATH=build/python /usr/bin/python3 pyverbs/tests/test_enums.py
"""

import contextlib
import enum
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

import pyverbs.cm_enums
import pyverbs.enums
import pyverbs.libibverbs_enums as ibv
import pyverbs.librdmacm_enums as cm

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(os.path.dirname(HERE), 'gen_enums.py')
MODULES = (ibv, cm)

# Dumps Debian's modules (the old names) as JSON: every int attribute, and
# the members of each IntEnum class. -I keeps PYTHONPATH and the current
# directory off the path, so the system package is the one imported.
DEBIAN_DUMP = r'''
import enum, json
out = {}
for name in ("pyverbs.enums", "pyverbs.cm_enums"):
    try:
        mod = __import__(name, fromlist=["_"])
    except ImportError:
        continue
    values, classes = {}, {}
    for k, v in vars(mod).items():
        if isinstance(v, type) and issubclass(v, enum.Enum):
            classes[k] = list(v.__members__)
        elif isinstance(v, int):
            values[k] = int(v)
    out[name] = {"values": values, "classes": classes}
print(json.dumps(out))
'''


def debian_modules():
    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTHON')}
    proc = subprocess.run([sys.executable, '-I', '-c', DEBIAN_DUMP], capture_output=True,
                          text=True, env=env, cwd='/', check=True)
    return json.loads(proc.stdout)


def enum_classes(mod):
    return {k: v for k, v in vars(mod).items() if isinstance(v, type) and issubclass(v, enum.Enum)}


class EnumModuleTest(unittest.TestCase):
    def test_classes_are_intenums_with_module_attributes(self):
        for mod in MODULES:
            classes = enum_classes(mod)
            self.assertTrue(classes, mod.__name__)
            for name, cls in classes.items():
                self.assertTrue(issubclass(cls, enum.IntEnum), name)
                self.assertEqual(cls.__name__, name)
                self.assertEqual(cls.__module__, mod.__name__)
                # __members__ has aliases too: their module attribute is
                # the first member of that value, as in the class.
                for member_name, member in cls.__members__.items():
                    self.assertIs(getattr(mod, member_name), member, member_name)

    def test_all_names_everything(self):
        for mod in MODULES:
            public = {k for k in vars(mod) if not k.startswith('__')}
            self.assertEqual(set(mod.__all__), public, mod.__name__)

    def test_flags_combine_to_plain_ints(self):
        both = ibv.IBV_ACCESS_LOCAL_WRITE | ibv.IBV_ACCESS_REMOTE_WRITE
        self.assertIs(type(both), int)
        self.assertEqual(both, 3)

    def test_macro_constants_are_plain_ints(self):
        for name in ('_IBV_DEVICE_RAW_SCATTER_FCS', '_IBV_ALLOCATOR_USE_DEFAULT',
                     'IBV_LINK_LAYER_ETHERNET'):
            self.assertIs(type(getattr(ibv, name)), int, name)
        self.assertIs(type(cm.RAI_PASSIVE), int)

    def test_old_module_names(self):
        self.assertIs(pyverbs.enums.ibv_access_flags, ibv.ibv_access_flags)
        self.assertIs(pyverbs.enums.IBV_ACCESS_LOCAL_WRITE, ibv.IBV_ACCESS_LOCAL_WRITE)
        self.assertIs(pyverbs.cm_enums.rdma_port_space, cm.rdma_port_space)
        for old, new in ((pyverbs.enums, ibv), (pyverbs.cm_enums, cm)):
            star = {}
            exec('from %s import *' % old.__name__, star)  # noqa: S102 - the form users write
            self.assertTrue(set(new.__all__) <= set(star), old.__name__)

    def test_values_match_debian_pyverbs(self):
        try:
            debian = debian_modules()
        except (subprocess.CalledProcessError, ValueError) as e:
            self.skipTest('cannot read the system pyverbs: %s' % e)
        if not debian:
            self.skipTest("Debian's python3-pyverbs is not installed")
        compared = 0
        for old, ours in (('pyverbs.enums', ibv), ('pyverbs.cm_enums', cm)):
            if old not in debian:
                continue
            for name, value in debian[old]['values'].items():
                if hasattr(ours, name):
                    self.assertEqual(int(getattr(ours, name)), value, name)
                    compared += 1
            # A member shared with Debian sits in the same class there.
            our_classes = enum_classes(ours)
            for cls_name, members in debian[old]['classes'].items():
                if cls_name not in our_classes:
                    continue
                for member in members:
                    if hasattr(ours, member):
                        self.assertIn(member, our_classes[cls_name].__members__, cls_name)
        self.assertGreater(compared, 0)


def load_generator():
    spec = importlib.util.spec_from_file_location('gen_enums', GENERATOR)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class GeneratorTest(unittest.TestCase):
    HEADER = '''/* a test header: enum demo { NOT_THIS = 1 }; */
enum demo {
    DEMO_A = (1 << 0),   // , a comma in a comment
    DEMO_B = FN(2, 3),
    DEMO_RESERVED,
};
enum { ANON_X = 7 };
#define MACRO_Y (1ULL << 40)
'''

    def setUp(self):
        self.gen = load_generator()
        self.tmp = tempfile.TemporaryDirectory()
        inc = os.path.join(self.tmp.name, 'include', 'demo')
        os.makedirs(inc)
        self.header = os.path.join(inc, 'demo.h')
        with open(self.header, 'w') as f:
            f.write(self.HEADER)
        self.out = os.path.join(self.tmp.name, 'out.cpp')

    def tearDown(self):
        self.tmp.cleanup()

    def run_gen(self, listing):
        lst = os.path.join(self.tmp.name, 'enums.list')
        with open(lst, 'w') as f:
            f.write('[demo_enums]\n' + listing)
        return self.gen.main(['--list', lst, '--module', 'demo_enums', '--output', self.out,
                              self.header])

    def test_writes_names_never_values(self):
        listing = 'enum demo except DEMO_RESERVED\nconst ANON_X\nconst _Y = MACRO_Y\n'
        self.assertEqual(self.run_gen(listing), 0)
        with open(self.out) as f:
            text = f.read()
        self.assertIn('#include <demo/demo.h>', text)
        self.assertIn('{"DEMO_A", DEMO_A}', text)
        self.assertIn('{"DEMO_B", DEMO_B}', text)
        self.assertNotIn('DEMO_RESERVED', text)
        self.assertNotIn('NOT_THIS', text)
        self.assertIn('{"_Y", MACRO_Y}', text)
        self.assertIn('PYBIND11_MODULE(demo_enums, m)', text)

    def test_list_must_match_header(self):
        for bad in ('enum nosuch\n', 'enum demo except DEMO_C\n', 'const NOSUCH\n', 'enum\n'):
            with self.subTest(bad=bad):
                err = io.StringIO()
                with contextlib.redirect_stderr(err):
                    self.assertEqual(self.run_gen(bad), 1)
                self.assertIn('gen_enums.py:', err.getvalue())
                self.assertFalse(os.path.exists(self.out))


if __name__ == '__main__':
    unittest.main()
