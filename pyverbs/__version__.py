# pyverbs.__version__: the release of the stack this package belongs to.
__version__ = '65.0'
