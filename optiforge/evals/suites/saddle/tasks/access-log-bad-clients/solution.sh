# Reference solution of access-log-bad-clients: one shell command a line, run from the work dir.
head -n 3 access.log
awk '$9 >= 400 && $9 <= 599 { n[$1]++ } END { for (ip in n) print ip, n[ip] }' access.log | sort -k2,2nr -k1,1 | head -n 3 > bad_clients.txt
cat bad_clients.txt
