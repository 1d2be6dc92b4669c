# The soak's chart: RSS and open files of every moonport process over time,
# and failed requests per minute by cause.
#
#   gnuplot -e "csv='soak.csv'; minutes='soak-minutes.dat'; outfile='soak.png'" bench/soak/chart.gp
#
# soak.csv: bench/soak/report.py's, one row per 10 s sample with a header;
# soak-minutes.dat: "minute killed upstream unexplained" per row, one a minute.

set terminal pngcairo size 1000,1100 noenhanced font "sans,10"
set output outfile
set datafile separator ","
set multiplot layout 3,1 title "moonport soak with faults"
set grid
set key outside right top vertical
set xlabel "seconds"

set title "RSS (worker 1 is killed every 30 s; worker 2 never is)"
set ylabel "MiB"
plot csv using "t_s":(column("master_rss_kb")/1024) with linespoints pt 7 ps 0.5 title "master", \
     csv using "t_s":(column("worker1_rss_kb")/1024) with linespoints pt 7 ps 0.5 title "worker 1", \
     csv using "t_s":(column("worker2_rss_kb")/1024) with linespoints pt 7 ps 0.5 title "worker 2", \
     csv using "t_s":(column("upstream_rss_kb")/1024) with linespoints pt 7 ps 0.5 title "upstream master", \
     csv using "t_s":(column("upstream-worker_rss_kb")/1024) with linespoints pt 7 ps 0.5 title "upstream worker"

set title "open files (/proc/PID/fd), under load"
set ylabel "fds"
plot csv using "t_s":"master_fds" with linespoints pt 7 ps 0.5 title "master", \
     csv using "t_s":"worker1_fds" with linespoints pt 7 ps 0.5 title "worker 1", \
     csv using "t_s":"worker2_fds" with linespoints pt 7 ps 0.5 title "worker 2", \
     csv using "t_s":"conn_close_wait" with linespoints pt 7 ps 0.5 title "CLOSE-WAIT on the port"

set title "failed requests per minute, by cause"
set datafile separator whitespace
set xlabel "minute"
set ylabel "requests"
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.8
plot minutes using 2:xtic(1) lc rgb "#7f7f7f" title "in flight on a killed worker", \
     '' using 3 lc rgb "#e69f00" title "/upstream 502 while the upstream restarted", \
     '' using 4 lc rgb "#d62728" title "unexplained"
unset multiplot
