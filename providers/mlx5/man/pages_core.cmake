# mlx5dv man pages: core (rdma_man_pages / rdma_man_alias calls)
rdma_man_pages(
  mlx5dv.7.md
  mlx5dv_create_cq.3.md
  mlx5dv_create_qp.3.md
  mlx5dv_dci_stream_id_reset.3.md
  mlx5dv_get_clock_info.3.md
  mlx5dv_get_data_direct_sysfs_path.3.md
  mlx5dv_get_vfio_device_list.3.md
  mlx5dv_init_obj.3.md
  mlx5dv_map_ah_to_qp.3.md
  mlx5dv_modify_qp_lag_port.3.md
  mlx5dv_modify_qp_sched_elem.3.md
  mlx5dv_modify_qp_udp_sport.3.md
  mlx5dv_qp_cancel_posted_send_wrs.3.md
  mlx5dv_query_device.3.md
  mlx5dv_query_port.3.md
  mlx5dv_query_qp_lag_port.3.md
  mlx5dv_reg_dmabuf_mr.3.md
  mlx5dv_ts_to_ns.3.md
  mlx5dv_vfio_get_events_fd.3.md
  mlx5dv_vfio_process_events.3.md
  mlx5dv_wr_post.3.md
  )

# mlx5dv_wr_post.3 documents the mlx5 ibv_wr builders and setters.
rdma_man_alias(mlx5dv_qp_ex_from_ibv_qp_ex.3 mlx5dv_wr_post.3)
rdma_man_alias(mlx5dv_wr_memcpy.3 mlx5dv_wr_post.3)
rdma_man_alias(mlx5dv_wr_mr_interleaved.3 mlx5dv_wr_post.3)
rdma_man_alias(mlx5dv_wr_mr_list.3 mlx5dv_wr_post.3)
rdma_man_alias(mlx5dv_wr_raw_wqe.3 mlx5dv_wr_post.3)
rdma_man_alias(mlx5dv_wr_set_dc_addr.3 mlx5dv_wr_post.3)
rdma_man_alias(mlx5dv_wr_set_dc_addr_stream.3 mlx5dv_wr_post.3)
