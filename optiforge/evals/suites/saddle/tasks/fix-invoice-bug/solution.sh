# Reference solution of fix-invoice-bug: one shell command a line, run from the work dir.
python3 invoice.py orders.csv
sed -i 's/for row in rows\[1:\]:/for row in rows:/' invoice.py
sed -i 's/int(row\["unit_price"\])/float(row["unit_price"])/' invoice.py
python3 invoice.py orders.csv > invoice.txt
cat invoice.txt
