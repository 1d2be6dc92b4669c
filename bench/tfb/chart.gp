# bench/tfb/run's chart of one test type: median requests per second (left,
# log scale) and server CPU time per request (right, log scale), per
# scenario and server.
#
#   gnuplot -e "datafile='chart-db.dat'; outfile='tfb-db.png'; test='db'" bench/tfb/chart.gp
#
# chart.dat: a header "scenario SERVER... SERVER_cpu...", then one row per
# scenario: each server's requests per second, then each one's CPU µs per
# request, in the same order.

set terminal pngcairo size 1100,480 noenhanced font "sans,10"
set output outfile
stats datafile using 2 nooutput
# Columns after the scenario: n servers' req/s, then their CPU µs/req.
n = (STATS_columns - 1) / 2
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set logscale y
set key outside bottom center horizontal

set multiplot layout 1,2 title sprintf("TechEmpower's %s test, server on one core, wrk and PostgreSQL on the other", test)

set title "requests per second (higher is better)"
set format y "%.0s%c"
set ylabel "requests / s"
plot for [i=2:1+n] datafile using i:xtic(1) title columnheader(i)

set title "server CPU time per request (lower is better)"
set format y "%g"
set ylabel "µs / request"
plot for [i=2+n:1+2*n] datafile using i:xtic(1) title columnheader(i)

unset multiplot
