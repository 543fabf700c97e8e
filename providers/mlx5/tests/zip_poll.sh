#!/bin/bash
# zip_poll.sh RUN OURS OURS_LIB WORK: our stack alone (Debian's libmlx5
# reads no mini-CQEs: its ibv_poll_cq takes a session's title for one CQE)
# polls CQs the device compresses: dv_path's CQE compression section with
# DV_PATH_ZIP_POLL=1 (ibv_poll_cq) and =ex (ibv_start_poll), on the default
# device and under MLX5_CQE_SIZE=128. Each of the four cases must see a
# session and get every receive in order; the three with a CQ for the
# receives alone also after a resize with a session unread.
set -u
run=$1 ours=$2 lib=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
fail=0
for envs in "DV_PATH_ZIP_POLL=1" "DV_PATH_ZIP_POLL=ex" "DV_PATH_ZIP_POLL=1 MLX5_CQE_SIZE=128"; do
	out="$work/$(echo "$envs" | tr ' =' '__').out"
	# shellcheck disable=SC2086 # envs is a word list
	env LD_LIBRARY_PATH="$lib" $envs timeout 60 "$run" --dir "$work/host" "$ours" >"$out" 2>&1 ||
		{ echo "FAIL $envs: dv_path exited $?"; tail -5 "$out"; fail=1; continue; }
	sed -n '/^CQE compression/,/^thread domains/p' "$out" >"$out.zip"
	bursts=$(grep -c 'every receive in order, compressed session seen: yes' "$out.zip")
	resized=$(grep -c 'resized with a session unread: every receive in order' "$out.zip")
	if [ "$bursts" = 4 ] && [ "$resized" = 3 ]; then
		echo "ok    $envs"
	else
		echo "FAIL  $envs: $bursts of 4 cases in order, $resized of 3 after the resize"
		sed 's/^/      /' "$out.zip"
		fail=1
	fi
done
exit $fail
