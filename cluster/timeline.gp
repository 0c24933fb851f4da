# Per-layer timeline of node 0, fifo above mercury: forward/backward compute, push written,
# pull received, for the last two iterations. Variables: fifo, merc, out, model.
set terminal pngcairo size 1400,900 font ",10"
set output out
set multiplot layout 2,1 title sprintf("%s: per-layer timeline of node 0 (last two iterations)", model)
set xlabel "emulated time (s)"
set ylabel "layer (1 = input side)"
set key outside right
set yrange [*:*] reverse
last(f) = real(system(sprintf("awk '!/^#/ && $2 > m { m = $2 } END { print m }' %s", f)))
do for [i = 1:2] {
	file = (i == 1) ? fifo : merc
	m = last(file)
	t0 = real(system(sprintf("awk '!/^#/ && $2 == %d && $3 == \"f\" { if (!s || $5 < s) s = $5 } END { print s }' %s", m - 1, file)))
	set title (i == 1) ? "fifo" : "mercury"
	plot file using ($2 >= m - 1 && $3 eq "f" ? $5 - t0 : 1/0):($4 + 1 - 0.3):($6 - $5):(0) with vectors nohead lw 4 lc rgb "#2e7d32" title "forward", \
	     file using ($2 >= m - 2 && $3 eq "b" ? $5 - t0 : 1/0):($4 + 1 - 0.1):($6 - $5):(0) with vectors nohead lw 4 lc rgb "#1565c0" title "backward", \
	     file using ($2 >= m - 2 && $3 eq "p" ? $5 - t0 : 1/0):($4 + 1 + 0.1):($6 - $5):(0) with vectors nohead lw 2 lc rgb "#ef6c00" title "push written", \
	     file using ($2 >= m - 2 && $3 eq "l" ? $5 - t0 : 1/0):($4 + 1 + 0.3):($6 - $5):(0) with vectors nohead lw 2 lc rgb "#c62828" title "pull received"
}
unset multiplot
