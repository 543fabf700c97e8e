# pyverbs.providers.mlx5.libmlx5: the reference declares libmlx5's C API here for its other modules; it has no Python names.
"""libmlx5's C declarations (none are Python objects): the classes wrapping
them are in pyverbs.providers.mlx5.mlx5dv and the modules beside it."""
