# Reference solution of long-pipeline-delta: one shell command a line, run from the work dir.
cat README.txt
cat params.json
ls raw
head -n 4 raw/2023-11.csv
grep -n 'int(r\["units"\])' pipeline_delta.py
sed -i 's/rows.append((r\["item"\], int(r\["units"\])))/rows.append((r["item"], int(r["units"] or 0)))/' pipeline_delta.py
python3 pipeline_delta.py clean
wc -l work/clean.csv
python3 pipeline_delta.py aggregate
cat work/totals.csv
python3 pipeline_delta.py report --min 430 > report.txt
cat report.txt
