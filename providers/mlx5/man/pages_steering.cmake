# mlx5dv man pages: steering (rdma_man_pages / rdma_man_alias calls)
