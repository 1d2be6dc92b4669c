# Median requests per second by worker count, moonport and OpenResty.
#
#   gnuplot -e "datafile='workers.dat'; outfile='workers.png'" bench/workers/chart.gp
#
# workers.dat: a header "workers moonport OpenResty", then one row per
# worker count.

set terminal pngcairo size 900,500 noenhanced font "sans,10"
set output outfile
set title "GET /hello, 256 connections: median requests per second by workers (higher is better)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set format y "%.0s%c"
set ylabel "requests / s"
set xlabel "workers"
set grid ytics
set yrange [0:*]
set key outside right top vertical
set key autotitle columnhead

plot for [i=2:3] datafile using i:xtic(1) title columnhead(i)
