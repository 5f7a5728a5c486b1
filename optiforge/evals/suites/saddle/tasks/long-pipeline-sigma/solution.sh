# Reference solution of long-pipeline-sigma: one shell command a line, run from the work dir.
cat README.txt
cat params.json
ls raw
head -n 4 raw/2022-06.csv
grep -n 'int(r\["units"\])' pipeline_sigma.py
sed -i 's/rows.append((r\["item"\], int(r\["units"\])))/rows.append((r["item"], int(r["units"] or 0)))/' pipeline_sigma.py
python3 pipeline_sigma.py clean
wc -l work/clean.csv
python3 pipeline_sigma.py aggregate
cat work/totals.csv
python3 pipeline_sigma.py report --min 120 > report.txt
cat report.txt
