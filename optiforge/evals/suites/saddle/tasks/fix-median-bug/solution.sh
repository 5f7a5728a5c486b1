# Reference solution of fix-median-bug: one shell command a line, run from the work dir.
python3 stats.py data.txt
sed -i 's/for line in f if line.strip()\]/for line in f if line.strip() and not line.lstrip().startswith("#")]/' stats.py
sed -i 's/return max(ordered\[mid - 1\], ordered\[mid\])/return (ordered[mid - 1] + ordered[mid]) \/ 2/' stats.py
python3 stats.py data.txt > stats.txt
cat stats.txt
