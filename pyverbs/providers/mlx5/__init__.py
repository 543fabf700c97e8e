# pyverbs.providers.mlx5: mlx5 direct verbs (libmlx5) for ConnectX devices.
