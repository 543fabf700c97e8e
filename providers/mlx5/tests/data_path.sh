#!/bin/bash
# data_path.sh RUN OURS REFERENCE OURS_LIB WORK: queue sizes, bad posts and
# the completions of RC, UC, UD, SRQ and ibv_wr_* traffic (data_path.c) of
# our libibverbs + mlx5 provider against Debian's, on the emulated ConnectX
# (InfiniBand and RoCE ports, the queue knobs of MLX5_*, scatter-to-CQE
# with 64- and 128-byte CQEs and without, the polling back-off, where the
# rings live: MLX_*_ALLOC_TYPE).
exec "$(dirname "$0")/twin.sh" "$@" <<'CASES'
- DATA_PATH_HUGE_CQ=1
roce.conf
- MLX5_CQE_SIZE=128
- MLX5_SCATTER_TO_CQE=0
- MLX5_CQE_SIZE=100
- MLX5_POST_SEND_PREFER_BF=0
- MLX5_SHUT_UP_BF=1
- MLX5_SINGLE_THREADED=1
- MLX5_STALL_CQ_POLL=1
- MLX5_STALL_CQ_POLL=1 MLX5_STALL_NUM_LOOP=-1
- MLX_CQ_ALLOC_TYPE=PREFER_HUGE MLX_QP_ALLOC_TYPE=PREFER_CONTIG MLX_SRQ_ALLOC_TYPE=ALL
- MLX_SRQ_ALLOC_TYPE=CONTIG MLX_QP_ALLOC_TYPE=anon
CASES
