# Clustered bars of median requests per second: one cluster per scenario,
# one bar per server, log scale (the servers span two orders of magnitude).
#
#   gnuplot -e "datafile='chart.dat'; outfile='results.png'; ymin=1000" bench/lib/chart.gp
#
# chart.dat: a header "scenario SERVER..." then one row per scenario; "-"
# where a server was not measured.

set terminal pngcairo size 1200,650 noenhanced font "sans,10"
set output outfile
set datafile missing "-"
set title "moonport and peers: median requests per second (one core each; higher is better)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set format y "%.0s%c"
set ylabel "requests / s (log scale)"
set grid ytics
set key outside right top vertical
set xtics nomirror
set yrange [ymin:*]
set key autotitle columnhead

plot for [i=2:*] datafile using i:xtic(1) title columnhead(i)
