# Shared part of the obsolete ibcheck*/ibclear*/ibdatacount* scripts
# (ENABLE_IBDIAGS_COMPAT), pasted into each by CMake (@COMPAT_LIB@). The
# scripts are bash programs, as they always were: "echo" prints "\n"
# literally, "/usr/bin/echo -e" expands it, exactly where the old scripts
# did.

IBPATH=${IBPATH:-@IBSCRIPTPATH@}

# usage text in $usage_text, printed by compat_usage
compat_usage() {
	echo Usage: "$(basename "$0")" "$usage_text"
	exit 255
}

# the value of -C/-P/-t: present and not an option
compat_value() {
	case "$1" in
	-*|"") compat_usage ;;
	esac
}

# OK in green, only with -v (plain with -N)
green() {
	[ "$verbose" = yes ] || return 0
	if [ "$bw" = yes ]; then
		echo $1
	else
		echo -e "\\033[1;032m" $1 "\\033[0;39m"
	fi
}

# FAILED in red (plain with -N)
red() {
	if [ "$bw" = yes ]; then
		echo $1
	else
		echo -e "\\033[1;031m" $1 "\\033[0;39m"
	fi
}

# compat_resolve ADDRESS: sets lid (and guid with -G) or fails the script
# like the old ones: "<lid|guid> X address resolution: FAILED", 255.
compat_resolve() {
	if [ "$guid_addr" ]; then
		if ! lid=$($IBPATH/ibaddr $ca_info -G -L $1 | awk '/failed/ {exit 255} {print $3}'); then
			echo -n "guid $1 address resolution: "
			red FAILED
			exit 255
		fi
		guid=$1
	else
		lid=$1
		if ! $IBPATH/ibaddr $ca_info -L $1 | awk '/failed/ {exit 255} {print $1}' > /dev/null; then
			echo -n "lid $1 address resolution: "
			red FAILED
			exit 255
		fi
	fi
}

# The awk helper that prints the collected #error/#warn text in blue (plain
# with mono, nothing with brief=yes); the text is used as printf's format,
# as it always was.
compat_awk_blue='
function blue(s) {
	if (brief == "yes")
		return
	if (mono)
		printf s
	else {
		printf "\033[1;034m" s
		printf "\033[0;39m"
	}
}
/^ib/ { print $0; next }
/ibpanic:/ { print $0 }
/ibwarn:/ { print $0 }
/iberror:/ { print $0 }
END {
	if (err != "") { blue(err); exit 255 }
	if (warn != "") { blue(warn); exit 255 }
	exit 0
}'

# compat_walk MODE: for the subnet-wide scripts. Reads a topology (the
# file given, or ibnetdiscover's) and runs the per-node scripts on every
# node and port; MODE picks which and the summary. Exits like the old
# scripts (see each).
compat_walk() {
	local mode=$1
	trap 'echo "Aborted"; exit 1' INT
	local source_cmd
	if [ "$topofile" ]; then
		source_cmd="cat $topofile"
	else
		source_cmd="$IBPATH/ibnetdiscover $ca_info"
	fi
	local topo_text
	topo_text=$(eval $source_cmd)
	local status=$?
	echo "$topo_text" | awk -v mode="$mode" -v ibpath="$IBPATH" \
	    -v ca_info="$ca_info" -v gflags="$gflags" -v verbose="$verbose" \
	    -v brief="$brief" -v v="$v" '
	function run(tool, args) {
		return system(ibpath "/" tool " -S " ca_info " " gflags " " verbose " " args)
	}
	function perfquery(args) {
		return system(ibpath "/perfquery" ca_info " " gflags " " args)
	}
	# ibchecknode, then (errors/net/data modes) the counters of lid:port
	function node_and_counters(lid, port,   tool) {
		if (run("ibchecknode", lid)) {
			ne++
			print "\n# " ntype ": nodeguid 0x" nodeguid " failed"
			return 1
		}
		if (mode == "data")
			return run("ibdatacounts", brief " " lid " " port)
		if (run("ibcheckerrs", brief " " lid " " port))
			return 2
		return 0
	}
	function node_only(lid) {
		checked = 1
		if (run("ibchecknode", lid)) {
			ne++
			bad = 1
		}
	}
	# the number after "<key>" on the line
	function lid_after(key,   s) {
		s = substr($0, index($0, key) + length(key))
		return substr(s, 1, index(s, " ") - 1)
	}
	BEGIN { ne = 0; pe = 0 }

	/^Ca/ || /^Switch/ || /^Rt/ {
		nnodes++
		ntype = $1; nodeguid = substr($3, 4, 16)
		if (v || (mode == "net" && ntype != "Switch"))
			if (mode != "clear" && mode != "clearerr")
				print "\n# Checking " ntype ": nodeguid 0x" nodeguid
		err = 0; checked = 0; bad = 0
		if (ntype != "Switch")
			next
		lid = lid_after("port 0 lid ")
		if (mode == "clear") {
			if (perfquery("-R -a " lid))
				nodeerr++
		} else if (mode == "clearerr") {
			if (perfquery("-R -a " lid " 255 0x0fff"))
				nodeerr++
		} else if (mode == "state" || mode == "width") {
			node_only(lid)
		} else {
			err = node_and_counters(lid, 255)
		}
	}
	/^\[/ {
		if (mode != "clear" && mode != "clearerr")
			nports++
		port = $1
		if (mode == "state" || mode == "width") {
			if (!checked) {
				lid = lid_after(" lid ")
				node_only(lid)
			}
			if (bad) {
				print "\n# " ntype ": nodeguid 0x" nodeguid " failed"
				next
			}
		}
		sub("\\(.*\\)", "", port)
		gsub("[\\[\\]]", "", port)
		if (mode == "clear" || mode == "clearerr") {
			if (ntype != "Switch") {
				lid = lid_after(" lid ")
				if (perfquery("-R " lid " " port (mode == "clearerr" ? " 0x0fff" : "")))
					nodeerr++
			}
		} else if (mode == "state" || mode == "width") {
			if (run(mode == "state" ? "ibcheckportstate" : "ibcheckportwidth", lid " " port)) {
				if (!v && oldlid != lid) {
					print "# Checked " ntype ": nodeguid 0x" nodeguid " with failure"
					oldlid = lid
				}
				pe++
			}
		} else {
			if (ntype != "Switch") {
				lid = lid_after(" lid ")
				if (node_and_counters(lid, port) == 2 && mode != "data")
					pcnterr++
			} else if (err) {
				if (mode == "data")
					run("ibdatacounts", brief " " lid " " port)
				else if (run("ibcheckerrs", brief " " lid " " port))
					pcnterr++
			}
			if (mode == "net" && run("ibcheckport", lid " " port)) {
				if (!v && oldlid != lid) {
					print "# Checked " ntype ": nodeguid 0x" nodeguid " with failure"
					oldlid = lid
				}
				pe++
			}
		}
	}
	/^ib/ { print $0; next }
	/ibpanic:/ { print $0 }
	/ibwarn:/ { print $0 }
	/iberror:/ { print $0 }
	END {
		if (mode == "errors") {
			printf "\n*** WARNING ***: this command is deprecated; Please use \"ibqueryerrors\""
			printf "\n## Summary: %d nodes checked, %d bad nodes found\n", nnodes, ne
			printf "##          %d ports checked, %d ports have errors beyond threshold\n", nports, pcnterr
			exit ne + pcnterr
		}
		if (mode == "net") {
			printf "\n*** WARNING ***: this command is deprecated; Please use \"ibqueryerrors -f\""
			printf "\n## Summary: %d nodes checked, %d bad nodes found\n", nnodes, ne
			printf "##          %d ports checked, %d bad ports found\n", nports, pe
			printf "##          %d ports have errors beyond threshold\n", pcnterr
			exit ne + pe + pcnterr
		}
		if (mode == "state" || mode == "width") {
			printf "\n*** WARNING ***: this command is deprecated\n"
			printf "\n## Summary: %d nodes checked, %d bad nodes found\n", nnodes, ne
			if (mode == "state")
				printf "##          %d ports checked, %d ports with bad state found\n", nports, pe
			else
				printf "##          %d ports checked, %d ports with 1x width in error found\n", nports, pe
			exit 0
		}
		if (mode == "data") {
			printf "*** WARNING ***: this command is deprecated; Please use \"ibqueryerrors --counters\n"
			printf "\n## Summary: %d nodes checked, %d bad nodes found\n", nnodes, ne
			printf "##          %d ports checked\n", nports
			exit ne
		}
		printf "\n*** WARNING ***: this command is deprecated; Please use \"ibqueryerrors %s\"\n", mode == "clear" ? "-K" : "-k"
		printf "\n## Summary: %d nodes cleared %d errors\n", nnodes, nodeerr
	}'
	walk_status=$?
	return $status
}
