# pyverbs.providers: the provider-specific (direct verbs) packages, mlx5 and efa.
