# Reference solution of normalize-whitespace: one shell command a line, run from the work dir.
find docs -type f -exec sh -c 'echo "== $1"; cat -A "$1"' sh {} \;
find docs -type f -name '*.txt' -exec python3 -c 'import sys; p = sys.argv[1]; t = open(p, newline="").read().replace("\r\n", "\n").replace("\t", "    "); open(p, "w", newline="").write("\n".join(x.rstrip() for x in t.split("\n")).rstrip("\n") + "\n")' {} \;
cat -A docs/intro.txt
