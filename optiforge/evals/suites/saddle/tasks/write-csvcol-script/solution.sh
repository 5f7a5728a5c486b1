# Reference solution of write-csvcol-script: one shell command a line, run from the work dir.
cat people.csv
printf '%s\n' 'import csv' 'import sys' '' 'with open(sys.argv[1], newline="") as f:' '    reader = csv.DictReader(f)' '    if sys.argv[2] not in (reader.fieldnames or []):' '        print(f"no column {sys.argv[2]!r}", file=sys.stderr)' '        sys.exit(2)' '    for row in reader:' '        print(row[sys.argv[2]])' > csvcol.py
python3 csvcol.py people.csv city > cities.txt
cat cities.txt
