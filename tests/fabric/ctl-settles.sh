#!/bin/bash
# Runs inside fabric-run --sm: opensm sweeps only on traps (no periodic
# sweep), and fabric-ctl returns only once the sweep that an Unlink's trap
# starts has finished (the SM has dropped the port and reprogrammed the
# switches).
set -eu
args=$(tr '\0' ' ' <"/proc/$(cat "$FABRIC_DIR/opensm.pid")/cmdline")
case "$args" in
*" -s 0 "*) ;;
*) echo "FAIL: opensm runs with periodic sweeps: $args"; exit 1;;
esac
log=$FABRIC_DIR/opensm.log
fabric-ctl 'Unlink "Switch1"[2]'
grep -q "drop_mgr_remove_port: .*node:Hca3" "$log" ||
    { echo "FAIL: fabric-ctl returned before the SM dropped Hca3"; tail "$log"; exit 1; }
# The sweep ends by reprogramming the switches (and, mostly, SUBNET UP).
sed -n '/drop_mgr_remove_port: .*node:Hca3/,$p' "$log" | grep -q "minhop tables configured\|SUBNET UP" ||
    { echo "FAIL: fabric-ctl returned before the SM's sweep ended"; tail "$log"; exit 1; }
echo "ok: fabric-ctl waited for the sweep"
