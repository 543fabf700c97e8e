#!/bin/bash
# trace.sh: the provider-level trace of Debian's ibv_rc_pingpong -n 3 -r 1
# (Debian's libibverbs + libmlx5) shows the mlx5 WQEs the model consumed and
# the CQE64s it wrote, and each line agrees with itself and with the run:
#  - WQE lines: a SEND (opcode 0x0a) whose control segment carries
#    opmod_idx_opcode = idx << 8 | 0x0a and qpn_ds = qpn << 8 | ds, fm_ce_se
#    with CQ_UPDATE (0x08) as the pingpong signals every send, and one data
#    segment: byte_count = -s, lkey = the registered MR's key, addr inside it;
#  - CQE lines: op 0 (requester) for the sends, op 2 (responder send) for
#    the receives, byte_cnt 4096, sop_drop_qpn with the QP number, op_own =
#    op << 4 | owner, where the owner bit is the ring pass: -r 1 asks for a
#    2-entry CQ, which libmlx5 makes 4 entries, and 3 iterations write 6
#    CQEs per side, so the ring wraps and the owner bit flips to 1.
# See tests/uverbs-sim/doc/trace-example.md for an annotated excerpt.
. "$(dirname "$0")/lib.sh"

need ibv_rc_pingpong
SRV=(ibv_rc_pingpong -g 0 -n 3 -r 1 -p "$PORT")
CLI=(ibv_rc_pingpong -g 0 -n 3 -r 1 -p "$PORT" localhost)
if pair pp; then
	for side in server client; do
		f=$W/pp.$side.out
		expect "$f" "^24576 bytes in [0-9.]+ seconds" "$side byte count (4096 x 3 x 2)"
		t=$W/pp.$side.trace
		# the checks, one awk pass; prints "bad: ..." per problem and a summary
		awk -v side="$side" '
		# POSIX awk (mawk too): no strtonum, no bit functions
		function h(s,   i, v) {
			s = tolower(s); v = 0
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		/ reg_mr / {
			for (i = 1; i <= NF; i++) {
				if ($i == "reg_mr") { split($(i + 1), part, "+"); mr_addr = h(substr(part[1], 3)); mr_len = part[2] + 0 }
				if ($i == "key") mr_key = $(i + 1)
			}
		}
		/ create_cq / { for (i = 1; i <= NF; i++) if ($i == "entries") entries = $(i + 1) + 0 }
		/ WQE qpn / {
			nwqe++
			for (i = 1; i <= NF; i++) {
				if ($i == "qpn") qpn = h(substr($(i + 1), 3))
				if ($i == "idx") idx = $(i + 1) + 0
				if ($i == "ds") ds = $(i + 1) + 0
				if ($i == "opcode") opc = $(i + 1)
				if ($i ~ /:$/ && $i != "") start = i + 1
			}
			if (opc != "0x0a") print "bad: WQE opcode " opc ", want 0x0a (SEND): " $0
			if (h($start) != idx * 256 + 10) print "bad: WQE opmod_idx_opcode " $start " for idx " idx
			if (h($(start + 1)) != qpn * 256 + ds) print "bad: WQE qpn_ds " $(start + 1) " for qpn/ds"
			if (int(h($(start + 2)) / 8) % 2 != 1) print "bad: WQE fm_ce_se lacks CQ_UPDATE: " $(start + 2)
			if (ds != 2) print "bad: WQE ds " ds ", want 2 (control + one data segment)"
			if (h($(start + 4)) != 4096) print "bad: data segment byte_count " $(start + 4)
			if (h($(start + 5)) != h(substr(mr_key, 3))) print "bad: data segment lkey " $(start + 5) ", MR key " mr_key
			addr = h($(start + 6)) * 4294967296 + h($(start + 7))
			if (addr < mr_addr || addr + 4096 > mr_addr + mr_len) print "bad: data segment addr outside the MR"
		}
		/ CQE cq / {
			ncqe++
			for (i = 1; i <= NF; i++) {
				if ($i == "op") op = $(i + 1) + 0
				if ($i == "byte_cnt") bc = $(i + 1) + 0
				if ($i == "qpn") cqpn = $(i + 1)
				if ($i ~ /:$/) start = i + 1
			}
			if (op == 0) nreq++; else if (op == 2) nresp++; else print "bad: CQE op " op
			if (bc != 4096) print "bad: CQE byte_cnt " bc
			opown = h($(start + 15)) % 256
			if (int(opown / 16) != op) print "bad: op_own " sprintf("0x%02x", opown) " vs op " op
			want = int((ncqe - 1) / entries) % 2
			if (opown % 2 != want) print "bad: owner bit " opown % 2 " on CQE " ncqe ", want " want
			if (opown % 2) flipped++
			if (sprintf("0x%x", h($(start + 14)) % 16777216) != cqpn) print "bad: sop_drop_qpn " $(start + 14) " vs qpn " cqpn
			if (h($(start + 11)) != 4096) print "bad: CQE byte_cnt word " $(start + 11)
		}
		END {
			if (entries != 4) print "bad: CQ of " entries " entries, want 4 (-r 1: 2 CQEs, rounded up)"
			if (nwqe != 3) print "bad: " nwqe " WQE lines, want 3"
			if (nreq != 3 || nresp != 3) print "bad: " nreq " requester and " nresp " responder CQEs, want 3 and 3"
			if (!flipped) print "bad: the owner bit never flipped"
			printf "%s: %d WQEs, %d CQEs (%d req, %d resp), %d after the wrap\n", side, nwqe, ncqe, nreq, nresp, flipped
		}' "$t" >"$W/check.$side" 2>&1
		cat "$W/check.$side"
		if grep -q '^bad:' "$W/check.$side" || ! grep -q ' WQEs, ' "$W/check.$side"; then
			fail "$side trace: $(grep -c '^bad:' "$W/check.$side") problems (above)"
		fi
	done
fi
finish
