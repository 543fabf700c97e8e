# librdmacm API man pages (sections 3 and 7), pandoc markdown. Every entry
# point the reference installs a page for has its own page here; none of
# them is a ".so" alias upstream, so there are no rdma_man_alias() calls.
rdma_man_pages(
  rdma_cm.7.md

  rdma_accept.3.md
  rdma_ack_cm_event.3.md
  rdma_bind_addr.3.md
  rdma_connect.3.md
  rdma_create_event_channel.3.md
  rdma_create_id.3.md
  rdma_destroy_event_channel.3.md
  rdma_destroy_id.3.md
  rdma_disconnect.3.md
  rdma_establish.3.md
  rdma_event_str.3.md
  rdma_free_devices.3.md
  rdma_get_cm_event.3.md
  rdma_get_devices.3.md
  rdma_get_dst_port.3.md
  rdma_get_local_addr.3.md
  rdma_get_peer_addr.3.md
  rdma_get_remote_ece.3.md
  rdma_get_request.3.md
  rdma_get_src_port.3.md
  rdma_init_qp_attr.3.md
  rdma_listen.3.md
  rdma_migrate_id.3.md
  rdma_notify.3.md
  rdma_reject.3.md
  rdma_resolve_addr.3.md
  rdma_resolve_route.3.md
  rdma_set_local_ece.3.md
  rdma_set_option.3.md
  rdma_write_cm_event.3.md
)
