#!/bin/bash
# scripts_compat.sh: smoke test of the obsolete scripts (built with
# ENABLE_IBDIAGS_COMPAT) on net.2sw2path4hca with opensm. Debian ships none
# of them, so there is no reference to compare with: this checks the
# behaviour their upstream versions have (messages, verdicts, exit codes).
set -u
: "${RDMA_BUILD:?}"
B=$RDMA_BUILD/bin
export IBPATH=$B PATH=$B:$PATH LD_PRELOAD=$SIM_PRELOAD LD_LIBRARY_PATH=$RDMA_BUILD/lib
fails=0
# expect RC PATTERN CMD...: exit status RC and PATTERN (grep -E) in the
# combined output
expect() {
	local rc=$1 pat=$2; shift 2
	local out got
	out=$("$@" 2>&1 </dev/null); got=$?
	out=$(grep -v 'sim_connect: attached as client' <<<"$out")
	if [ "$got" = "$rc" ] && grep -Eq -- "$pat" <<<"$out"; then
		echo "ok   [$*]"
	else
		echo "FAIL [$*]: rc $got (want $rc), output:"; sed 's/^/  /' <<<"$out" | head -20
		fails=$((fails + 1))
	fi
}
fabric-ctl 'PerformanceSet "Switch1"[3] PortCounters.SymbolErrorCounter=12'
for s in ibchecknode ibcheckport ibcheckportstate ibcheckportwidth ibcheckerrs ibdatacounts; do
	expect 255 "^Usage: $s " $s
	expect 255 "^Usage: $s " $s -x 1
done
for s in ibcheckerrors ibchecknet ibcheckstate ibcheckwidth ibclearcounters ibclearerrors ibdatacounters; do
	expect 255 "^Usage: $s " $s -h
	expect 255 "^Usage: $s " $s a b
done
expect 0 'Node check lid 1: OK' ibchecknode -N -v 1
expect 255 'lid 99 address resolution: FAILED' ibchecknode -N 99
expect 0 'Port check lid 2 port 1: OK' ibcheckport -N -v 2 1
expect 0 'deprecated\\n\\n' ibcheckport -N 2 1
expect 255 'Physical link state is Polling  lid 1 port 4' ibcheckportstate -N 1 4
expect 0 '^$' ibcheckportwidth -N -S 1 3
expect 255 '#warn: counter SymbolErrorCounter = 12 	\(threshold 10\) lid 1 port 3' ibcheckerrs -N 1 3
expect 0 '^VL15Dropped=100$' ibcheckerrs -s
expect 0 'PortRcvPkts:\.+[0-9]+' ibdatacounts -N -v 2 1
expect 0 '1 ports have errors beyond threshold' ibcheckerrors -N
expect 1 '##          1 ports have errors beyond threshold' ibchecknet -N
expect 0 'ports with bad state found' ibcheckstate -N
expect 0 'ports with 1x width in error found' ibcheckwidth -N
expect 0 'nodes checked, 0 bad nodes found' ibdatacounters -N -b
expect 0 'Please use "ibqueryerrors -k"' ibclearerrors
expect 0 '0 ports have errors beyond threshold' ibcheckerrors -N
expect 0 'Please use "ibqueryerrors -K"' ibclearcounters
expect 0 '^Ca	2 "H-0000000000100000"' ibprintca -R Hca1
expect 0 '"S-0000000000200001"' ibprintswitch -R -G 0x200001
expect 255 '"foo" not found' ibprintrt foo
expect 1 '^Ca	: 0x0000000000100000 ports 2 "Hca1"' ibprintca -l
expect 2 '^Usage: ibprintswitch ' ibprintswitch -x
expect 0 'Checking counts' ibswportwatch -n 1 -p 1 1 3
expect 2 '^Usage: set_nodedesc ' set_nodedesc -h
echo "$fails failures"
[ "$fails" = 0 ]
