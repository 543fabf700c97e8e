/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Public ABI header, kept in the reference layout: not reformatted. */
/* clang-format off */
/* mlx5dv names for the kernel's mlx5 uapi types and constants
 * (mlx5_user_ioctl_verbs.h): the direct-verbs API spells them MLX5DV_*,
 * the kernel MLX5_IB_UAPI_*; both denote the same values. */

#ifndef MLX5_API_H
#define MLX5_API_H

#include <infiniband/mlx5_user_ioctl_verbs.h>

/* Flow steering */
#define mlx5dv_flow_action_flags			mlx5_ib_uapi_flow_action_flags
#define MLX5DV_FLOW_ACTION_FLAGS_REQUIRE_METADATA	MLX5_IB_UAPI_FLOW_ACTION_FLAGS_REQUIRE_METADATA
#define mlx5dv_flow_table_type				mlx5_ib_uapi_flow_table_type
#define MLX5DV_FLOW_TABLE_TYPE_NIC_RX			MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_RX
#define MLX5DV_FLOW_TABLE_TYPE_NIC_TX			MLX5_IB_UAPI_FLOW_TABLE_TYPE_NIC_TX
#define MLX5DV_FLOW_TABLE_TYPE_FDB			MLX5_IB_UAPI_FLOW_TABLE_TYPE_FDB
#define MLX5DV_FLOW_TABLE_TYPE_RDMA_RX			MLX5_IB_UAPI_FLOW_TABLE_TYPE_RDMA_RX
#define MLX5DV_FLOW_TABLE_TYPE_RDMA_TX			MLX5_IB_UAPI_FLOW_TABLE_TYPE_RDMA_TX
#define mlx5dv_flow_action_packet_reformat_type		mlx5_ib_uapi_flow_action_packet_reformat_type
#define MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2	\
	MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2
#define MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL	\
	MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL
#define MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2	\
	MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2
#define MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL	\
	MLX5_IB_UAPI_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL

/* DEVX asynchronous command and event headers */
#define mlx5dv_devx_async_cmd_hdr			mlx5_ib_uapi_devx_async_cmd_hdr
#define mlx5dv_devx_async_event_hdr			mlx5_ib_uapi_devx_async_event_hdr

/* Device memory */
#define mlx5dv_alloc_dm_type				mlx5_ib_uapi_dm_type
#define MLX5DV_DM_TYPE_MEMIC				MLX5_IB_UAPI_DM_TYPE_MEMIC
#define MLX5DV_DM_TYPE_STEERING_SW_ICM			MLX5_IB_UAPI_DM_TYPE_STEERING_SW_ICM
#define MLX5DV_DM_TYPE_HEADER_MODIFY_SW_ICM		MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_SW_ICM
#define MLX5DV_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM	MLX5_IB_UAPI_DM_TYPE_HEADER_MODIFY_PATTERN_SW_ICM

/* DEVX event channels, packet pacing, UAR allocation */
#define mlx5dv_devx_create_event_channel_flags		mlx5_ib_uapi_devx_create_event_channel_flags
#define MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA	MLX5_IB_UAPI_DEVX_CR_EV_CH_FLAGS_OMIT_DATA
#define MLX5DV_PP_ALLOC_FLAGS_DEDICATED_INDEX		MLX5_IB_UAPI_PP_ALLOC_FLAGS_DEDICATED_INDEX
#define MLX5DV_UAR_ALLOC_TYPE_BF			MLX5_IB_UAPI_UAR_ALLOC_TYPE_BF
#define MLX5DV_UAR_ALLOC_TYPE_NC			MLX5_IB_UAPI_UAR_ALLOC_TYPE_NC

/* mlx5dv_query_port() */
#define MLX5DV_QUERY_PORT_VPORT				MLX5_IB_UAPI_QUERY_PORT_VPORT
#define MLX5DV_QUERY_PORT_VPORT_VHCA_ID			MLX5_IB_UAPI_QUERY_PORT_VPORT_VHCA_ID
#define MLX5DV_QUERY_PORT_VPORT_STEERING_ICM_RX		MLX5_IB_UAPI_QUERY_PORT_VPORT_STEERING_ICM_RX
#define MLX5DV_QUERY_PORT_VPORT_STEERING_ICM_TX		MLX5_IB_UAPI_QUERY_PORT_VPORT_STEERING_ICM_TX
#define MLX5DV_QUERY_PORT_VPORT_REG_C0			MLX5_IB_UAPI_QUERY_PORT_VPORT_REG_C0
#define MLX5DV_QUERY_PORT_ESW_OWNER_VHCA_ID		MLX5_IB_UAPI_QUERY_PORT_ESW_OWNER_VHCA_ID
#define mlx5dv_port					mlx5_ib_uapi_query_port
#define mlx5dv_reg					mlx5_ib_uapi_reg

#endif /* MLX5_API_H */
