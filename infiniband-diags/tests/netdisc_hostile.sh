#!/bin/bash
# netdisc_hostile.sh CORPUS_DIR: every cache file of libibnetdisc's fuzz
# corpus (truncated, absurd counts, loops...) through ibnetdiscover,
# iblinkinfo, ibqueryerrors and ibcacheedit (ours, on our libraries, on the
# simulated fabric): each must end by itself with an ordinary status (no
# signal, no timeout). Runs inside fabric-run.
set -u
: "${RDMA_BUILD:?}"
B=$RDMA_BUILD/bin
fails=0 runs=0
for f in "$1"/*; do
	for cmd in "ibnetdiscover --load-cache $f" "ibnetdiscover --load-cache $f -g -p" \
	    "iblinkinfo --load-cache $f" "iblinkinfo --load-cache $f -l --diff $f" \
	    "ibqueryerrors --skip-sl --load-cache $f" \
	    "ibcacheedit --switchguid 0x1:0x2 $f $FABRIC_DIR/out.cache"; do
		runs=$((runs + 1))
		LD_LIBRARY_PATH=$RDMA_BUILD/lib timeout 30 env LD_PRELOAD="$SIM_PRELOAD" $B/$cmd \
		    </dev/null >/dev/null 2>&1
		rc=$?
		if [ $rc -ge 124 ] && [ $rc -ne 255 ]; then
			echo "FAIL (status $rc): $cmd"
			fails=$((fails + 1))
		fi
	done
done
echo "$((runs - fails))/$runs runs ended normally"
[ "$fails" = 0 ]
