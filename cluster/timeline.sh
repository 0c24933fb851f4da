#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# timeline.sh FIFO.tl MERCURY.tl OUT.png MODEL: per-layer timeline of node 0, fifo above
# mercury, for the last two iterations: forward/backward compute, push written (the worker's
# write of the tensor into its socket), pull received (first to last byte of the layer).
set -euo pipefail
fifo=$1 merc=$2 out=$3 model=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Columns: start (s, from the forward pass of the second-to-last iteration), layer + offset,
# duration. Iteration numbers: the last one only has its forward pass.
extract() { # file prefix
	awk -v p="$tmp/$2" '
		!/^#/ { n++; it[n] = $2; k[n] = $3; l[n] = $4; a[n] = $5; b[n] = $6; if ($2 > m) m = $2 }
		END {
			for (i = 1; i <= n; i++) if (it[i] == m - 1 && k[i] == "f" && (!s || a[i] < s)) s = a[i]
			off["f"] = -0.3; off["b"] = -0.1; off["p"] = 0.1; off["l"] = 0.3
			for (i = 1; i <= n; i++) {
				if (it[i] < m - 2 || a[i] < s - 0.0001 && !(k[i] == "p" || k[i] == "l")) continue
				if (a[i] < s) continue
				printf "%.6f %.2f %.6f\n", a[i] - s, l[i] + 1 + off[k[i]], b[i] - a[i] > p "." k[i]
			}
		}' "$1"
	for k in f b p l; do [ -f "$tmp/$2.$k" ] || echo "0 1 0" >"$tmp/$2.$k"; done
}
extract "$fifo" fifo
extract "$merc" merc
cat >"$tmp/plot.gp" <<GP
set terminal pngcairo size 1400,1000 font ",10"
set output "$out"
set multiplot layout 2,1 title "$model: per-layer timeline of node 0 (last two iterations, emulated seconds)"
set xlabel "time since the forward pass of the second-to-last iteration (s)"
set ylabel "layer (1 = input side)"
set yrange [*:*] reverse
set key outside right
do for [m in "fifo merc"] {
	set title (m eq "fifo" ? "fifo" : "mercury")
	plot "$tmp/".m.".f" using 1:2:3:(0) with vectors nohead lw 3 lc rgb "#2e7d32" title "forward", \\
	     "$tmp/".m.".b" using 1:2:3:(0) with vectors nohead lw 3 lc rgb "#1565c0" title "backward", \\
	     "$tmp/".m.".p" using 1:2:3:(0) with vectors nohead lw 2 lc rgb "#ef6c00" title "push written", \\
	     "$tmp/".m.".l" using 1:2:3:(0) with vectors nohead lw 2 lc rgb "#c62828" title "pull received"
}
unset multiplot
GP
gnuplot "$tmp/plot.gp"
