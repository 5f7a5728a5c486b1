# Reference solution of grades-average: one shell command a line, run from the work dir.
head -n 5 grades.csv
python3 -c 'import csv; d = {}; [d.setdefault(r["course"], []).append(float(r["score"])) for r in csv.DictReader(open("grades.csv")) if r["score"].strip()]; open("course_stats.csv", "w").write("course,students,average\n" + "".join("%s,%d,%.1f\n" % (c, len(v), sum(v) / len(v)) for c, v in sorted(d.items())))'
cat course_stats.csv
