#!/bin/bash
# check_files.sh BUILD: the udev rules and systemd units the build installs
# (kernel-boot/ and rdma-ndd/), checked by the tools that will read them.
# - udev: the rules alone are put in place of the system's (a private mount
#   namespace) and `udevadm test` runs them on the loopback interface; any
#   diagnostic udev prints about one of our files (an unknown key, a GOTO
#   without its LABEL, a bad operator) is a failure.
# - systemd: `systemd-analyze verify` on every unit (a template through an
#   instance of it).
set -u
build=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
DESTDIR=$d/root cmake --install "$build" >"$d/install.log" 2>&1 || { tail "$d/install.log"; exit 1; }
fail=0

rules=$(find "$d/root" -path '*/udev/rules.d/*.rules' | sort)
[ -n "$rules" ] || { echo "FAIL: no udev rules installed"; exit 1; }
if command -v udevadm >/dev/null && [ -e /sys/class/net/lo ] && unshare -m true 2>/dev/null; then
	mkdir "$d/rules"
	cp $rules "$d/rules/"
	unshare -m sh -c 'mount --bind "$1" /lib/udev/rules.d && udevadm test --action=add /sys/class/net/lo' \
		sh "$d/rules" >"$d/udev.log" 2>&1
	for r in $rules; do
		name=$(basename "$r")
		if ! grep -q "Reading rules file: .*/$name\$" "$d/udev.log"; then
			echo "FAIL: udev did not read $name"; fail=1
		elif grep -E "/$name:[0-9]+" "$d/udev.log"; then
			echo "FAIL: udev complains about $name"; fail=1
		else
			echo "ok: udev reads $name cleanly"
		fi
	done
else
	echo "note: no udevadm or no mount namespace here: rules not checked"
fi

units=$(find "$d/root" -path '*/systemd/system/*' -type f | sort)
[ -n "$units" ] || { echo "FAIL: no systemd units installed"; exit 1; }
if command -v systemd-analyze >/dev/null; then
	mkdir "$d/units"
	for u in $units; do
		name=$(basename "$u")
		# an instance of a template (rdma-load-modules@rdma.service)
		case $name in *@.*) inst=${name/@./@rdma.} ;; *) inst=$name ;; esac
		# the unit as installed, its programs resolved inside the DESTDIR
		# where we install them (ExecStart=/usr/local/sbin/rdma-ndd)
		sed "s|^ExecStart=\(/[^ ]*\)|ExecStart=$d/root\1|" "$u" >"$d/units/$inst"
		exe=$(sed -n 's|^ExecStart=\([^ ]*\).*|\1|p' "$d/units/$inst")
		if [ -n "$exe" ] && [ ! -x "$exe" ]; then
			# a system program (systemd-modules-load): use the real path
			cp "$u" "$d/units/$inst"
		fi
		if (cd "$d/units" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "./$inst") >"$d/verify.log" 2>&1 &&
			! grep -v -e 'Failed to read \$container' -e 'Found container' "$d/verify.log" | grep -q .; then
			echo "ok: systemd-analyze verify $name"
		else
			echo "FAIL: systemd-analyze verify $name"; sed 's/^/    /' "$d/verify.log"; fail=1
		fi
	done
else
	echo "note: no systemd-analyze here: units not checked"
fi
exit $fail
