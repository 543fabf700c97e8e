# mlx5dv man pages: core (rdma_man_pages / rdma_man_alias calls)
