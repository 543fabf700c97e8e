#!/bin/bash
# control_path.sh RUN OURS REFERENCE OURS_LIB WORK: the control-path table
# of our libibverbs + mlx5 provider against Debian's, on the emulated
# ConnectX, with the MLX5_* settings that change how a context opens.
exec "$(dirname "$0")/twin.sh" "$@" <<'CASES'
- 
two.conf 
- MLX5_SHUT_UP_BF=1
- MLX5_TOTAL_UUARS=0
- MLX5_TOTAL_UUARS=1
- MLX5_TOTAL_UUARS=33
- MLX5_TOTAL_UUARS=5000
- MLX5_NUM_LOW_LAT_UUARS=15
- MLX5_NUM_LOW_LAT_UUARS=16
- MLX5_NUM_LOW_LAT_UUARS=-1
- MLX5_TOTAL_UUARS=32 MLX5_NUM_LOW_LAT_UUARS=31
CASES
