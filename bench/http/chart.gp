# bench/http/run's chart: median requests per second (left) and server CPU
# time per request (right) of each server's GET /proxy.
#
#   gnuplot -e "datafile='chart.dat'; outfile='http.png'" bench/http/chart.gp
#
# chart.dat: one row per server: its label in double quotes, its requests
# per second and its CPU µs per request.

set terminal pngcairo size 1100,480 noenhanced font "sans,10"
set output outfile
set style fill solid 0.85 border -1
set boxwidth 0.7
set grid ytics
stats datafile using 2 nooutput
n = STATS_records
max_rps = STATS_max
stats datafile using 3 nooutput
max_cpu = STATS_max
set xrange [-0.6:n - 0.4]
set xtics rotate by -20
unset key

set multiplot layout 1,2 title "GET /proxy: one GET to a local upstream per request, 32 connections, server on one core, wrk and the upstream on the other"

set title "requests per second (higher is better)"
set format y "%.0s%c"
set ylabel "requests / s"
set yrange [0:max_rps * 1.12]
plot datafile using 0:2:($0 + 1):xtic(stringcolumn(1)) with boxes lc variable, \
  '' using 0:2:(sprintf("%.0f", $2)) with labels offset 0,0.7

set title "server CPU time per request (lower is better)"
set format y "%g"
set ylabel "µs / request"
set yrange [0:max_cpu * 1.12]
plot datafile using 0:3:($0 + 1):xtic(stringcolumn(1)) with boxes lc variable, \
  '' using 0:3:(sprintf("%.1f", $3)) with labels offset 0,0.7

unset multiplot
