# bench/redis/run's chart: median requests per second (left) and server CPU
# time per request (right), moonport and OpenResty, per scenario.
#
#   gnuplot -e "datafile='chart.dat'; outfile='redis.png'" bench/redis/chart.gp
#
# chart.dat: a header "scenario moonport OpenResty moonport_cpu
# OpenResty_cpu", then one row per scenario.

set terminal pngcairo size 1100,480 noenhanced font "sans,10"
set output outfile
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set key outside bottom center horizontal
set key autotitle columnhead

set multiplot layout 1,2 title "Redis through lua-resty-redis, 32 connections, server on one core"

set title "requests per second (higher is better)"
set format y "%.0s%c"
set ylabel "requests / s"
plot datafile using 2:xtic(1) title "moonport", '' using 3 title "OpenResty"

set title "server CPU time per request (lower is better)"
set format y "%g"
set ylabel "µs / request"
plot datafile using 4:xtic(1) title "moonport", '' using 5 title "OpenResty"

unset multiplot
