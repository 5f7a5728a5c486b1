# Reference solution of auth-failures: one shell command a line, run from the work dir.
grep 'Failed password' auth.log | head -n 5
grep 'Failed password for' auth.log | awk '{ print $(NF-3) }' | sort | uniq -c | awk '$1 >= 3 { print $2, $1 }' | sort -k2,2nr -k1,1 > blocked_ips.txt
cat blocked_ips.txt
