# Writing the results: RESULTS.md (bench/lib/report.py), the CSV and the
# chart (bench/lib/chart.gp). Sourced.

# write_report OUT CSV PNG: everything is made in $WORK first and copied
# out at the end, so a failed run leaves the previous results whole.
write_report() {
  local out=$1 csv=$2 png=$3 stem ymin
  stem=$(basename "$png" .png)
  write_meta "$WORK/meta.tsv"
  "$PY" "$BENCH_DIR/lib/report.py" --work "$WORK" --csv "$CSV" --out "$WORK/report.md" \
    --csv-name "$(basename "$csv")" --png-name "$(basename "$png")" --servers "$(IFS=,; echo "${SERVERS[*]}")" \
    --scenarios "$(IFS=,; echo "${SCENARIOS[*]}")" || die "writing the report failed"
  # Log scale: the axis starts at the power of ten below the slowest bar.
  ymin=$(awk 'NR > 1 { for (i = 2; i <= NF; i++) if ($i != "-" && (m == "" || $i < m)) m = $i }
    END { print 10 ^ int(log(m) / log(10)) }' "$WORK/chart.dat")
  gnuplot -e "datafile='$WORK/chart.dat'; outfile='$WORK/$stem.png'; ymin=$ymin" \
    "$BENCH_DIR/lib/chart.gp" || die "gnuplot failed"
  cp "$WORK/report.md" "$out"
  cp "$CSV" "$csv"
  cp "$WORK/$stem.png" "$png"
}
