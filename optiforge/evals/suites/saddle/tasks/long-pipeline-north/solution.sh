# Reference solution of long-pipeline-north: one shell command a line, run from the work dir.
cat README.txt
cat params.json
ls raw
head -n 4 raw/2024-02.csv
grep -n 'int(r\["units"\])' pipeline_north.py
sed -i 's/rows.append((r\["item"\], int(r\["units"\])))/rows.append((r["item"], int(r["units"] or 0)))/' pipeline_north.py
python3 pipeline_north.py clean
wc -l work/clean.csv
python3 pipeline_north.py aggregate
cat work/totals.csv
python3 pipeline_north.py report --min 390 > report.txt
cat report.txt
