# mlx5dv man pages: devx (rdma_man_pages / rdma_man_alias calls)
