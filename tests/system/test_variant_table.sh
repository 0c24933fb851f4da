#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The side-by-side table of cluster/dscp_settings.sh and cluster/ecn.sh (cluster/variant_table.jq):
# a column per label in the order given, each cell the median of the label's successful runs
# with their range and every run's retransmissions/timeouts (and CE packets where asked); a
# label without a successful run is "-"; the ideal bound beside the model.
. "$(dirname "$0")/checks.sh"

run() { # label iter_s ok retrans timeouts ce
	printf '{"label":"%s","model":"vgg16","ok":%s,"iter_s":%s,"retrans_segs":%s,"timeouts":%s,"ce_received":%s}\n' \
		"$1" "$3" "$2" "$4" "$5" "$6"
}
in=$dir/results.jsonl
{
	echo '{"label":"ideal","model":"vgg16","iter_s":2.177}'
	run fifo 2.9 true 100 1 0
	run mercury-ecn 2.3 true 7 0 50
	run fifo 2.7 true 90 0 0
	run mercury-ecn 2.2 true 8 0 60
	run fifo 2.8 true 80 0 0
	run mercury-ecn 9.9 false 0 0 0
} >"$in"
table() { jq -rs --arg labels "$1" --arg ce "$2" --arg heading "H" -f "$root/cluster/variant_table.jq" "$in"; }

out=$(table "mercury-ecn fifo partition" 1)
check "the heading, then a column per label in the order given" \
	"[ \"\$(sed -n 1,2p <<<\"\$out\")\" = \$'H\n| model (ideal) | mercury-ecn | fifo | partition |' ]"
row=$(sed -n 4p <<<"$out")
check "the model's row names its ideal bound (${row:0:20})" "[[ \$row == '| vgg16 (2.177) | '* ]]"
check "median, range and per-run figures of the successful runs only" \
	"[[ \$row == *'| 2.25 (2.2-2.3) [7/0/50, 8/0/60] |'* ]]"
check "an odd count's median is the middle run" "[[ \$row == *'| 2.8 (2.7-2.9) [100/1/0, 90/0/0, 80/0/0] |'* ]]"
check "a label with no successful run is -" "[[ \$row == *'| - |' ]]"
row=$(table "fifo" 0 | sed -n 4p)
check "without --arg ce 1 the runs show retransmissions/timeouts only" \
	"[ \"\$row\" = '| vgg16 (2.177) | 2.8 (2.7-2.9) [100/1, 90/0, 80/0] |' ]"
# dscp_settings.sh's variants on FIFO ports are checked before anything is set up
said=$("$root/cluster/dscp_settings.sh" --fifo-variant "no-args" 2>&1; echo "rc=$?")
check "dscp_settings.sh --fifo-variant wants LABEL:ARGS" \
	"[[ \$said == *\"bad FIFO variant 'no-args': LABEL:ARGS\"* && \$said == *rc=2 ]]"
checks_done
