# Sourced by the reference tests (bash). Debian's own programs run over the
# emulator with Debian's libibverbs + libmlx5; nothing of the project's
# libibverbs is on the library path. With UVSIM_STACK=ours the same
# programs run on the project's libibverbs and mlx5 provider instead
# (UVSIM_OURS_LIB, build/lib), and need() checks that no library of
# Debian's RDMA stack gets loaded. With UVSIM_STACK=mixed the two sides of
# a pair are on different stacks on one simulated host: UVSIM_MIX=server
# puts the server on ours and the client on Debian's, UVSIM_MIX=client the
# other way round (the stacks interoperate through the emulated wire).
#
# The test's environment (set by CMakeLists.txt):
#   UVSIM_RUN    build/bin/uverbs-sim-run
#   UVSIM_WORK   this test's own directory: the simulated host's run dir
#                (--dir), configs, captured outputs and traces
#   UVSIM_PORT   this test's own TCP port (the next three are its too)
#   UVSIM_TIMEOUT  seconds each program may run (default 30)
#
# Exit codes: 0 pass, 1 fail, 77 skip (a Debian program or libmlx5 is not
# installed).

set -u

: "${UVSIM_RUN:?UVSIM_RUN must name build/bin/uverbs-sim-run}"
: "${UVSIM_WORK:?UVSIM_WORK must name the directory of this test}"
PORT=${UVSIM_PORT:-24100}
LIMIT=${UVSIM_TIMEOUT:-30}
BIN=${UVSIM_REF_BIN:-/usr/bin}

# Debian's stack only: no build/lib, no other preloads.
unset LD_LIBRARY_PATH LD_PRELOAD RDMAV_DRIVERS IBV_CONFIG_DIR
unset UVERBS_SIM_CONFIG UVERBS_SIM_TRACE UVERBS_SIM_DEVICES UVERBS_SIM_LINK UVERBS_SIM_FAULTS UVERBS_SIM_DIR

STACK=${UVSIM_STACK:-debian}
OURS_LIB=${UVSIM_OURS_LIB:-}
case $STACK in
debian) ;;
ours | mixed) [ -d "$OURS_LIB" ] || { echo "FAIL: UVSIM_STACK=$STACK needs UVSIM_OURS_LIB (build/lib)"; exit 1; } ;;
*) echo "FAIL: UVSIM_STACK is debian, ours or mixed, not '$STACK'"; exit 1 ;;
esac
# The stack of each side of a pair.
SRV_STACK=$STACK CLI_STACK=$STACK
if [ "$STACK" = mixed ]; then
	case ${UVSIM_MIX:-} in
	server) SRV_STACK=ours CLI_STACK=debian ;;
	client) SRV_STACK=debian CLI_STACK=ours ;;
	*) echo "FAIL: UVSIM_STACK=mixed needs UVSIM_MIX=server or client"; exit 1 ;;
	esac
fi

W=$UVSIM_WORK
# Two ctest runs in one build tree (several people at work) would start the
# same test twice at once, sharing its run dir and TCP port: the second
# waits for the first.
mkdir -p "$(dirname "$W")" || exit 1
exec 9>"$W.lock"
if command -v flock >/dev/null 2>&1 && ! flock -w 100 9; then
	echo "FAIL: another run of this test holds $W.lock"
	exit 1
fi
rm -rf "$W"
mkdir -p "$W" || exit 1
CONFIG=""          # set by config(); empty = the emulator's default device
FAILED=0
MSGS=()            # why the test failed
SHOW=()            # outputs/traces to print on failure

# need PROG...: skip unless Debian's programs and mlx5 provider are present.
need() {
	local p
	for p in "$@"; do
		if [ ! -x "$BIN/$p" ]; then
			echo "SKIP: $BIN/$p is not installed (Debian packages ibverbs-utils, perftest)"
			exit 77
		fi
	done
	if ! ls /usr/lib/*/libibverbs/libmlx5-rdmav*.so >/dev/null 2>&1 &&
		! ls /usr/lib/libibverbs/libmlx5-rdmav*.so >/dev/null 2>&1; then
		echo "SKIP: Debian's libmlx5 provider (ibverbs-providers) is not installed"
		exit 77
	fi
	local lib
	if [ "$STACK" = ours ]; then
		lib=$(LD_LIBRARY_PATH=$OURS_LIB ldd "$BIN/$1" 2>/dev/null | awk '$1 == "libibverbs.so.1" { print $3 }')
		case $lib in
		"$OURS_LIB"/*) ;;
		*) echo "FAIL: $BIN/$1 would load libibverbs from '$lib', not $OURS_LIB"; exit 1 ;;
		esac
	else
		# Debian's libibverbs, not the project's (say, via ld.so.conf)
		lib=$(ldd "$BIN/$1" 2>/dev/null | awk '$1 == "libibverbs.so.1" { print $3 }')
		case $lib in
		/usr/lib/* | /lib/*) ;;
		*) echo "FAIL: $BIN/$1 would load libibverbs from '$lib', not Debian's"; exit 1 ;;
		esac
	fi
	if [ ! -x "$UVSIM_RUN" ]; then
		echo "FAIL: $UVSIM_RUN missing"
		exit 1
	fi
}

# config NAME < text: writes the emulator config NAME and makes it current.
config() {
	CONFIG=$W/$1.conf
	cat >"$CONFIG"
}

fail() {
	FAILED=1
	MSGS+=("$*")
	echo "FAIL: $*"
}

# sim TAG PROG ARGS...: runs one program on the simulated host, bounded,
# stdout in $W/TAG.out, stderr in $W/TAG.err, trace in $W/TAG.trace; sets RC.
sim() {
	local tag=$1
	shift
	local cfg=()
	[ -n "$CONFIG" ] && cfg=(--config "$CONFIG")
	echo "$*" >"$W/$tag.cmd"
	SHOW+=("$tag")
	local libs=()
	# On our stack the loader names every object it maps, into
	# $W/TAG.ld.PID (one file per process), for stack_check.
	[ "$STACK" = ours ] && libs=(env "LD_LIBRARY_PATH=$OURS_LIB" LD_DEBUG=libs "LD_DEBUG_OUTPUT=$W/$tag.ld")
	# (a mixed pair's Debian side is recorded too, for debian_check)
	[ "$STACK" = debian ] && [ "$SRV_STACK" != "$CLI_STACK" ] && libs=(env LD_DEBUG=libs "LD_DEBUG_OUTPUT=$W/$tag.ld")
	timeout -k 5 "$LIMIT" "${libs[@]}" "$UVSIM_RUN" "${cfg[@]}" --dir "$W/host" --trace "$W/$tag.trace" \
		"$BIN/$@" >"$W/$tag.out" 2>"$W/$tag.err"
	RC=$?
	[ "$STACK" = ours ] && [ "$RC" -eq 0 ] && [ -z "${SKIP_STACK_CHECK:-}" ] && stack_check "$tag" "$1"
	return 0
}

# stack_check TAG PROG: the loader's record of the run of TAG: PROG loaded
# our mlx5 provider, and no Debian libibverbs or provider plugin.
stack_check() {
	local tag=$1 prog=$2 inits foreign
	inits=$(cat "$W/$tag.ld".* 2>/dev/null | sed -n 's/.*calling init: //p')
	foreign=$(echo "$inits" | grep -E 'libibverbs\.so|librdmacm\.so|librspreload|libmlx5|-rdmav[0-9]+\.so' | sort -u |
		grep -v "^$OURS_LIB/" || true)
	echo "$inits" | grep -q "^$OURS_LIB/libmlx5" ||
		fail "stack check: $prog did not load $OURS_LIB's mlx5 provider"
	[ -z "$foreign" ] || fail "stack check: $prog loaded $(echo $foreign) besides $OURS_LIB"
}

# debian_check TAG: the loader's record of the run of TAG (a mixed pair's
# Debian side): Debian's mlx5 provider, nothing from OURS_LIB.
debian_check() {
	local inits
	inits=$(cat "$W/$1.ld".* 2>/dev/null | sed -n 's/.*calling init: //p')
	echo "$inits" | grep -Eq '^(/usr)?/lib/.*libmlx5' || fail "stack check: $1 did not load Debian's mlx5 provider"
	echo "$inits" | grep -q "^$OURS_LIB/" && fail "stack check: $1 loaded a library of $OURS_LIB"
	return 0
}

# listening PORT: true when something listens on TCP PORT (IPv4 or IPv6).
listening() {
	local hex
	hex=$(printf ':%04X' "$1")
	awk -v p="$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# pair TAG: runs the server command in SRV (an array) and, once it listens
# on TCP port $P (default $PORT), the client in CLI. Results: SRC, CRC.
# READY names another readiness check (a function given the port), as the
# rdma_cm programs listen on the emulated rdma_cm, not on TCP. With
# SRV_FOREVER set the server serves until stopped (cmtime's does): once
# the client is done it gets SIGTERM, which counts as a clean exit.
pair() {
	local tag=$1 p=${P:-$PORT} i pid
	SHOW+=("$tag.server")
	# (a subshell: its exit status carries the server's; its stack check
	# is made here, where a failure counts)
	(
		SKIP_STACK_CHECK=1
		STACK=$SRV_STACK
		sim "$tag.server" "${SRV[@]}"
		exit "$RC"
	) &
	pid=$!
	# the server listens before it touches the device on every program here
	for i in $(seq 1 200); do
		"${READY:-listening}" "$p" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	local stack=$STACK
	STACK=$CLI_STACK
	sim "$tag.client" "${CLI[@]}"
	STACK=$stack
	CRC=$RC
	# (the subshell's child is timeout(1), which hands SIGTERM on)
	[ -n "${SRV_FOREVER:-}" ] && pkill -TERM -P "$pid" timeout
	wait "$pid"
	SRC=$?
	[ -n "${SRV_FOREVER:-}" ] && [ "$SRC" -eq 143 ] && SRC=0
	# EXIT_RACE names a function that says whether a side's non-zero exit
	# is a known race of the program itself (given TAG.SIDE and the status)
	if [ -n "${EXIT_RACE:-}" ]; then
		[ "$SRC" -ne 0 ] && "$EXIT_RACE" "$tag.server" "$SRC" && SRC=0
		[ "$CRC" -ne 0 ] && "$EXIT_RACE" "$tag.client" "$CRC" && CRC=0
	fi
	[ "$SRV_STACK" = ours ] && [ "$SRC" -eq 0 ] && stack_check "$tag.server" "${SRV[0]}"
	# On a mixed pair the Debian side must not have loaded ours.
	if [ "$SRV_STACK" != "$CLI_STACK" ]; then
		local side
		for side in server client; do
			[ "$side" = server ] && [ "$SRV_STACK" = ours ] && continue
			[ "$side" = client ] && [ "$CLI_STACK" = ours ] && continue
			debian_check "$tag.$side"
		done
	fi
	if [ "$SRC" -ne 0 ] || [ "$CRC" -ne 0 ]; then
		fail "$tag: server exit $SRC, client exit $CRC (want 0 and 0)"
		return 1
	fi
	return 0
}

# expect FILE EXTENDED-REGEX [WHAT]: a line of FILE must match.
expect() {
	if ! grep -Eq -- "$2" "$1"; then
		fail "${3:-$(basename "$1")}: no line matching /$2/"
		return 1
	fi
}

# expect_not FILE EXTENDED-REGEX [WHAT]: no line of FILE may match.
expect_not() {
	if grep -Eq -- "$2" "$1"; then
		fail "${3:-$(basename "$1")}: unexpected line matching /$2/"
		return 1
	fi
}

# expect_text FILE: FILE must contain the exact lines given on stdin, in that
# order (other lines may come between them).
expect_text() {
	local file=$1 want line n=0
	want=$(cat)
	local rest
	rest=$(cat "$file")
	while IFS= read -r line; do
		n=$((n + 1))
		[ -z "$line" ] && continue
		# drop everything up to and including the first occurrence
		if ! printf '%s\n' "$rest" | grep -Fxq -- "$line"; then
			fail "$(basename "$file"): missing line $n of the expected text: '$line'"
			return 1
		fi
		rest=$(printf '%s\n' "$rest" | awk -v l="$line" 'f { print } !f && $0 == l { f = 1 }')
	done <<<"$want"
	return 0
}

# finish: on failure prints each run's command, outputs and trace tail.
finish() {
	if [ "$FAILED" -eq 0 ]; then
		echo "PASS"
		exit 0
	fi
	local t
	for t in "${SHOW[@]}"; do
		echo "======== $t: $(cat "$W/$t.cmd" 2>/dev/null)"
		echo "-------- stdout"
		cat "$W/$t.out" 2>/dev/null
		echo "-------- stderr"
		cat "$W/$t.err" 2>/dev/null
		if [ -s "$W/$t.trace" ]; then
			echo "-------- emulator trace (last 25 lines of $(wc -l <"$W/$t.trace"))"
			tail -n 25 "$W/$t.trace" | cut -c1-240
		fi
	done
	echo "======== failed:"
	printf '  %s\n' "${MSGS[@]}"
	exit 1
}
