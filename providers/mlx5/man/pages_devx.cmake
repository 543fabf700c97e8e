# mlx5dv man pages: devx (rdma_man_pages / rdma_man_alias calls)
rdma_man_pages(
  mlx5dv_alloc_var.3.md
  mlx5dv_devx_alloc_msi_vector.3.md
  mlx5dv_devx_alloc_uar.3.md
  mlx5dv_devx_create_cmd_comp.3.md
  mlx5dv_devx_create_eq.3.md
  mlx5dv_devx_create_event_channel.3.md
  mlx5dv_devx_get_event.3.md
  mlx5dv_devx_obj_create.3.md
  mlx5dv_devx_obj_export.3.md
  mlx5dv_devx_qp_modify.3.md
  mlx5dv_devx_query_eqn.3.md
  mlx5dv_devx_subscribe_devx_event.3.md
  mlx5dv_devx_uar_export_dmabuf_fd.3.md
  mlx5dv_devx_umem_export.3.md
  mlx5dv_devx_umem_reg.3.md
  mlx5dv_dump.3.md
  mlx5dv_get_export_sizes.3.md
  mlx5dv_pp_alloc.3.md
  mlx5dv_reserved_qpn_alloc.3.md
  mlx5dv_sched_node_create.3.md
  mlx5dv_var_export.3.md
  )

rdma_man_alias(mlx5dv_devx_cq_modify.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_cq_query.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_destroy_cmd_comp.3 mlx5dv_devx_create_cmd_comp.3)
rdma_man_alias(mlx5dv_devx_destroy_eq.3 mlx5dv_devx_create_eq.3)
rdma_man_alias(mlx5dv_devx_destroy_event_channel.3 mlx5dv_devx_create_event_channel.3)
rdma_man_alias(mlx5dv_devx_free_msi_vector.3 mlx5dv_devx_alloc_msi_vector.3)
rdma_man_alias(mlx5dv_devx_free_uar.3 mlx5dv_devx_alloc_uar.3)
rdma_man_alias(mlx5dv_devx_general_cmd.3 mlx5dv_devx_obj_create.3)
rdma_man_alias(mlx5dv_devx_get_async_cmd_comp.3 mlx5dv_devx_create_cmd_comp.3)
rdma_man_alias(mlx5dv_devx_ind_tbl_modify.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_ind_tbl_query.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_obj_destroy.3 mlx5dv_devx_obj_create.3)
rdma_man_alias(mlx5dv_devx_obj_import.3 mlx5dv_devx_obj_export.3)
rdma_man_alias(mlx5dv_devx_obj_modify.3 mlx5dv_devx_obj_create.3)
rdma_man_alias(mlx5dv_devx_obj_query.3 mlx5dv_devx_obj_create.3)
rdma_man_alias(mlx5dv_devx_obj_query_async.3 mlx5dv_devx_obj_create.3)
rdma_man_alias(mlx5dv_devx_obj_unimport.3 mlx5dv_devx_obj_export.3)
rdma_man_alias(mlx5dv_devx_qp_query.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_srq_modify.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_srq_query.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_subscribe_devx_event_fd.3 mlx5dv_devx_subscribe_devx_event.3)
rdma_man_alias(mlx5dv_devx_umem_dereg.3 mlx5dv_devx_umem_reg.3)
rdma_man_alias(mlx5dv_devx_umem_import.3 mlx5dv_devx_umem_export.3)
rdma_man_alias(mlx5dv_devx_umem_reg_ex.3 mlx5dv_devx_umem_reg.3)
rdma_man_alias(mlx5dv_devx_umem_unimport.3 mlx5dv_devx_umem_export.3)
rdma_man_alias(mlx5dv_devx_wq_modify.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_devx_wq_query.3 mlx5dv_devx_qp_modify.3)
rdma_man_alias(mlx5dv_dump_dr_domain.3 mlx5dv_dump.3)
rdma_man_alias(mlx5dv_dump_dr_matcher.3 mlx5dv_dump.3)
rdma_man_alias(mlx5dv_dump_dr_rule.3 mlx5dv_dump.3)
rdma_man_alias(mlx5dv_dump_dr_table.3 mlx5dv_dump.3)
rdma_man_alias(mlx5dv_free_var.3 mlx5dv_alloc_var.3)
rdma_man_alias(mlx5dv_pp_free.3 mlx5dv_pp_alloc.3)
rdma_man_alias(mlx5dv_reserved_qpn_dealloc.3 mlx5dv_reserved_qpn_alloc.3)
rdma_man_alias(mlx5dv_sched_leaf_create.3 mlx5dv_sched_node_create.3)
rdma_man_alias(mlx5dv_sched_leaf_destroy.3 mlx5dv_sched_node_create.3)
rdma_man_alias(mlx5dv_sched_leaf_modify.3 mlx5dv_sched_node_create.3)
rdma_man_alias(mlx5dv_sched_node_destroy.3 mlx5dv_sched_node_create.3)
rdma_man_alias(mlx5dv_sched_node_modify.3 mlx5dv_sched_node_create.3)
rdma_man_alias(mlx5dv_var_import.3 mlx5dv_var_export.3)
rdma_man_alias(mlx5dv_var_unimport.3 mlx5dv_var_export.3)
