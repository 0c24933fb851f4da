# SPDX-License-Identifier: BSD-2-Clause
# One Markdown table of side-by-side variants (cluster/dscp_settings.sh, cluster/ecn.sh), read
# with jq -rs from a results.jsonl: a row per model with its ideal bound, a column per label
# of $labels (space-separated), each cell the median s an iteration of the label's successful
# runs, their range, and per run "retransmitted segments/timeouts" (and "/CE packets
# received" where $ce is "1"). $heading: the line above the table.
def med: sort | if length % 2 == 1 then .[length / 2 | floor]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def f3: . * 1000 | round / 1000 | tostring;
def per_run: "\(.retrans_segs)/\(.timeouts)" + (if $ce == "1" then "/\(.ce_received)" else "" end);
($labels | split(" ")) as $ls
| $heading,
  "| model (ideal) | " + ($ls | join(" | ")) + " |",
  "|---|" + ($ls | map("---|") | join("")),
  (group_by(.model)[] as $m
   | ($m | map(select(.label == "ideal"))[0].iter_s) as $ideal
   | "| \($m[0].model) (\($ideal | f3)) | " +
     ([$ls[] as $l | $m | map(select(.label == $l and .ok))
       | if length == 0 then "-" else
         "\(map(.iter_s) | med | f3) (\(map(.iter_s) | min | f3)-\(map(.iter_s) | max | f3)) " +
         "[\(map(per_run) | join(", "))]" end] | join(" | ")) + " |")
