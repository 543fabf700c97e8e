# mlx5dv man pages: steering (rdma_man_pages / rdma_man_alias calls)
rdma_man_pages(
  mlx5dv_create_flow.3.md
  mlx5dv_create_flow_action_modify_header.3.md
  mlx5dv_create_flow_action_packet_reformat.3.md
  mlx5dv_create_flow_matcher.3.md
  mlx5dv_create_mkey.3.md
  mlx5dv_create_steering_anchor.3.md
  mlx5dv_crypto_login.3.md
  mlx5dv_crypto_login_create.3.md
  mlx5dv_dek_create.3.md
  mlx5dv_dr_flow.3.md
  mlx5dv_flow_action_esp.3.md
  mlx5dv_mkey_check.3.md
  mlx5dv_wr_mkey_configure.3.md
  mlx5dv_wr_set_mkey_crypto.3.md
  mlx5dv_wr_set_mkey_sig_block.3.md
  )

rdma_man_alias(mlx5dv_crypto_login_destroy.3 mlx5dv_crypto_login_create.3)
rdma_man_alias(mlx5dv_crypto_login_query.3 mlx5dv_crypto_login_create.3)
rdma_man_alias(mlx5dv_crypto_login_query_state.3 mlx5dv_crypto_login.3)
rdma_man_alias(mlx5dv_crypto_logout.3 mlx5dv_crypto_login.3)
rdma_man_alias(mlx5dv_dek_destroy.3 mlx5dv_dek_create.3)
rdma_man_alias(mlx5dv_dek_query.3 mlx5dv_dek_create.3)
rdma_man_alias(mlx5dv_destroy_mkey.3 mlx5dv_create_mkey.3)
rdma_man_alias(mlx5dv_destroy_steering_anchor.3 mlx5dv_create_steering_anchor.3)
rdma_man_alias(mlx5dv_dr_action_create_aso.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_default_miss.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_dest_array.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_dest_devx_tir.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_dest_ib_port.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_dest_ibv_qp.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_dest_root_table.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_dest_table.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_dest_vport.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_drop.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_flow_counter.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_flow_meter.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_flow_sampler.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_modify_header.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_packet_reformat.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_pop_vlan.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_push_vlan.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_create_tag.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_destroy.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_modify_aso.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_action_modify_flow_meter.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_aso_other_domain_link.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_aso_other_domain_unlink.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_domain_allow_duplicate_rules.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_domain_create.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_domain_destroy.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_domain_set_reclaim_device_memory.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_domain_sync.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_matcher_create.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_matcher_destroy.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_matcher_set_layout.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_rule_create.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_rule_destroy.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_table_create.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_dr_table_destroy.3 mlx5dv_dr_flow.3)
rdma_man_alias(mlx5dv_wr_set_mkey_access_flags.3 mlx5dv_wr_mkey_configure.3)
rdma_man_alias(mlx5dv_wr_set_mkey_layout_interleaved.3 mlx5dv_wr_mkey_configure.3)
rdma_man_alias(mlx5dv_wr_set_mkey_layout_list.3 mlx5dv_wr_mkey_configure.3)
