# Reference solution of log-error-summary: one shell command a line, run from the work dir.
head -n 5 logs/app.log
cat logs/app.log.1 logs/app.log | awk '$2 == "[ERROR]" { sub(/:$/, "", $3); n[$3]++ } END { for (c in n) print c, n[c] }' | sort -k2,2nr -k1,1 > error_counts.txt
cat error_counts.txt
